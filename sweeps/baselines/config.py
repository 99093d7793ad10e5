"""A baseline's config: what the shared runner (``sweeps/harness/runner.py``) asks of an
algorithm config, for a trial that is not RLlib's.

The runner takes an RLlib ``AlgorithmConfig`` from a sweep file, and of it uses: ``algo_class``
(the Tune trainable), ``env``/``env_config``, ``to_dict()`` (the param space and the run
record's ``base_config``), ``validate()``, ``reporting(min_time_s_per_iteration=...)``, the
``--set`` overrides (``update_from_dict``, ``has_setting``) and the confirmed target
(``confirm``). ``BaselineConfig`` has those and nothing else; RLlib's resource settings (GPU
learner, env runners, placement) are not a baseline's, and the runner leaves them out for it
(``is_rllib``). One trial is one CPU bundle.
"""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

from sweeps.baselines.hyperparams import Recipe, check

# What a baseline's trial takes besides its hyperparameters (BaselineTrainable.setup).
RUN_SETTINGS = ("iteration_s", "eval_interval", "eval_episodes", "eval_share")


class BaselineConfig:
    """A baseline's trial settings: its recipe (``hyperparams.Recipe``), env and run settings."""

    num_env_runners = 0  # one process: what the plan and the CPU accounting read
    num_learners = 0
    num_aggregator_actors_per_learner = 0

    def __init__(
        self, recipe: Recipe, env: str, env_config: dict[str, Any], **settings: Any
    ) -> None:
        from sweeps.baselines.trainable import BaselineTrainable

        self.algo_class = BaselineTrainable
        self.recipe = recipe
        self.env = env
        self.env_config = dict(env_config)
        self.settings = {
            "iteration_s": 1.0,
            "eval_interval": 1,
            "eval_episodes": 5,
            "eval_share": 0.0,  # (no cap)
            "action_mask": None,  # [start, stop): the mask's slice of the observation
            **settings,
        }
        self.seed = 0
        self.confirm: dict[str, Any] | None = None

    # --- what the runner calls ----------------------------------------------------------------

    def has_setting(self, key: str) -> bool:
        """``--set key=value``: a hyperparameter of the recipe (as the zoo spells it), or one
        SB3's constructor takes."""
        import inspect

        from sweeps.baselines.policy import model_class

        taken = inspect.signature(model_class(self.recipe.model_class).__init__).parameters
        return key in self.recipe.hyperparams or key in taken or key in ("n_envs", "n_timesteps")

    def update_from_dict(self, values: dict[str, Any]) -> BaselineConfig:
        """``--set`` overrides of the recipe's hyperparameters (null removes one)."""
        hyperparams = dict(self.recipe.hyperparams)
        for key, value in values.items():
            if value is None:
                hyperparams.pop(key, None)
            else:
                hyperparams[key] = value
        self.recipe = Recipe(
            self.recipe.algo,
            self.recipe.model_class,
            hyperparams,
            self.recipe.source + " (with --set)",
        )
        return self

    def reporting(
        self,
        min_time_s_per_iteration: float | None = None,
        min_sample_timesteps_per_iteration: int | None = None,
        **_: Any,
    ) -> BaselineConfig:
        if min_time_s_per_iteration is not None:
            self.settings["iteration_s"] = float(min_time_s_per_iteration)
        return self

    def with_confirmation(self, spec: Any) -> BaselineConfig:
        """The trial's confirmed target (``sweeps/harness/confirm.py``); None: the first
        crossing counts."""
        self.confirm = None if spec is None else asdict(spec)
        return self

    def validate(self) -> None:
        """A ValueError (one line) for hyperparameters the runner cannot carry out or the
        algorithm does not take."""
        from sweeps.baselines.hyperparams import RUN_KEYS

        check(self.recipe.hyperparams)
        unknown = [
            k for k in self.recipe.hyperparams if k not in RUN_KEYS and not self.has_setting(k)
        ]
        if unknown:
            raise ValueError(f"{self.recipe.model_class} takes no {', '.join(map(repr, unknown))}")

    def to_dict(self) -> dict[str, Any]:
        """The trial's param space (what ``BaselineTrainable.setup`` reads) and the run
        record's ``base_config``."""
        return {
            "algo": self.recipe.algo,
            "model_class": self.recipe.model_class,
            "hyperparams": copy.deepcopy(self.recipe.hyperparams),
            "hyperparams_source": self.recipe.source,
            "env": self.env,
            "env_config": dict(self.env_config),
            "seed": self.seed,
            "num_env_runners": 0,  # one process (the analysis's runner count)
            "confirm": self.confirm,
            **self.settings,
        }


def is_rllib(config: Any) -> bool:
    """Whether ``config`` is RLlib's (a baseline's is not: no resources, callbacks or modules)."""
    return not isinstance(config, BaselineConfig)

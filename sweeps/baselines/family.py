"""The baselines' sweeps: ``sweeps/sb3_<algo>_<env>.py`` is ``sweep("sb3-<algo>", WORKLOAD)``.

A baseline sweep takes the shared runner's flags, run record and reports as the four's do; its
config is a ``BaselineConfig`` (``sweeps/baselines/config.py``) of the recipe
``hyperparams.recipe`` picks (rl-zoo3's tuned hyperparameters, or the suite's defaults where the
zoo has none). It searches nothing (``NO_SEARCH``): it runs in benchmark mode, as the library a
user would pick runs, out of the box.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sweeps.baselines.hyperparams import MASKED, NAMES
from sweeps.harness.settings import Settings
from sweeps.harness.sweep import Sweep
from sweeps.workloads.base import Workload


def no_search(trial: Any) -> dict[str, Any]:
    """A baseline searches nothing: it runs its recipe (``NO_SEARCH``)."""
    return {}


NO_SEARCH = (
    "a baseline runs the hyperparameters a user of Stable-Baselines3 would (rl-zoo3's tuned "
    "ones, or the suite's defaults where the zoo has none): run them with --benchmark-seeds N; "
    "rl-zoo3 searches its own with python -m rl_zoo3.train --algo <algo> --env <id> -optimize"
)


def make_config_for(algo: str, workload: Workload) -> Any:
    """The sweep's ``make_config``: args -> ``BaselineConfig`` of the workload's env."""

    def make_config(args: Settings) -> Any:
        import gymnasium as gym

        import envs
        from sweeps.baselines.config import BaselineConfig
        from sweeps.baselines.hyperparams import recipe

        env_id, env_config = workload.env_spec(args)
        chosen = recipe(algo, workload.name, env_id, atari=workload.atari(args))
        env = envs.make(env_id, env_config)
        dict_obs = isinstance(env.observation_space, gym.spaces.Dict)
        env.close()
        if dict_obs and chosen.hyperparams.get("policy") == "MlpPolicy":  # as rl_zoo3 says to
            hyperparams = {**chosen.hyperparams, "policy": "MultiInputPolicy"}
            chosen = replace(chosen, hyperparams=hyperparams)
        mask = workload.action_mask(args)
        if mask is not None and algo in MASKED:  # the env's action mask, as sb3-contrib takes it
            chosen = replace(chosen, model_class=MASKED[algo])
        config = BaselineConfig(
            chosen,
            env_id,
            env_config,
            eval_interval=args.eval_interval,
            eval_episodes=args.eval_episodes,
            eval_share=args.eval_share,
            action_mask=list(mask) if mask is not None and algo in MASKED else None,
        )
        config.seed = args.seed
        return config

    return make_config


def sweep(
    algo: str, workload: Workload, doc: str, smoke: dict[str, Any] | None = None, **defaults: Any
) -> Sweep:
    """The sweep of baseline ``algo`` ("sb3-dqn") on ``workload``: its sweep file's ``defaults``
    and ``smoke`` budget over the shared flags'."""
    return Sweep(
        name=f"{algo.replace('-', '_')}_{workload.name}",
        algo=algo,
        workload=workload,
        make_config=make_config_for(algo, workload),
        sample_params=no_search,
        no_search=NO_SEARCH,
        description=f"{NAMES[algo]} (Stable-Baselines3, one process) on {workload.name}",
        doc=doc,
        defaults={**defaults, "num_env_runners": 0},
        smoke=smoke or {},
    )

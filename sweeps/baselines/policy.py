"""A baseline's trained policy as the suite plays it: greedy (and, for a policy-gradient learner,
sampled) actions for a batch of the env's own observations.

The suite's players (``sweeps/harness/held_out_eval.py``: the confirmed target's checks, the
held-out episodes, ``python -m sweeps.evaluate``) take an RLlib module or this: it acts by
``greedy(obs)`` and ``sampled(obs)`` and takes the env's observations and actions as they are
(``takes_env_io``), as Stable-Baselines3's ``predict`` does. A checkpoint of a baseline's trial is
a folder with ``MODEL_FILE`` (SB3's own ``save``) and ``BASELINE_FILE`` (which class to load it
with).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = "model.zip"
BASELINE_FILE = "baseline.json"  # {"library": "stable-baselines3", "class": "DQN", ...}


def load_model(model_cls: Any, path: Path, **kwargs: Any) -> Any:
    """``model_cls.load(path, **kwargs)``, without SB3 2.9's false warning on an n-step DQN: its
    save names its buffer class (NStepReplayBuffer, n_steps and gamma in the saved kwargs), and
    load then says n_steps "is ignored", though the restored buffer has them
    (tests/test_baselines.py)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`n_steps=\d+` is ignored because")
        return model_cls.load(path, **kwargs)


class ObservedMask:
    """An env whose observation carries its action mask at ``[start, stop)``, with the
    ``action_masks()`` sb3-contrib's MaskablePPO asks its envs for (a gymnasium wrapper)."""

    @staticmethod
    def wrap(env: Any, start: int, stop: int) -> Any:
        import gymnasium as gym

        class Wrapper(gym.Wrapper):
            def reset(self, **kwargs: Any) -> Any:
                obs, info = self.env.reset(**kwargs)
                self._mask = np.asarray(obs)[start:stop] > 0.5
                return obs, info

            def step(self, action: Any) -> Any:
                obs, *rest = self.env.step(action)
                self._mask = np.asarray(obs)[start:stop] > 0.5
                return obs, *rest

            def action_masks(self) -> np.ndarray:
                return self._mask

        return Wrapper(env)


def model_class(name: str) -> type:
    """SB3's (or sb3-contrib's) algorithm class by name: ``DQN``, ``PPO``, ``MaskablePPO``."""
    import sb3_contrib
    import stable_baselines3

    for package in (stable_baselines3, sb3_contrib):
        cls = getattr(package, name, None)
        if isinstance(cls, type):
            return cls
    raise ValueError(f"no Stable-Baselines3 algorithm {name!r}")


class BaselinePolicy:
    """``model``'s policy: an SB3 algorithm (its ``predict``). ``q_learner``: it acts by
    Q-values (DQN), so it has no distribution to sample (``sampled`` gives None, as for the
    suite's DQN and Ape-X)."""

    takes_env_io = True

    def __init__(self, model: Any, action_mask: Sequence[int] | None = None) -> None:
        self.model = model
        self.q_learner = type(model).__name__ in ("DQN", "QRDQN")
        self.action_mask = tuple(action_mask) if action_mask else None

    def _predict(self, obs: Any, deterministic: bool) -> np.ndarray:
        extra = {}
        if self.action_mask is not None:  # MaskablePPO: the mask the observation carries
            start, stop = self.action_mask
            extra["action_masks"] = np.asarray(obs)[..., start:stop] > 0.5
        actions, _ = self.model.predict(obs, deterministic=deterministic, **extra)
        return np.asarray(actions)

    def greedy(self, obs: Any) -> np.ndarray:
        return self._predict(obs, deterministic=True)

    def sampled(self, obs: Any) -> np.ndarray | None:
        if self.q_learner:  # (SB3's non-deterministic DQN is ε-greedy, not a distribution)
            return None
        return self._predict(obs, deterministic=False)

    # --- checkpoints --------------------------------------------------------------------------

    @staticmethod
    def holds(checkpoint: Path) -> bool:
        return (Path(checkpoint) / BASELINE_FILE).is_file()

    @classmethod
    def load(cls, checkpoint: Path) -> BaselinePolicy:
        """The policy of a baseline's checkpoint folder, on the CPU."""
        checkpoint = Path(checkpoint)
        info = json.loads((checkpoint / BASELINE_FILE).read_text())
        model = load_model(model_class(info["class"]), checkpoint / MODEL_FILE, device="cpu")
        return cls(model, info.get("action_mask"))

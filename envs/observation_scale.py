"""Observations rescaled by the env's own bounds: the env config's ``"obs_scale": "bounds"``.

Each dimension of a 1-D Box observation whose bounds are finite is mapped linearly from
[low, high] to [-1, 1]; an unbounded one (CartPole's velocities) goes as it is. No running
statistics: one fixed map, the same in every process and at every step, so nothing is synced or
saved, and an off-policy learner's replay never holds observations scaled two ways.

Why: an MLP learns slowly from inputs whose scales differ by orders of magnitude. MountainCar's
velocity lives in ±0.07 beside a position in [-1.2, 0.6]; rl-baselines3-zoo's PPO and A2C
normalize its observations (``VecNormalize``, running statistics) where the suite's defaults fed
them as they are.

The key belongs to the suite, not the env: :func:`envs.gym.make` takes it out of the config
before the env sees the rest, and wraps the env it built. Every process that builds the env
(RLlib's env runners, the confirmed target's checks and the held-out games, which build it from
the trial's own env config) so sees the same observations, and the module is built for the
rescaled space. Where nothing is to be rescaled (no 1-D Box, or every bounded dimension in
[-1, 1] already) ``bounds`` leaves the env as it is, so one setting can serve a whole family.
As a search parameter it is ``env_config/obs_scale`` (``--set 'env_config={"obs_scale":
"bounds"}'``, merged into the env config the run has).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

KEY = "obs_scale"
CHOICES = ("none", "bounds")


# Bounds wider than this are no bounds (an env that declares float32's limits for "unbounded").
WIDEST = 1e6


def _finite(space: gym.spaces.Box) -> np.ndarray:
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    return np.isfinite(low) & np.isfinite(high) & (high > low) & (high - low <= WIDEST)


def scalable(space: Any) -> bool:
    """Whether ``bounds`` changes ``space``: a 1-D Box with a finite dimension other than
    [-1, 1]."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        return False
    return bool(np.any(_finite(space) & ((space.low != -1.0) | (space.high != 1.0))))


def rescaled(space: gym.spaces.Box) -> tuple[gym.spaces.Box, np.ndarray, np.ndarray]:
    """``space`` with each finite dimension's bounds [-1, 1], and the ``(scale, shift)`` of
    ``obs * scale + shift`` that maps an observation into it (others: 1 and 0)."""
    finite = _finite(space)
    width = np.where(finite, space.high.astype(np.float64) - space.low, 2.0)
    scale = np.where(finite, 2.0 / width, 1.0)
    shift = np.where(finite, -1.0 - space.low * scale, 0.0)
    low = np.where(finite, -1.0, space.low).astype(np.float32)
    high = np.where(finite, 1.0, space.high).astype(np.float32)
    box = gym.spaces.Box(low, high, shape=space.shape, dtype=np.float32)
    return box, scale.astype(np.float32), shift.astype(np.float32)


def check(value: Any) -> str:
    """``value`` if it is one of ``CHOICES``, else a ValueError saying what is."""
    if value not in CHOICES:
        raise ValueError(f"env config {KEY}={value!r}: expected one of {', '.join(CHOICES)}")
    return value


def wrap(env: Any, value: Any) -> Any:
    """``env`` with its observations rescaled where ``value`` is ``bounds`` and its space has
    something to rescale (``scalable``); else ``env`` itself."""
    if check(value) == "none" or not scalable(getattr(env, "observation_space", None)):
        return env
    box, scale, shift = rescaled(env.observation_space)

    def to_box(obs: Any) -> np.ndarray:
        return (np.asarray(obs, dtype=np.float32) * scale + shift).astype(np.float32)

    return gym.wrappers.TransformObservation(env, to_box, box)

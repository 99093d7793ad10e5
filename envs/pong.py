"""Atari Pong from ``ale-py`` with RLlib's standard Atari preprocessing.

:func:`make_pong` builds ``ale_py:ALE/Pong-v5`` with ``frameskip=1`` (the wrapper skips frames)
and wraps it in :func:`ray.rllib.env.wrappers.atari_wrappers.wrap_atari_for_new_api_stack`, as
RLlib's own Pong examples do: grayscale, resize to ``dim x dim`` (64 by default, as in RLlib's
tuned Pong examples; 84 is the DeepMind size), normalise to ``[-1, 1]`` float32, max-and-skip 4
frames, up to 30 no-ops at reset, FIRE at reset, stack 4 frames -> observations of shape
``(dim, dim, 4)`` (``framestack=0``: one frame, ``(dim, dim, 1)``, for algorithms that stack
frames in RLlib's connectors, see ``sweeps/workloads.py``). Sticky actions are off
(``repeat_action_probability=0.0``) and the minimal action set (6 actions) is used, as in RLlib's
examples. The wrapper's episodic-life wrapper is
a no-op on Pong (ALE reports 0 lives), so an episode is a whole game. Rewards are not clipped
(Pong's rewards are already -1/0/+1). The ROMs ship in the ``ale-py`` wheel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

ALE_PONG_ID = "ale_py:ALE/Pong-v5"

PONG_DEFAULTS: dict[str, Any] = {
    "dim": 64,  # observation height and width (64 as RLlib's tuned examples, or 84)
    "framestack": 4,  # frames stacked by the env; 0: none (an algorithm's connectors stack them)
    "frameskip": 4,  # frames per agent step, max-pooled over the last two
    "repeat_action_probability": 0.0,  # sticky actions, as RLlib's examples
}


def validate_pong_config(config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check a Pong config and return it as a plain dict with defaults filled in.

    Raises:
        ValueError: on an unknown key or an ill-typed value, naming the key.
    """
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ValueError(f"Pong config must be a mapping, got {type(config).__name__}")
    unknown = sorted(str(key) for key in config if key not in PONG_DEFAULTS)
    if unknown:
        raise ValueError(
            f"unknown Pong config key(s) {unknown}; known keys: {sorted(PONG_DEFAULTS)}"
        )
    merged = {**PONG_DEFAULTS, **config}
    for key, least in (("dim", 1), ("framestack", 0), ("frameskip", 1)):
        value = merged[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"Pong config {key!r} must be an int >= {least}, got {value!r}")
    probability = merged["repeat_action_probability"]
    if (
        not isinstance(probability, int | float)
        or isinstance(probability, bool)
        or not 0.0 <= probability <= 1.0
    ):
        raise ValueError(
            f"Pong config 'repeat_action_probability' must be in [0, 1], got {probability!r}"
        )
    merged["repeat_action_probability"] = float(probability)
    return merged


def make_pong(config: Mapping[str, Any] | None = None, **kwargs: Any) -> gym.Env:
    """Preprocessed Pong; ``config`` (an RLlib ``EnvContext`` works) and ``kwargs`` merge."""
    import ale_py
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    settings = validate_pong_config({**(config or {}), **kwargs})
    gym.register_envs(ale_py)
    env = gym.make(
        ALE_PONG_ID,
        frameskip=1,
        full_action_space=False,
        repeat_action_probability=settings["repeat_action_probability"],
    )
    return wrap_atari_for_new_api_stack(
        env,
        dim=settings["dim"],
        frameskip=settings["frameskip"],
        framestack=settings["framestack"] or None,
    )

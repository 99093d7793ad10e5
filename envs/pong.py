"""Atari Pong, preprocessed in C++ by ale-py's vector env: the one Atari factory of the suite.

:func:`make_pong` builds ``ale_py.vector_env.AtariVectorEnv("pong")`` (:func:`make_atari` builds
any other game the same way, for the generic workload's ``ALE/...`` ids, ``envs/gym.py``), which
does the standard DeepMind preprocessing in its own C++ worker threads: frame-skip 4 with the
last two frames max-pooled, up to 30 no-ops and FIRE at reset, grayscale, resize to
``dim x dim`` (42 by default, the small Atari size of RLlib's classic ``[16,4,2],[32,4,2],
[256,11,1]`` net; 84 is the DeepMind size) and a stack of the last ``framestack`` frames. A
thin vector wrapper turns its ``(stack, dim, dim)`` uint8 frames into the channels-last
``(dim, dim, stack)`` float32 in ``[-1, 1]`` that RLlib's CNN encoders take, or, with
``obs_dtype="uint8"``, into channels-last bytes in ``[0, 255]``: a quarter of the memory in
episodes, replay and transport, for a network that scales them itself (the suite's Atari
modules do, ``sweeps/algorithms/fast_cnn.py``, to the same float32 values).

* Called with ``num_envs`` in the config (RLlib's env runner does, with
  ``gym_env_vectorize_mode="vector_entry_point"``, see ``sweeps/workloads/pong.py``), it
  returns that vector env: one C++ call steps every game of the runner, and inference is batched
  over them.
* Called without, it returns a plain ``gymnasium.Env`` over a one-game vector env, so tests, the
  raw-rate measurement and any single-env user see exactly the frames the runners see.

The rules: standard ALE Pong (default mode and difficulty, the minimal 6-action set), full games
to 21 (Pong has no lives, so an episode is a game), the emulator's own rewards (not clipped here:
the reported return is the game's score; RLlib's ``clip_rewards`` clips for training), and sticky
actions off (``repeat_action_probability=0.0``, as in RLlib's tuned Atari configs; set 0.25 for
the "v5" protocol of Machado et al.). The ROMs ship in the ``ale-py`` wheel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from envs.config import check_int, merged_config

PONG_DEFAULTS: dict[str, Any] = {
    "dim": 42,  # observation height and width (42: RLlib's small Atari size; 84: DeepMind's)
    "framestack": 4,  # frames stacked per observation
    "frameskip": 4,  # emulator frames per agent step, the last two max-pooled
    "noop_max": 30,  # up to this many no-ops at reset (random start states)
    "repeat_action_probability": 0.0,  # sticky actions off, as RLlib's tuned configs
    "num_threads": 1,  # C++ threads stepping a vector env's games (one per runner CPU)
    "obs_dtype": "float32",  # "float32": frames in [-1, 1]; "uint8": bytes the network scales
}
OBS_DTYPES = ("float32", "uint8")
BYTE_FRAMES = "uint8"  # the suite's runners ship bytes, which its modules scale (fast_cnn.py)
# Training returns the reports time (a game is scored -21..21): even, good, and the source articles'
# bar, where a benchmark stops a trial.
TARGETS: tuple[float, ...] = (0.0, 10.0, 18.0)
# The frame cap of one game (ALE's v5 default: 30 minutes of play at 60 frames/s).
MAX_FRAMES_PER_EPISODE = 108_000


def validate_pong_config(config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check a Pong config and return it as a plain dict with defaults filled in.

    ``num_envs`` (set by RLlib's vector entry point) is passed through when present.

    Raises:
        ValueError: on an unknown key or an ill-typed value, naming the key.
    """
    merged = merged_config("Pong config", config, PONG_DEFAULTS, also_known=["num_envs"])
    least = {"dim": 8, "framestack": 1, "frameskip": 1, "noop_max": 0, "num_threads": 1}
    if "num_envs" in merged:
        least["num_envs"] = 1
    for key, smallest in least.items():
        check_int("Pong config", key, merged[key], smallest)
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
    if merged["obs_dtype"] not in OBS_DTYPES:
        raise ValueError(
            f"Pong config 'obs_dtype' must be one of {', '.join(OBS_DTYPES)}, "
            f"got {merged['obs_dtype']!r}"
        )
    return merged


class ChannelsLast(gym.vector.VectorObservationWrapper):
    """``(n, stack, h, w)`` uint8 in [0, 255] -> ``(n, h, w, stack)`` float32 in [-1, 1], or
    with ``dtype="uint8"`` the same bytes channels-last."""

    def __init__(self, env: gym.vector.VectorEnv, dtype: str = "float32") -> None:
        super().__init__(env)
        stack, height, width = env.single_observation_space.shape
        self._as_bytes = dtype == "uint8"
        shape = (height, width, stack)
        self.single_observation_space = (
            gym.spaces.Box(0, 255, shape, np.uint8)
            if self._as_bytes
            else gym.spaces.Box(-1.0, 1.0, shape, np.float32)
        )
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, env.num_envs
        )

    def observations(self, observations: np.ndarray) -> np.ndarray:
        frames = np.transpose(observations, (0, 2, 3, 1))
        if self._as_bytes:
            return np.ascontiguousarray(frames)
        frames = frames.astype(np.float32)
        return np.multiply(frames, 2.0 / 255.0, out=frames) - 1.0


class OneGame(gym.Env):
    """A one-game vector env as a plain ``gymnasium.Env`` (same frames, same rules)."""

    def __init__(self, vector_env: gym.vector.VectorEnv) -> None:
        self._vector_env = vector_env
        self.observation_space = vector_env.single_observation_space
        self.action_space = vector_env.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        obs, info = self._vector_env.reset(seed=seed)
        return obs[0], {key: value[0] for key, value in info.items()}

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self._vector_env.step(np.array([action]))
        return (
            obs[0],
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            {key: value[0] for key, value in info.items()},
        )

    def close(self) -> None:
        self._vector_env.close()


def make_atari(
    game: str, config: Mapping[str, Any] | None = None, **kwargs: Any
) -> gym.Env | gym.vector.VectorEnv:
    """Preprocessed Atari ``game`` (an ale-py ROM id: ``"pong"``, ``"breakout"``): a vector env of
    ``num_envs`` games when the config has ``num_envs``, else one game as a ``gymnasium.Env``.
    ``config`` (an RLlib ``EnvContext`` works) and ``kwargs`` merge; the keys are Pong's
    (``PONG_DEFAULTS``). The one Atari factory of the suite: Pong and every ``ALE/...`` id of the
    generic workload (``envs/gym.py``) are built here."""
    from ale_py.vector_env import AtariVectorEnv

    settings = validate_pong_config({**(config or {}), **kwargs})
    num_envs = settings.get("num_envs")
    vector_env = ChannelsLast(
        AtariVectorEnv(
            game,
            num_envs or 1,
            num_threads=min(settings["num_threads"], num_envs or 1),
            img_height=settings["dim"],
            img_width=settings["dim"],
            stack_num=settings["framestack"],
            frameskip=settings["frameskip"],
            noop_max=settings["noop_max"],
            repeat_action_probability=settings["repeat_action_probability"],
            max_num_frames_per_episode=MAX_FRAMES_PER_EPISODE,
            reward_clipping=False,
            episodic_life=False,
            use_fire_reset=True,
        ),
        dtype=settings["obs_dtype"],
    )
    return vector_env if num_envs else OneGame(vector_env)


def make_pong(
    config: Mapping[str, Any] | None = None, **kwargs: Any
) -> gym.Env | gym.vector.VectorEnv:
    """Preprocessed Pong (:func:`make_atari` of ``"pong"``)."""
    return make_atari("pong", config, **kwargs)

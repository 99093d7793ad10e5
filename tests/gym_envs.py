"""Small Gymnasium envs the tests load by entry point (``tests.gym_envs:Corridor``), as a user's
own env would be: not registered anywhere, built from ``--env`` and ``--env-config``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Walk right along ``length`` cells to the exit (+1); each step costs 0.01. Discrete
    observations (the cell: fed one-hot), Discrete actions (0 left, 1 right); an episode ends
    at the exit or after ``2 * length`` steps. The greedy optimum is ``1 - 0.01 * (length - 1)``
    (0.95 for the default length 6); a random policy mostly runs out of time."""

    def __init__(self, length: int = 6) -> None:
        if not isinstance(length, int) or length < 2:
            raise ValueError(f"Corridor: length must be an int >= 2, got {length!r}")
        self.length = length
        self.observation_space = gym.spaces.Discrete(length)
        self.action_space = gym.spaces.Discrete(2)
        self._cell = 0
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        super().reset(seed=seed)
        self._cell, self._steps = 0, 0
        return self._cell, {}

    def step(self, action: Any) -> Any:
        self._cell = int(np.clip(self._cell + (1 if int(action) == 1 else -1), 0, self.length - 1))
        self._steps += 1
        done = self._cell == self.length - 1
        reward = (1.0 if done else 0.0) - 0.01
        return self._cell, reward, done, self._steps >= 2 * self.length and not done, {}


def make_corridor(config: dict) -> Corridor:
    """A factory taking the env config as one dict (RLlib's env-creator convention)."""
    return Corridor(**config)


NOT_AN_ENV = "a string, not an env"


class NotAnEnv:
    """A class that is not a gymnasium.Env."""


class Broken(gym.Env):
    """An env whose constructor fails, as one missing a licence or a ROM would."""

    def __init__(self) -> None:
        raise RuntimeError("Broken: no licence file found")


class TextWorld(gym.Env):
    """Text observations: no network of the suite takes them."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Text(8)
        self.action_space = gym.spaces.Discrete(2)

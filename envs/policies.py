"""Reference policies for the cab MDP and their evaluation.

A policy is called as ``policy(obs, info) -> action`` with the env's observation and info, and
``policy.reset()`` is called at the start of every episode. References:

* :class:`RandomPolicy`: uniform over the available actions (all 25 on the base variant);
* :class:`HeuristicPolicy`: the available paying ride (profit > 0) with the most profit per
  hour (ties: the larger profit), else offline. On the base variant it considers only direct
  rides from the current location (each pays ``R - C`` per hour, so it takes the longest); on
  the request variant every requested ride, empty drive to the pickup included;
* :class:`envs.optimum.OptimalPolicy` (``solve(...).policy()``): the exact optimum.

:func:`reference_returns` gives the mean returns of the first two and the exact optimal value,
the yardstick against which learned policies are reported (as % of optimum).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from envs import CABS, CABS_REQUESTS, env_id_for
from envs.cabs import (
    MASK_START,
    NUM_ACTIONS,
    NUM_LOCATIONS,
    NUM_STATES,
    OFFLINE_ACTION,
    RIDE_ACTIONS,
    CabsEnv,
    CabsRequestsEnv,
    city,
    decode_state,
    is_request_variant,
    state_from_observation,
)
from envs.optimum import optimum_value, solve

__all__ = [
    "HeuristicPolicy",
    "Policy",
    "RandomPolicy",
    "episode_returns",
    "evaluate",
    "make_cab_env",
    "optimum_value",
    "reference_episode_returns",
    "reference_returns",
]


class Policy(Protocol):
    """What :func:`evaluate` runs."""

    def reset(self) -> None: ...

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int: ...


def _action_mask(obs: np.ndarray, info: dict[str, Any]) -> np.ndarray | None:
    """The request variant's action mask (from info, else the observation), or None."""
    if "action_mask" in info:
        return np.asarray(info["action_mask"])
    if len(obs) > MASK_START:
        return np.asarray(obs[MASK_START : MASK_START + NUM_ACTIONS])
    return None


class RandomPolicy:
    """Uniformly random among the available actions, from its own seeded generator."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self) -> None:
        """Nothing to reset (the generator runs on across episodes)."""

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        mask = _action_mask(obs, info)
        if mask is None:
            return int(self.rng.integers(NUM_ACTIONS))
        return int(self.rng.choice(np.flatnonzero(mask > 0)))


class HeuristicPolicy:
    """Greedy by profit per hour among available rides, else offline (see module docstring)."""

    def __init__(self, tm_seed: int = 0) -> None:
        c = city(tm_seed)
        rate = c.reward / c.hours
        # Per state: the paying rides, best first by (profit per hour, profit), and the best
        # direct ride (direct rides always pay R - C per hour) for the base variant.
        self._ranked_rides: list[list[int]] = []
        self._best_direct: list[int] = []
        for s in range(NUM_STATES):
            paying = [a for a in RIDE_ACTIONS if c.reward[s, a] > 0]
            ranked = sorted(paying, key=lambda a: (-rate[s, a], -c.reward[s, a], a))
            location = decode_state(s)[0]
            self._ranked_rides.append(ranked)
            self._best_direct.append(next(a for a in ranked if a // NUM_LOCATIONS == location))

    def reset(self) -> None:
        """Nothing to reset: the policy is memoryless."""

    def base_actions(self) -> np.ndarray:
        """Its action in every state index on the base variant: ``(840,)``."""
        return np.array(self._best_direct)

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        state = state_from_observation(obs)
        mask = _action_mask(obs, info)
        if mask is None:
            return self._best_direct[state]
        return next((a for a in self._ranked_rides[state] if mask[a] > 0), OFFLINE_ACTION)


def make_cab_env(env_id_or_config: str | Mapping[str, Any] | gym.Env) -> gym.Env:
    """An env from a cab id or variant name, a cab config, any Gymnasium id, or an env."""
    if isinstance(env_id_or_config, gym.Env):
        return env_id_or_config
    if isinstance(env_id_or_config, Mapping):
        return CabsEnv(env_id_or_config)
    if env_id_or_config in ("base", "requests"):
        env_id_or_config = env_id_for(env_id_or_config)
    if env_id_or_config == CABS:
        return CabsEnv()
    if env_id_or_config == CABS_REQUESTS:
        return CabsRequestsEnv()
    return gym.make(env_id_or_config)


def episode_returns(
    policy: Policy,
    env_id_or_config: str | Mapping[str, Any] | gym.Env,
    episodes: int = 200,
    seed: int = 0,
) -> np.ndarray:
    """``policy``'s return in each of ``episodes`` episodes; episode ``i`` starts from
    ``env.reset(seed=seed + i)``, so policies evaluated with the same ``seed`` face the same
    start states (and, on the request variant, the same first request draws)."""
    env = make_cab_env(env_id_or_config)
    returns = np.empty(episodes)
    for i in range(episodes):
        obs, info = env.reset(seed=seed + i)
        policy.reset()
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy(obs, info))
            total += float(reward)
            done = terminated or truncated
        returns[i] = total
    return returns


def evaluate(
    policy: Policy,
    env_id_or_config: str | Mapping[str, Any] | gym.Env,
    episodes: int = 200,
    seed: int = 0,
) -> tuple[float, float]:
    """Mean and sample standard deviation of ``policy``'s return over ``episodes`` episodes
    (seeded as in :func:`episode_returns`)."""
    returns = episode_returns(policy, env_id_or_config, episodes, seed)
    std = float(returns.std(ddof=1)) if episodes > 1 else 0.0
    return float(returns.mean()), std


def reference_episode_returns(
    env_config: Mapping[str, Any], episodes: int, seed: int
) -> dict[str, list[float]]:
    """Each reference policy's return in each of the episodes seeded ``seed``, ``seed + 1``, ...
    of the cab env ``env_config``: ``random`` (seeded ``seed``), ``heuristic`` and ``optimum``
    (the DP optimal policy, played: its mean over these episodes is the denominator of a
    held-out "% of optimum", measured on the same start states as the learned policy)."""
    config = dict(env_config)
    tm_seed = int(config.get("tm_seed", 0))
    policies = {
        "random": RandomPolicy(seed),
        "heuristic": HeuristicPolicy(tm_seed),
        "optimum": solve(tm_seed, bool(config.get("requests", False))).policy(),
    }
    return {
        name: episode_returns(policy, config, episodes, seed).tolist()
        for name, policy in policies.items()
    }


def reference_returns(
    variant: str = "base", tm_seed: int = 0, episodes: int = 200, seed: int = 0
) -> dict[str, float]:
    """Reference returns of a cab variant: mean ``random`` and ``heuristic`` returns over
    ``episodes`` seeded episodes, and the exact ``optimum`` (expected return of the optimal
    policy from the uniform start)."""
    requests = is_request_variant(variant)
    config = {"tm_seed": tm_seed, "requests": requests}
    return {
        "random": evaluate(RandomPolicy(seed), config, episodes, seed)[0],
        "heuristic": evaluate(HeuristicPolicy(tm_seed), config, episodes, seed)[0],
        "optimum": solve(tm_seed, requests).value,
    }

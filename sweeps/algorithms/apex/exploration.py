"""Ape-X's per-actor exploration: every actor explores with its own fixed
ε_i = ε^(1 + α·i/(N−1)) (Horgan et al. 2018), set on its DQN module and read back for metrics.
An actor is an EnvRunner, or, with ``per_game``, each game of a runner's vector env (N runners
of G games are N·G actors; the module then holds one ε per game and RLlib's ε-greedy draws each
game's random action with its own). All functions here run on the runner, except
:func:`per_runner_epsilon` and :func:`game_epsilons` (pure arithmetic).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

from sweeps.seams.env_runner import fixed_epsilon, set_fixed_epsilon


def per_runner_epsilon(
    index: int, num_runners: int, base: float = 0.4, alpha: float = 7.0
) -> float:
    """Ape-X's fixed exploration rate of actor ``index`` (0-based) out of ``num_runners``.

    ``ε_i = base^(1 + alpha · i / (N − 1))``; a single actor uses ``base``.
    """
    if not 0 <= index < max(num_runners, 1):
        raise ValueError(f"runner index {index} outside 0..{num_runners - 1}")
    if num_runners <= 1:
        return float(base)
    return float(base ** (1.0 + alpha * index / (num_runners - 1)))


def game_epsilons(
    runner: int, num_runners: int, games: int, base: float = 0.4, alpha: float = 7.0
) -> tuple[float, ...]:
    """The fixed ε of each of the ``games`` games of runner ``runner`` (0-based) when every
    game is an actor: game j of runner i is actor ``i·games + j`` of ``num_runners·games``."""
    actors = max(num_runners, 1) * games
    return tuple(per_runner_epsilon(runner * games + j, actors, base, alpha) for j in range(games))


def _set_module_epsilon(module: Any, epsilon: float | tuple[float, ...]) -> None:
    """Give the (DQN) module a constant ε, one number or one per game (idempotent; seam:
    ``sweeps.seams.env_runner.set_fixed_epsilon``)."""
    modules = module.values() if isinstance(module, MultiRLModule) else [module]
    for m in modules:
        if hasattr(m, "epsilon_schedule") and fixed_epsilon(m) != epsilon:
            set_fixed_epsilon(m, epsilon)


def _runner_epsilon(
    env_runner: Any, num_runners: int, base: float, alpha: float, per_game: bool
) -> float | tuple[float, ...]:
    index = min(max(int(env_runner.worker_index) - 1, 0), max(num_runners, 1) - 1)
    games = int(getattr(env_runner, "num_envs", 1) or 1)
    if per_game and games > 1:
        return game_epsilons(index, num_runners, games, base, alpha)
    return per_runner_epsilon(index, num_runners, base, alpha)


def apply_runner_epsilon(
    env_runner: Any, num_runners: int, base: float, alpha: float, per_game: bool = False
) -> float:
    """Set the runner's module to its Ape-X ε (one per game with ``per_game``) and return it,
    the mean over its games where each has its own (runner-side)."""
    epsilon = _runner_epsilon(env_runner, num_runners, base, alpha, per_game)
    _set_module_epsilon(env_runner.module, epsilon)
    return float(sum(epsilon) / len(epsilon)) if isinstance(epsilon, tuple) else epsilon


def default_module(env_runner: Any) -> Any:
    """The runner's (single-agent) module, out of its MultiRLModule where it has one."""
    module = env_runner.module
    return module[DEFAULT_MODULE_ID] if isinstance(module, MultiRLModule) else module


def game_epsilon(env_runner: Any, env_index: int) -> float | None:
    """The fixed Ape-X ε game ``env_index`` of the runner plays at (runner-side), or None where
    the runner's module has not been given one (not an Ape-X training runner)."""
    epsilon = fixed_epsilon(default_module(env_runner))
    if isinstance(epsilon, tuple):
        return float(epsilon[env_index]) if 0 <= env_index < len(epsilon) else None
    return None if epsilon is None else float(epsilon)


def current_epsilon(env_runner: Any) -> float:
    """The ε the runner's module explores with right now, the mean over its games where each
    has its own (runner-side, for tests/metrics)."""
    value = default_module(env_runner).epsilon_schedule.get_current_value()
    return float(value.float().mean()) if hasattr(value, "float") else float(value)

"""Ape-X's per-actor exploration: every EnvRunner explores with its own fixed
ε_i = ε^(1 + α·i/(N−1)) (Horgan et al. 2018), set on its DQN module and read back for metrics.
All functions here run on the runner, except :func:`per_runner_epsilon` (pure arithmetic).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.utils.schedules.scheduler import Scheduler


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


def _set_module_epsilon(module: Any, epsilon: float) -> None:
    """Give the (DQN) module a constant ε (idempotent)."""
    modules = module.values() if isinstance(module, MultiRLModule) else [module]
    for m in modules:
        if hasattr(m, "epsilon_schedule") and getattr(m, "_apex_epsilon", None) != epsilon:
            m.epsilon_schedule = Scheduler(fixed_value_or_schedule=epsilon, framework="torch")
            m._apex_epsilon = epsilon


def _runner_epsilon(env_runner: Any, num_runners: int, base: float, alpha: float) -> float:
    index = max(int(env_runner.worker_index) - 1, 0)
    return per_runner_epsilon(min(index, max(num_runners, 1) - 1), num_runners, base, alpha)


def apply_runner_epsilon(env_runner: Any, num_runners: int, base: float, alpha: float) -> float:
    """Set the runner's module to its Ape-X ε and return it (runner-side)."""
    epsilon = _runner_epsilon(env_runner, num_runners, base, alpha)
    _set_module_epsilon(env_runner.module, epsilon)
    return epsilon


def current_epsilon(env_runner: Any) -> float:
    """The ε the runner's module explores with right now (runner-side, for tests/metrics)."""
    module = env_runner.module
    if isinstance(module, MultiRLModule):
        module = module[DEFAULT_MODULE_ID]
    return float(module.epsilon_schedule.get_current_value())

"""Ape-X's actor side: what runs on an EnvRunner inside one sample request. The runner samples
with its fixed ε, computes each transition's initial priority with its own network
(:func:`initial_priorities`) and sends episodes + priorities straight to its replay shard
(:func:`sample_and_store`); only counts and metrics go back to the driver.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import ray
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.core.columns import Columns

from sweeps.algorithms.apex.exploration import apply_runner_epsilon
from sweeps.algorithms.apex.replay import strip_for_replay

logger = logging.getLogger(__name__)


def initial_priorities(
    module: Any, episodes: Sequence[Any], n_step: int, gamma: float
) -> list[np.ndarray]:
    """|n-step TD error| of every transition of ``episodes`` under ``module``'s Q-network.

    Target ``R_t^(m) + γ^m · max_a Q(s_{t+m}, a)`` with ``m = min(n, steps left in the chunk)``
    and no bootstrap past a terminal. An unfinished chunk's last steps bootstrap from its last
    observation (the learner later uses the full n-step window): a cheap initial estimate, as
    Ape-X's actors compute it with their own (slightly stale) network.
    """
    import torch

    lengths = [len(e) for e in episodes]
    if not any(lengths):
        return [np.zeros(0) for _ in episodes]
    obs = np.concatenate(
        [np.asarray(e.get_observations()) for e, n in zip(episodes, lengths, strict=True) if n]
    )
    if obs.dtype != np.uint8:  # byte frames go to the network as they are (it scales them)
        obs = obs.astype(np.float32, copy=False)
    with torch.no_grad():
        q_all = module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS]
    q_all = q_all.detach().cpu().numpy().astype(np.float64)

    out, offset = [], 0
    for episode, length in zip(episodes, lengths, strict=True):
        if not length:
            out.append(np.zeros(0))
            continue
        q = q_all[offset : offset + length + 1]
        offset += length + 1
        actions = np.asarray(episode.get_actions()).astype(np.int64).reshape(length)
        rewards = np.asarray(episode.get_rewards(), dtype=np.float64).reshape(length)
        padded = np.concatenate([rewards, np.zeros(n_step)])
        t = np.arange(length)
        returns = sum(gamma**k * padded[t + k] for k in range(n_step))
        boot = np.minimum(t + n_step, length)
        not_done = ~((boot == length) & bool(episode.is_terminated))
        target = returns + gamma ** (boot - t) * not_done * q[boot].max(axis=-1)
        out.append(np.abs(q[t, actions] - target))
    return out


def sample_and_store(
    env_runner: Any,
    *,
    shards: Sequence[Any],
    num_runners: int,
    epsilon_base: float,
    epsilon_alpha: float,
    epsilon_per_game: bool = False,
    n_step: int,
    gamma: float,
    compute_priorities: bool,
    weights: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One Ape-X actor step, run on an EnvRunner (via ``foreach_env_runner_async``).

    Loads ``weights`` if given, samples one fragment with the runner's fixed ε (one per game with
    ``epsilon_per_game``), computes the initial priorities locally and sends episodes +
    priorities to the runner's shard. Returns counts and the runner's metrics only.
    """
    t0 = time.perf_counter()
    if weights is not None:
        env_runner.set_state(weights)
    epsilon = apply_runner_epsilon(
        env_runner, num_runners, epsilon_base, epsilon_alpha, epsilon_per_game
    )
    episodes = env_runner.sample()
    t1 = time.perf_counter()
    priorities = None
    if compute_priorities:
        try:
            priorities = initial_priorities(env_runner.module, episodes, n_step, gamma)
        except Exception:  # e.g. a custom module without compute_q_values: max priority
            logger.exception("Ape-X: initial priorities failed; using max priority")
    strip_for_replay(episodes)
    t2 = time.perf_counter()
    shard_index = max(int(env_runner.worker_index) - 1, 0) % len(shards)
    # Back-pressure: at most one add per runner in flight, so a slow shard slows its runners
    # instead of filling the object store.
    pending = getattr(env_runner, "_apex_pending_add", None)
    add_errors = 0
    if pending is not None:
        try:
            ray.get(pending)
        except ray.exceptions.RayError:  # a shard error must not take the actor down
            logger.exception("Ape-X: adding to replay shard %d failed", shard_index)
            add_errors = 1
    t3 = time.perf_counter()
    env_runner._apex_pending_add = shards[shard_index].add.remote(episodes, priorities)
    return {
        "env_steps": sum(len(e) for e in episodes),
        "metrics": env_runner.get_metrics(),
        "weights_seq_no": int(getattr(env_runner, "_weights_seq_no", 0)),
        "epsilon": epsilon,
        "shard": shard_index,
        "sample_s": t1 - t0,
        "priority_s": t2 - t1,
        "add_wait_s": t3 - t2,
        "add_errors": add_errors,
    }

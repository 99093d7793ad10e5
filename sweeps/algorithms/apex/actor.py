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

from sweeps.algorithms.apex.exploration import apply_runner_epsilon, default_module
from sweeps.algorithms.apex.replay import strip_for_replay
from sweeps.seams.env_runner import runner_state, weights_seq_no

logger = logging.getLogger(__name__)

# The runner's pending replay add (an ObjectRef), in its per-runner state (seam:
# ``sweeps.seams.env_runner.runner_state``).
PENDING_ADD = "apex_pending_add"


def initial_priorities(
    module: Any, episodes: Sequence[Any], n_step: int, gamma: float
) -> list[np.ndarray]:
    """|n-step TD error| of every transition of ``episodes`` under ``module``'s Q-network.

    Target ``R_t^(m) + γ^m · max_a Q(s_{t+m}, a)`` with ``m = min(n, steps left in the chunk)``
    and no bootstrap past a terminal. An unfinished chunk's last steps bootstrap from its last
    observation (the learner later uses the full n-step window): a cheap initial estimate, as
    Ape-X's actors compute it with their own (slightly stale) network. The Q-values come from
    :func:`chunk_q_values`.
    """
    lengths = [len(e) for e in episodes]
    if not any(lengths):
        return [np.zeros(0) for _ in episodes]
    out = []
    for episode, length, q in zip(episodes, lengths, chunk_q_values(module, episodes), strict=True):
        if not length:
            out.append(np.zeros(0))
            continue
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


def kept_q_values(episode: Any) -> np.ndarray | None:
    """The Q-values the runner's exploration forward returned for each step of ``episode``
    (``QF_PREDS`` in its ``extra_model_outputs``, with ``emit_q_values``), or None where the
    chunk does not carry one per step."""
    if not len(episode) or QF_PREDS not in episode.extra_model_outputs:
        return None
    q = np.asarray(episode.get_extra_model_outputs(QF_PREDS), dtype=np.float64)
    return q if q.ndim == 2 and q.shape[0] == len(episode) else None


def chunk_q_values(module: Any, episodes: Sequence[Any]) -> list[np.ndarray | None]:
    """Q(s_t, ·) for t = 0..L of every chunk of L steps (None for an empty chunk). Steps whose
    Q-values the runner kept (:func:`kept_q_values`) need only the chunk's last observation;
    the others all of theirs. One forward pass, under ``torch.no_grad``, for all chunks."""
    import torch

    kept = [kept_q_values(e) for e in episodes]
    frames = [
        np.asarray(e.get_observations(-1))[None]
        if q is not None
        else np.asarray(e.get_observations())
        for e, q in zip(episodes, kept, strict=True)
        if len(e)
    ]
    obs = np.concatenate(frames)
    if obs.dtype != np.uint8:  # byte frames go to the network as they are (it scales them)
        obs = obs.astype(np.float32, copy=False)
    with torch.no_grad():
        q_new = module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS]
    q_new = q_new.detach().cpu().numpy().astype(np.float64)

    out: list[np.ndarray | None] = []
    offset = 0
    for episode, q in zip(episodes, kept, strict=True):
        if not len(episode):
            out.append(None)
        elif q is not None:
            out.append(np.concatenate([q, q_new[offset : offset + 1]]))
            offset += 1
        else:
            out.append(q_new[offset : offset + len(episode) + 1])
            offset += len(episode) + 1
    return out


def keep_q_values(env_runner: Any, keep: bool = True) -> None:
    """Have the runner's DQN module return its Q-values with each action (where it can:
    ``sweeps.algorithms.fast_cnn.FusedDQNTorchRLModule``), for :func:`initial_priorities`."""
    module = default_module(env_runner)
    if hasattr(module, "emit_q_values"):
        module.emit_q_values = keep


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
    keep_q_values(env_runner, compute_priorities)
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
    state = runner_state(env_runner)
    pending = state.get(PENDING_ADD)
    add_errors = 0
    if pending is not None:
        try:
            ray.get(pending)
        except ray.exceptions.RayError:  # a shard error must not take the actor down
            logger.exception("Ape-X: adding to replay shard %d failed", shard_index)
            add_errors = 1
    t3 = time.perf_counter()
    state[PENDING_ADD] = shards[shard_index].add.remote(episodes, priorities)
    return {
        "env_steps": sum(len(e) for e in episodes),
        "metrics": env_runner.get_metrics(),
        "weights_seq_no": weights_seq_no(env_runner),
        "epsilon": epsilon,
        "shard": shard_index,
        "sample_s": t1 - t0,
        "priority_s": t2 - t1,
        "add_wait_s": t3 - t2,
        "add_errors": add_errors,
    }

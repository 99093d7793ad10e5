"""Ape-X DQN (Horgan et al. 2018, "Distributed Prioritized Experience Replay") on RLlib 2.60's
new API stack: EnvRunners, RLModule, Learner/LearnerGroup and episode replay buffers.

Usage
-----
    from sweeps.algorithms.apex_dqn import ApexDQNConfig, cabs_config, register

    algo = cabs_config(ApexDQNConfig()).environment("Cabs-v0").build()  # tuned, 2 cores
    algo = (
        ApexDQNConfig()
        .environment("Cabs-v0")
        .env_runners(num_env_runners=2, num_envs_per_env_runner=16)
        .apex(num_replay_buffer_shards=2, max_weight_sync_delay=400)
        .training(lr=1e-3, train_batch_size=64, training_intensity=1.0)
        .build()
    )
    algo.train()

    register()  # then tune.Tuner("ApexDQN", param_space=config) works

How data flows
--------------
* Actors = the EnvRunners. Each runs with its own fixed ε_i = ε^(1 + α·i/(N−1)) (ε = 0.4,
  α = 7, i = 0..N−1 over the N remote runners; N = 1 uses ε). The driver keeps up to
  ``max_requests_in_flight_per_env_runner`` requests of :func:`sample_and_store` queued on
  every runner (``EnvRunnerGroup.foreach_env_runner_async``, IMPALA's pattern), so runners
  never wait for the learner. Inside the request a runner samples
  ``rollout_fragment_length × num_envs_per_env_runner`` steps, computes the initial priority
  of every transition with its local network (|n-step TD error|, :func:`initial_priorities`),
  and sends episodes + priorities straight to its replay shard (runner i → shard i % S) with a
  fire-and-forget actor call (at most one add in flight per runner: back-pressure). Only counts
  and the runner's metrics go back to the driver.
* Replay = S :class:`ApexReplayShard` Ray actors (``num_cpus=replay_shard_num_cpus``, default
  0), each wrapping an :class:`ApexEpisodeReplayBuffer`, i.e. RLlib's
  ``PrioritizedEpisodeReplayBuffer`` plus per-step initial priorities and index-carrying
  sample / priority-update calls (see its docstring for why the subclass is needed).
* Learner = the LearnerGroup with DQN's own torch learner and loss (double-Q, dueling, n-step,
  importance weights; TD errors come back in the results as in DQN;
  :class:`ApexDQNTorchLearner` only moves the target-network clock to trained steps). The
  driver keeps a few replay-sample requests in flight (each returning
  ``replay_batches_per_request`` ready train batches, round-robin over the shards), does one
  ``LearnerGroup.update(batch=...)`` per ``training_step`` call (re-issuing sample requests in
  between) and sends the |TD errors| back to that shard (fire-and-forget).
  ``training_intensity`` caps trained / sampled env steps (None: train as fast as possible).
  The local learner uses one torch thread (``learner_torch_num_threads``).
* Weight sync (Ape-X's ``max_weight_sync_delay``): once a runner has returned that many env
  steps since its last sync, its next sample request carries the latest weights (one
  ``ray.put`` per learner version), which it loads before sampling. No runner ever stops.
* When nothing is ready the driver blocks in ``ray.wait`` on the in-flight requests (up to
  ``idle_wait_s``) instead of spinning, leaving the cores to the runners.

Results: RLlib's usual keys plus ``result["apex"]`` (:data:`APEX_RESULTS`): env steps sampled
and trained (lifetime and per second), learner updates, per-shard replay fill and mean
priority, per-runner ε, weight-sync lag, training_step calls and idle time.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import ray
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.algorithms.dqn.dqn import DQN, DQNConfig
from ray.rllib.algorithms.dqn.dqn_learner import DQNLearner
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core import (
    COMPONENT_LEARNER,
    COMPONENT_RL_MODULE,
    DEFAULT_MODULE_ID,
)
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import update_target_network
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    LAST_TARGET_UPDATE_TS,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_TARGET_UPDATES,
    TD_ERROR_KEY,
    TIMERS,
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
    PrioritizedEpisodeReplayBuffer,
)
from ray.rllib.utils.schedules.scheduler import Scheduler

logger = logging.getLogger(__name__)

# Result key under which the Ape-X specific metrics are reported.
APEX_RESULTS = "apex"
# Tag of the sample-and-store requests on the EnvRunnerGroup.
SAMPLE_TAG = "apex_sample"
# Extra batch columns carrying the replay indices of a sampled batch (popped before training).
TREE_IDX = "_apex_tree_idx"
ITEM_ID = "_apex_item_id"

__all__ = [
    "APEX_RESULTS",
    "ApexDQN",
    "ApexDQNConfig",
    "ApexEpisodeReplayBuffer",
    "ApexReplayShard",
    "initial_priorities",
    "per_runner_epsilon",
    "register",
    "sample_and_store",
]


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


# =============================================================================== replay


def _item(buffer: Any, index: int) -> Any:
    """Item ``index`` (0 = first step after the lookback) of an InfiniteLookbackBuffer, fast."""
    data = buffer.data
    if isinstance(data, np.ndarray | list):
        return data[buffer.lookback + index]
    return buffer.get(index)  # nested (dict/tuple) spaces


def _slice(buffer: Any, start: int, stop: int) -> np.ndarray:
    data = buffer.data
    if isinstance(data, np.ndarray | list):
        return np.asarray(data[buffer.lookback + start : buffer.lookback + stop])
    return np.asarray(buffer.get(slice(start, stop)))


def _set_leaves(tree: Any, leaves: Sequence[int], values: Sequence[float]) -> None:
    """Batched ``tree[leaf] = value`` for RLlib's Sum/MinSegmentTree: writes the leaves, then
    recomputes each affected inner node once per level (instead of once per leaf)."""
    value, capacity, op = tree.value, tree.capacity, tree.operation
    nodes = set()
    for leaf, v in zip(leaves, values, strict=True):
        node = leaf + capacity
        value[node] = v
        nodes.add(node >> 1)
    while nodes:
        parents = set()
        for node in nodes:
            value[node] = op(value[2 * node], value[2 * node + 1])
            if node > 1:
                parents.add(node >> 1)
        nodes = parents


def strip_for_replay(episodes: Sequence[Any]) -> None:
    """Drop what replay never reads from episode chunks, in place, before they are shipped:
    the per-step ``infos`` (dicts; most of the pickling and of the buffer's deep copy) and
    the spaces (their RNGs are deep-copied too). Lengths are kept, so chunks still concatenate.
    """
    empty: dict = {}
    for episode in episodes:
        infos = episode.infos
        if isinstance(infos.data, list):
            infos.data = [empty] * len(infos.data)
        episode.observation_space = None
        episode.action_space = None


class ApexEpisodeReplayBuffer(PrioritizedEpisodeReplayBuffer):
    """RLlib's ``PrioritizedEpisodeReplayBuffer`` with what Ape-X needs on top.

    Why a subclass (everything else - storage, episode concatenation, eviction, the sum/min
    segment trees, ``alpha`` - is the parent's):

    * ``add(..., priorities=...)``: Ape-X actors send one initial priority per transition; the
      parent's ``add(weight=...)`` takes a single scalar for the whole call.
    * ``sample_transitions`` / ``update_priorities_at``: the parent remembers only the *last*
      sampled indices and ``update_priorities`` applies to those, so sampling and updating must
      strictly alternate. Ape-X keeps several batches in flight per shard; here each sample
      carries its tree indices (plus the item's (episode, step) identity, so a priority for a
      slot that was evicted and reused meanwhile is dropped).
    * ``sample_transitions`` returns a ready train batch (columns of numpy arrays) instead of
      one ``SingleAgentEpisode`` per row, ~10x cheaper and much cheaper to ship to the learner.
      Same prioritized draw and importance weights ``(p_i N)^-β / max_j (p_j N)^-β`` as the
      parent. One deliberate difference: the parent never samples the last n−1 steps of an
      episode; here a finished episode's tail is sampled with the shorter n-step return up to
      the terminal (``n_step`` column = steps actually used), as in Ape-X. Steps whose n-step
      window is not yet complete (episode still running) are redrawn.
    """

    def __init__(
        self,
        capacity: int = 10000,
        *,
        alpha: float = 0.6,
        priority_eps: float = 1e-6,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs = {k: v for k, v in kwargs.items() if k in ("batch_size_B", "batch_length_T")}
        super().__init__(capacity=capacity, alpha=alpha, **kwargs)
        self.priority_eps = float(priority_eps)
        self.rng = np.random.default_rng(seed)
        self.num_priority_updates = 0
        self.num_stale_priority_updates = 0
        # While not None, the parent's per-step tree writes in `add` are collected here and
        # written in one batch (`_set_leaves`).
        self._pending_writes: list[tuple[int, float]] | None = None
        self._aliases: dict[str, str] = {}
        self.num_unlinked_chunks = 0

    def _get_free_node_and_assign(self, sample_index: int, weight: float = 1.0) -> int:
        if self._pending_writes is None:
            return super()._get_free_node_and_assign(sample_index, weight)
        idx = self._free_nodes.popleft()
        self._max_idx = idx if idx > self._max_idx else self._max_idx
        self._tree_idx_to_sample_idx[idx] = sample_index
        self._pending_writes.append((idx, weight**self._alpha))
        return idx

    # ----------------------------------------------------------------------------- add

    def add(
        self,
        episodes: Any,
        weight: float | None = None,
        priorities: Sequence[np.ndarray] | None = None,
    ) -> None:
        """Add episode chunks; ``priorities[k][t]`` is the initial priority of step ``t`` of
        ``episodes[k]`` (None: the parent's behaviour, max priority seen so far)."""
        episodes = list(episodes) if isinstance(episodes, list | tuple) else [episodes]
        if priorities is not None and len(priorities) != len(episodes):
            raise ValueError(f"{len(priorities)} priority arrays for {len(episodes)} episodes")
        for episode in episodes:
            self._link_chunk(episode)
        self._pending_writes = []
        try:
            super().add(episodes, weight=weight)
            writes = self._pending_writes
        finally:
            self._pending_writes = None
        if priorities is not None and writes:
            # The parent appends the (episode, step, tree index) triples of every stored
            # chunk, in order; chunks of episodes evicted during this very call are not stored
            # (their ids left `episode_id_to_index`).
            stored = [
                (e, np.asarray(p, dtype=np.float64).reshape(-1))
                for e, p in zip(episodes, priorities, strict=True)
                if e.id_ in self.episode_id_to_index
            ]
            prios = np.concatenate([p[: len(e)] for e, p in stored] or [np.zeros(0)])
            if len(prios) != len(writes):
                raise ValueError("each priority array needs one entry per step of its episode")
            prios = np.maximum(np.maximum(prios, 0.0) + self.priority_eps, 1e-12)
            writes = list(zip([w[0] for w in writes], (prios**self._alpha).tolist(), strict=True))
            self._max_priority = max(self._max_priority, float(prios.max()))
        if writes:
            leaves, values = zip(*writes, strict=True)
            _set_leaves(self._sum_segment, leaves, values)
            _set_leaves(self._min_segment, leaves, values)

    def _link_chunk(self, episode: Any) -> None:
        """Make ``episode`` (a chunk) concatenable: the parent asserts that a chunk of a stored
        episode starts where the stored part ends. A chunk that does not (its predecessor was
        never added, e.g. someone sampled the training runner directly, or it was dropped)
        starts a new stored episode under an alias id, which its later chunks follow."""
        source = episode.id_
        episode.id_ = self._aliases.get(source, source)
        index = self.episode_id_to_index.get(episode.id_)
        if index is None:
            return
        stored = self.episodes[index - self._num_episodes_evicted]
        if not stored.is_done and stored.t == episode.t_started:
            return
        episode.id_ = f"{source}#{episode.t_started}"
        self._aliases[source] = episode.id_
        self.num_unlinked_chunks += 1
        if len(self._aliases) > 10_000:  # old aliases of long-gone episodes
            self._aliases.pop(next(iter(self._aliases)))

    # -------------------------------------------------------------------------- sample

    def sample_transitions(
        self,
        num_items: int,
        *,
        n_step: int = 1,
        gamma: float = 0.99,
        beta: float = 0.4,
        max_redraws: int = 20,
    ) -> dict[str, np.ndarray] | None:
        """Prioritized sample of ``num_items`` n-step transitions as a train batch.

        Returns columns ``obs, new_obs, actions, rewards (n-step discounted sum), terminateds,
        truncateds, weights, n_step`` and the replay indices (:data:`TREE_IDX`,
        :data:`ITEM_ID`) for :meth:`update_priorities_at`. Draws are with replacement; None
        when ``num_items`` complete transitions could not be drawn in ``max_redraws`` tries
        per item (e.g. only unfinished windows stored yet).
        """
        size = self.get_num_timesteps()
        if not size or not self._indices:
            return None
        sum_tree = self._sum_segment
        total = sum_tree.sum()
        if not total > 0.0:
            return None
        p_min = self._min_segment.min() / total
        max_weight = (p_min * size) ** (-beta)

        rows: list[tuple[int, int, int, Any, int]] = []
        draws = 0
        idx_map, indices, episodes = self._tree_idx_to_sample_idx, self._indices, self.episodes
        evicted = self._num_episodes_evicted
        limit = max_redraws * num_items
        randoms = self.rng.random(limit) * total
        while len(rows) < num_items and draws < limit:
            tree_idx = sum_tree.find_prefixsum_idx(randoms[draws])
            draws += 1
            sample_idx = idx_map.get(tree_idx)
            if sample_idx is None:
                continue
            episode_idx, ts, _ = indices[sample_idx]
            episode = episodes[episode_idx - evicted]
            steps = min(n_step, len(episode) - ts)
            if steps < n_step and not episode.is_done:
                continue  # the n-step window is not complete yet
            rows.append((tree_idx, episode_idx, ts, episode, steps))
        if len(rows) < num_items:
            return None

        tree_idx = np.array([r[0] for r in rows], dtype=np.int64)
        probs = np.array([sum_tree[i] for i in tree_idx.tolist()]) / total
        weights = (probs * size) ** (-beta) / max_weight
        discounts = gamma ** np.arange(n_step, dtype=np.float64)
        obs, next_obs, actions, rewards, terminateds, truncateds, steps_used = (
            [] for _ in range(7)
        )
        for _, _, ts, episode, steps in rows:
            obs.append(_item(episode.observations, ts))
            next_obs.append(_item(episode.observations, ts + steps))
            actions.append(_item(episode.actions, ts))
            rewards.append(
                float(np.dot(_slice(episode.rewards, ts, ts + steps), discounts[:steps]))
            )
            at_end = ts + steps == len(episode)
            terminateds.append(at_end and episode.is_terminated)
            truncateds.append(at_end and episode.is_truncated)
            steps_used.append(steps)

        self.sampled_timesteps += num_items
        return {
            Columns.OBS: np.stack(obs),
            Columns.NEXT_OBS: np.stack(next_obs),
            Columns.ACTIONS: np.asarray(actions),
            Columns.REWARDS: np.asarray(rewards, dtype=np.float32),
            Columns.TERMINATEDS: np.asarray(terminateds, dtype=bool),
            Columns.TRUNCATEDS: np.asarray(truncateds, dtype=bool),
            "weights": weights.astype(np.float32),
            "n_step": np.asarray(steps_used, dtype=np.float32),
            TREE_IDX: tree_idx,
            ITEM_ID: np.array([(r[1], r[2]) for r in rows], dtype=np.int64),
        }

    def update_priorities_at(
        self, tree_idx: np.ndarray, item_id: np.ndarray, priorities: np.ndarray
    ) -> int:
        """Set new priorities (|TD error|) of sampled items; returns how many were applied
        (items evicted since they were sampled are skipped)."""
        idx_map, indices = self._tree_idx_to_sample_idx, self._indices
        prios = np.abs(np.asarray(priorities, dtype=np.float64).reshape(-1)) + self.priority_eps
        prios = np.maximum(prios, 1e-12)  # as the parent: never a zero sampling weight
        weights = (prios**self._alpha).tolist()
        values: dict[int, float] = {}
        applied = 0
        for idx, (episode_idx, ts), w in zip(
            tree_idx.tolist(), item_id.tolist(), weights, strict=True
        ):
            sample_idx = idx_map.get(idx)
            if sample_idx is None:
                continue
            triple = indices[sample_idx]
            if triple[0] != episode_idx or triple[1] != ts:
                continue
            values[idx] = w  # an item drawn twice keeps its last priority
            applied += 1
        if values:
            leaves = list(values)
            _set_leaves(self._sum_segment, leaves, [values[i] for i in leaves])
            _set_leaves(self._min_segment, leaves, [values[i] for i in leaves])
            self._max_priority = max(self._max_priority, float(prios.max()))
        self.num_priority_updates += applied
        self.num_stale_priority_updates += len(weights) - applied
        return applied

    # --------------------------------------------------------------------------- stats

    def stats(self) -> dict[str, float]:
        """Fill and priority statistics (``mean_priority`` is the mean sampling weight p^α)."""
        size = self.get_num_timesteps()
        total = self._sum_segment.sum() if size else 0.0
        return {
            "num_env_steps": size,
            "capacity": self.capacity,
            "fill": size / self.capacity if self.capacity else math.nan,
            "num_episodes": self.get_num_episodes(),
            "num_env_steps_added": self.get_added_timesteps(),
            "num_env_steps_sampled": self.sampled_timesteps,
            "num_episodes_evicted": self.get_num_episodes_evicted(),
            "mean_priority": total / size if size else math.nan,
            "max_priority": self._max_priority,
            "num_priority_updates": self.num_priority_updates,
            "num_stale_priority_updates": self.num_stale_priority_updates,
            "num_unlinked_chunks": self.num_unlinked_chunks,
        }


class ApexReplayShard:
    """One replay shard (a Ray actor, see ``ApexDQN``): an :class:`ApexEpisodeReplayBuffer`,
    plus the seconds it spent adding, sampling and updating priorities."""

    def __init__(self, buffer_class: type, buffer_kwargs: dict[str, Any]) -> None:
        self.buffer = buffer_class(**buffer_kwargs)
        self.busy_s = defaultdict(float)
        self.calls = defaultdict(int)

    def _timed(self, name: str, t0: float) -> None:
        self.busy_s[name] += time.perf_counter() - t0
        self.calls[name] += 1

    def add(self, episodes: list, priorities: Sequence[np.ndarray] | None = None) -> int:
        t0 = time.perf_counter()
        self.buffer.add(episodes, priorities=priorities)
        self._timed("add", t0)
        return sum(len(e) for e in episodes)

    def sample(
        self, num_items: int, n_step: int, gamma: float, beta: float, num_batches: int = 1
    ) -> list[dict[str, np.ndarray]]:
        """``num_batches`` independent prioritized batches (fewer round trips for the
        learner); an empty list while the shard cannot fill one."""
        t0 = time.perf_counter()
        batches = []
        for _ in range(num_batches):
            batch = self.buffer.sample_transitions(num_items, n_step=n_step, gamma=gamma, beta=beta)
            if batch is None:
                break
            batches.append(batch)
        self._timed("sample", t0)
        return batches

    def update_priorities(
        self, tree_idx: np.ndarray, item_id: np.ndarray, priorities: np.ndarray
    ) -> int:
        t0 = time.perf_counter()
        applied = self.buffer.update_priorities_at(tree_idx, item_id, priorities)
        self._timed("update_priorities", t0)
        return applied

    def stats(self) -> dict[str, float]:
        stats = self.buffer.stats()
        for name in ("add", "sample", "update_priorities"):
            stats[f"{name}_s_total"] = self.busy_s[name]
            stats[f"{name}_calls"] = self.calls[name]
        return stats

    def ping(self) -> bool:
        return True


# ========================================================================= actor side


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
        [
            np.asarray(e.get_observations(), dtype=np.float32)
            for e, n in zip(episodes, lengths, strict=True)
            if n
        ]
    )
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


def sample_and_store(
    env_runner: Any,
    *,
    shards: Sequence[Any],
    num_runners: int,
    epsilon_base: float,
    epsilon_alpha: float,
    n_step: int,
    gamma: float,
    compute_priorities: bool,
    weights: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One Ape-X actor step, run on an EnvRunner (via ``foreach_env_runner_async``).

    Loads ``weights`` if given, samples one fragment with the runner's fixed ε, computes the
    initial priorities locally and sends episodes + priorities to the runner's shard. Returns
    counts and the runner's metrics only.
    """
    t0 = time.perf_counter()
    if weights is not None:
        env_runner.set_state(weights)
    epsilon = apply_runner_epsilon(env_runner, num_runners, epsilon_base, epsilon_alpha)
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


# ============================================================================ learner


class ApexDQNTorchLearner(DQNTorchLearner):
    """RLlib's DQN torch learner and loss, unchanged, except for the target-network clock.

    RLlib's new-stack DQN syncs the target network every ``target_network_update_freq``
    *sampled* env steps. With asynchronous actors the sampling rate is decoupled from the
    learner's, so that would make the target period, in gradient steps, depend on how fast the
    actors run. As in old RLlib Ape-X, the period counts *trained* env steps here (the
    ``NUM_ENV_STEPS_TRAINED_LIFETIME`` entry of ``timesteps``); learning-rate schedules keep
    RLlib's sampled-steps clock.
    """

    @override(DQNTorchLearner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        # TorchLearner / Learner parts (lr schedules, ...) on the sampled clock; skips
        # DQNLearner's own target update, done below on the trained clock.
        super(DQNLearner, self).after_gradient_based_update(timesteps=timesteps)
        trained = timesteps.get(NUM_ENV_STEPS_TRAINED_LIFETIME, 0)
        for module_id, module in self.module._rl_modules.items():
            config = self.config.get_config_for_module(module_id)
            if not isinstance(module.unwrapped(), TargetNetworkAPI):
                continue
            if trained - self.last_update_ts_by_mid[module_id] < config.target_network_update_freq:
                continue
            for main_net, target_net in module.unwrapped().get_target_network_pairs():
                update_target_network(main_net=main_net, target_net=target_net, tau=config.tau)
            self.metrics.log_value((module_id, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")
            self.last_update_ts_by_mid[module_id] = trained
            self.metrics.log_value((module_id, LAST_TARGET_UPDATE_TS), trained, reduce="max")


# ============================================================================ config


class ApexDQNConfig(DQNConfig):
    """Configuration of :class:`ApexDQN`: ``DQNConfig`` plus the Ape-X knobs of :meth:`apex`.

    Defaults follow RLlib's old Ape-X (``rllib/algorithms/apex_dqn/apex_dqn.py``, Ray <= 2.5,
    and ``rllib_contrib/apex_dqn``) and the paper:

    ========================================  ============  ===================================
    knob                                      default       source
    ========================================  ============  ===================================
    num_replay_buffer_shards                  4             old RLlib (``optimizer`` dict)
    max_weight_sync_delay                     400           old RLlib: env steps a runner
                                                            returns between weight syncs
    exploration_epsilon_base / _alpha         0.4 / 7       paper; old ``PerWorkerEpsilonGreedy``
    max_requests_in_flight_per_env_runner     2             old ``..._per_sampler_worker``
    max_requests_in_flight_per_replay_shard   4             old: inf (bounded: stale priorities)
    replay capacity (all shards together)     2,000,000     old RLlib
    prioritized replay alpha / beta / eps     0.6/0.4/1e-6  old RLlib
    n_step / double_q / dueling               3/True/True   old RLlib and paper
    train_batch_size                          512           old RLlib
    target_network_update_freq                500,000       old RLlib, in *trained* env steps
    training_intensity                        1.0           old RLlib (trained/sampled steps;
                                                            None: learner runs flat out)
    num_steps_sampled_before_learning_starts  50,000        old RLlib
    rollout_fragment_length                   50            old RLlib
    lr / adam_epsilon / grad_clip / loss      DQN's         5e-4 / 1e-8 / 40 / huber
    replay_batches_per_request                1             new (round trips on busy cores)
    replay_shard_num_cpus                     0             old RLlib (shards ``num_cpus=0``)
    compute_initial_priorities                True          paper; old ``worker_side_prio...``
    learner_torch_num_threads                 "auto"        new (see :meth:`apex`)
    idle_wait_s                               0.02          new (driver never busy-spins)
    ========================================  ============  ===================================

    Differences from RLlib's DQN: ``target_network_update_freq`` counts *trained* env steps,
    as in old Ape-X (:class:`ApexDQNTorchLearner`; DQN counts sampled steps).
    ``num_env_runners`` defaults to 2 (old: 32 workers) and the per-iteration reporting
    minimum is 1 s (old: 30 s and 25k steps). The ε schedule (``epsilon``) of DQN is ignored
    on training runners (each has its fixed ε_i); evaluation is greedy (``explore=False``).
    The replay shards are not checkpointed (a restored algorithm refills them before it
    learns again). Small-problem settings that reach a greedy return of 2,500 on ``Cabs-v0``
    in a few seconds of training: :func:`cabs_config`.
    """

    def __init__(self, algo_class: type | None = None) -> None:
        super().__init__(algo_class=algo_class or ApexDQN)
        # --- Ape-X knobs (see `apex()`).
        self.num_replay_buffer_shards = 4
        self.max_weight_sync_delay = 400
        self.exploration_epsilon_base = 0.4
        self.exploration_alpha = 7.0
        self.max_requests_in_flight_per_replay_shard = 4
        self.replay_batches_per_request = 1
        self.replay_shard_num_cpus = 0.0
        self.compute_initial_priorities = True
        self.idle_wait_s = 0.02
        self.learner_torch_num_threads = "auto"
        # --- DQN settings overridden as in old Ape-X.
        self.n_step = 3
        self.double_q = True
        self.dueling = True
        self.train_batch_size = 512
        self.target_network_update_freq = 500_000
        self.training_intensity = 1.0
        self.num_steps_sampled_before_learning_starts = 50_000
        self.replay_buffer_config = {
            "type": ApexEpisodeReplayBuffer,
            "capacity": 2_000_000,  # all shards together
            "alpha": 0.6,
            "beta": 0.4,
            "priority_eps": 1e-6,
            # Ape-X's replay lives in the shard actors, not in the driver.
            "no_local_replay_buffer": True,
        }
        # --- env runners / reporting.
        self.num_env_runners = 2
        self.rollout_fragment_length = 50
        self.max_requests_in_flight_per_env_runner = 2
        self.min_time_s_per_iteration = 1
        self.min_sample_timesteps_per_iteration = 0
        # Exploration on training runners is each runner's fixed ε; the module-level default
        # schedule is constant at the base value (used only if a runner cannot be told its ε).
        self.epsilon = self.exploration_epsilon_base

    def apex(
        self,
        *,
        num_replay_buffer_shards: int = NotProvided,
        max_weight_sync_delay: int = NotProvided,
        exploration_epsilon_base: float = NotProvided,
        exploration_alpha: float = NotProvided,
        max_requests_in_flight_per_env_runner: int = NotProvided,
        max_requests_in_flight_per_replay_shard: int = NotProvided,
        replay_batches_per_request: int = NotProvided,
        replay_shard_num_cpus: float = NotProvided,
        compute_initial_priorities: bool = NotProvided,
        idle_wait_s: float = NotProvided,
        learner_torch_num_threads: int | str | None = NotProvided,
    ) -> ApexDQNConfig:
        """Ape-X specific settings.

        Args:
            num_replay_buffer_shards: Number of replay shard actors; runner i feeds shard
                i % num_replay_buffer_shards. The replay capacity is split evenly.
            max_weight_sync_delay: A runner gets the learner's latest weights once it has
                returned this many env steps since its last sync.
            exploration_epsilon_base: ε of Ape-X's per-actor schedule ε^(1 + α i/(N-1)).
            exploration_alpha: α of that schedule.
            max_requests_in_flight_per_env_runner: Sample requests queued per runner (>= 2
                keeps a runner busy while its previous result travels back).
            max_requests_in_flight_per_replay_shard: Replay-sample requests in flight per
                shard (prefetching batches for the learner).
            replay_batches_per_request: Train batches a shard returns per request (more
                amortise the actor round trip on busy cores; their priorities are
                read before the learner updates the earlier ones).
            replay_shard_num_cpus: CPUs reserved per shard actor (0: shards are mostly idle
                and share the cores with everything else).
            compute_initial_priorities: Runners compute initial priorities (|n-step TD|) with
                their local network (Ape-X); False adds new steps with the max priority.
            idle_wait_s: Longest the driver blocks in ``ray.wait`` when nothing is ready.
            learner_torch_num_threads: Torch intra-op threads of the driver process when the
                learner is local and on CPU (``num_learners=0``, no GPU). "auto" (default):
                ``num_cpus_for_main_process`` (1), so the learner does not oversubscribe the
                cores the runners use (torch's default, one thread per core, made each update
                ~10x slower on 2 busy cores); None leaves torch's setting alone.
        """
        if num_replay_buffer_shards is not NotProvided:
            self.num_replay_buffer_shards = num_replay_buffer_shards
        if max_weight_sync_delay is not NotProvided:
            self.max_weight_sync_delay = max_weight_sync_delay
        if exploration_epsilon_base is not NotProvided:
            self.exploration_epsilon_base = exploration_epsilon_base
            self.epsilon = exploration_epsilon_base
        if exploration_alpha is not NotProvided:
            self.exploration_alpha = exploration_alpha
        if max_requests_in_flight_per_env_runner is not NotProvided:
            self.max_requests_in_flight_per_env_runner = max_requests_in_flight_per_env_runner
        if max_requests_in_flight_per_replay_shard is not NotProvided:
            self.max_requests_in_flight_per_replay_shard = max_requests_in_flight_per_replay_shard
        if replay_batches_per_request is not NotProvided:
            self.replay_batches_per_request = replay_batches_per_request
        if replay_shard_num_cpus is not NotProvided:
            self.replay_shard_num_cpus = replay_shard_num_cpus
        if compute_initial_priorities is not NotProvided:
            self.compute_initial_priorities = compute_initial_priorities
        if idle_wait_s is not NotProvided:
            self.idle_wait_s = idle_wait_s
        if learner_torch_num_threads is not NotProvided:
            self.learner_torch_num_threads = learner_torch_num_threads
        return self

    @override(DQNConfig)
    def training(self, **kwargs: Any) -> ApexDQNConfig:
        """DQN's ``training()``; also accepts the keyword arguments of :meth:`apex`."""
        apex_keys = set(inspect.signature(ApexDQNConfig.apex).parameters) - {"self"}
        apex_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in apex_keys}
        super().training(**kwargs)
        if apex_kwargs:
            self.apex(**apex_kwargs)
        return self

    @override(DQNConfig)
    def validate(self) -> None:
        super().validate()
        if not self.enable_rl_module_and_learner or not self.enable_env_runner_and_connector_v2:
            self._value_error("ApexDQN runs on RLlib's new API stack only.")
        if self.is_multi_agent:
            self._value_error("ApexDQN supports single-agent envs only.")
        if self.num_replay_buffer_shards < 1:
            self._value_error("num_replay_buffer_shards must be >= 1.")
        if self.max_weight_sync_delay < 0:
            self._value_error("max_weight_sync_delay must be >= 0.")
        if self.max_requests_in_flight_per_replay_shard < 1:
            self._value_error("max_requests_in_flight_per_replay_shard must be >= 1.")
        if self.batch_mode != "truncate_episodes" and not self.in_evaluation:
            self._value_error("ApexDQN needs batch_mode='truncate_episodes'.")
        if self.model_config.get("use_lstm") or self.model_config.get("use_attention"):
            self._value_error("ApexDQN does not support stateful (recurrent) modules.")
        if isinstance(self.n_step, tuple | list):
            self._value_error("ApexDQN needs a fixed integer n_step.")
        buffer_type = self.replay_buffer_config.get("type")
        if isinstance(buffer_type, type) and not issubclass(buffer_type, ApexEpisodeReplayBuffer):
            self._value_error("replay_buffer_config['type'] must subclass ApexEpisodeReplayBuffer.")

    @override(DQNConfig)
    def get_default_learner_class(self) -> type:
        if self.framework_str != "torch":
            raise ValueError("ApexDQN supports framework='torch' only.")
        return ApexDQNTorchLearner

    def replay_shard_buffer_class(self) -> type:
        """The buffer class of each shard (string types map to ApexEpisodeReplayBuffer)."""
        buffer_type = self.replay_buffer_config.get("type")
        return buffer_type if isinstance(buffer_type, type) else ApexEpisodeReplayBuffer

    def replay_shard_buffer_kwargs(self, shard_index: int) -> dict[str, Any]:
        """Constructor kwargs of shard ``shard_index``'s buffer (capacity split evenly)."""
        cfg = self.replay_buffer_config
        capacity = max(int(cfg.get("capacity", 2_000_000)) // self.num_replay_buffer_shards, 1)
        seed = None if self.seed is None else int(self.seed) * 1000 + shard_index
        return {
            "capacity": capacity,
            "alpha": float(cfg.get("alpha", 0.6)),
            "priority_eps": float(cfg.get("priority_eps", 1e-6)),
            "seed": seed,
        }


def cabs_config(config: ApexDQNConfig | None = None) -> ApexDQNConfig:
    """Tuned small-problem settings (the cab MDP on 2 cores), updating ``config`` in place.

    One actor with 8 vectorised envs (32-step fragments: 256 env steps per request) and one
    shard; learning from 1,000 steps; a 50k replay; batch 64 at lr 1e-3; a replay ratio of 4
    trained per sampled env step (the learner is the bottleneck on 2 cores; a higher ratio
    needs fewer env steps *and* fewer updates here); target sync every 2,000 trained steps
    (~31 updates); squared TD loss (returns are ~3,000: the Huber loss's unit-slope tails
    learn that scale slowly). Measured by ``benchmarks/apex_cabs_bench.py --seeds 0 1 2 3 4``
    (2 cores, 2026-11-22): greedy 2,500 after a median 5.8 s of training (5/5 seeds, max
    10.0 s); 2 envs x 64-step fragments instead: median 8.6 s (5/5, max 19.3 s).
    """
    config = config or ApexDQNConfig()
    return (
        config.env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=8,
            rollout_fragment_length=32,
            max_requests_in_flight_per_env_runner=2,
        )
        .apex(
            num_replay_buffer_shards=1,
            max_weight_sync_delay=256,
            replay_batches_per_request=4,
            max_requests_in_flight_per_replay_shard=2,
        )
        .training(
            lr=1e-3,
            gamma=0.99,
            train_batch_size=64,
            training_intensity=4.0,
            target_network_update_freq=2000,
            td_error_loss_fn="mse",
            num_steps_sampled_before_learning_starts=1000,
            replay_buffer_config={"capacity": 50_000},
        )
        .rl_module(model_config={"fcnet_hiddens": [256], "fcnet_activation": "relu"})
        .reporting(min_time_s_per_iteration=0.5, min_sample_timesteps_per_iteration=0)
    )


# ========================================================================= algorithm


class ApexDQN(DQN):
    """Ape-X DQN: asynchronous actors with fixed per-actor ε, sharded prioritized replay fed
    directly by the actors, one learner (the LearnerGroup, GPU if configured) and periodic
    non-blocking weight broadcast. See the module docstring for the data flow."""

    @classmethod
    @override(DQN)
    def get_default_config(cls) -> ApexDQNConfig:
        return ApexDQNConfig()

    @override(DQN)
    def _create_local_replay_buffer_if_necessary(self, config: Any) -> None:
        return None  # Ape-X's replay lives in the shard actors.

    @override(DQN)
    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        cfg = self.config
        self._limit_learner_threads()
        shard_cls = ray.remote(num_cpus=cfg.replay_shard_num_cpus)(ApexReplayShard)
        buffer_cls = cfg.replay_shard_buffer_class()
        self._shards = [
            shard_cls.options(name=None).remote(buffer_cls, cfg.replay_shard_buffer_kwargs(i))
            for i in range(cfg.num_replay_buffer_shards)
        ]
        ray.get([s.ping.remote() for s in self._shards])
        self._num_runners = self.env_runner_group.num_remote_env_runners()
        self._sample_fn = functools.partial(
            sample_and_store,
            shards=self._shards,
            num_runners=max(self._num_runners, 1),
            epsilon_base=cfg.exploration_epsilon_base,
            epsilon_alpha=cfg.exploration_alpha,
            n_step=int(cfg.n_step),
            gamma=float(cfg.gamma),
            compute_priorities=bool(cfg.compute_initial_priorities),
        )
        # Counters (driver side).
        self._sampled = 0
        self._trained = 0
        self._num_updates = 0
        self._num_weight_syncs = 0
        self._num_training_step_calls = 0
        self._idle_s = 0.0
        self._train_time_s = 0.0  # time inside training iterations (no eval, no setup)
        self._shard_steps = [0] * cfg.num_replay_buffer_shards  # env steps sent per shard
        self._replay_reqs: list[tuple[int, ray.ObjectRef]] = []
        self._batch_queue: deque[tuple[int, dict[str, np.ndarray]]] = deque()
        self._next_shard = 0
        self._weights_ref: ray.ObjectRef | None = None
        self._weights_ref_updates = -1
        self._steps_since_sync: dict[int, int] = defaultdict(int)
        self._updates_at_sync: dict[int, int] = defaultdict(int)
        self._runner_seq_no: dict[int, int] = {}
        self._runner_epsilon: dict[int, float] = {}
        self._runner_timing: dict[str, float] = defaultdict(float)
        self._num_sample_results = 0
        self._replay_add_errors = 0
        self._in_flight_at_update: list[int] = []
        self._shard_stats: list[dict[str, float]] = [{} for _ in self._shards]
        self._stats_reqs: list[ray.ObjectRef] | None = None
        self._last_stats_t = 0.0
        self._iter_snapshot = (0, 0, 0)
        # Give every runner its fixed ε right away (the sample function re-applies it, which
        # also covers runners restarted after a failure).
        self._runner_epsilon = self.get_runner_epsilons()

    def _limit_learner_threads(self) -> None:
        threads = self.config.learner_torch_num_threads
        local_cpu = self.config.num_learners == 0 and not self.config.num_gpus_per_learner
        if threads is None or not local_cpu:
            return
        if threads == "auto":
            threads = max(int(self.config.num_cpus_for_main_process or 1), 1)
        import torch

        torch.set_num_threads(int(threads))

    # ----------------------------------------------------------------- public helpers

    def get_runner_epsilons(self) -> dict[int, float]:
        """Apply and return each runner's fixed ε, keyed by worker index (0 = local)."""
        cfg = self.config
        n = max(self._num_runners, 1)
        base, alpha = cfg.exploration_epsilon_base, cfg.exploration_alpha

        def _apply(er: Any) -> tuple[int, float]:
            apply_runner_epsilon(er, n, base, alpha)
            return int(er.worker_index), current_epsilon(er)

        if self._num_runners:
            pairs = self.env_runner_group.foreach_env_runner(_apply, local_env_runner=False)
        else:
            pairs = [_apply(self.env_runner)]
        return dict(pairs)

    @property
    def replay_shards(self) -> list[Any]:
        """The replay shard actor handles."""
        return list(self._shards)

    def replay_stats(self) -> list[dict[str, float]]:
        """Current stats of every shard (blocking)."""
        return ray.get([s.stats.remote() for s in self._shards])

    # ------------------------------------------------------------------ training loop

    @override(DQN)
    def _run_one_training_iteration(self):
        t0 = time.perf_counter()
        out = super()._run_one_training_iteration()
        self._train_time_s += time.perf_counter() - t0
        self._apex_results = self._iteration_metrics(time.perf_counter() - t0)
        return out

    @override(DQN)
    def _compile_iteration_results(self, *, train_results, eval_results):
        results = super()._compile_iteration_results(
            train_results=train_results, eval_results=eval_results
        )
        # RLlib compiles its MetricsLogger inside the training iteration; the Ape-X figures
        # are per-iteration snapshots computed right after it, so they are added here.
        results[APEX_RESULTS] = getattr(self, "_apex_results", {})
        return results

    @override(DQN)
    def training_step(self) -> None:
        """One pass of the driver loop: keep sample requests queued on every runner, account
        for finished ones, train on replay batches (as many as ``training_intensity``
        allows), keep replay requests in flight. Blocks in ``ray.wait`` (up to
        ``idle_wait_s``) only when none of that has anything to do."""
        self._num_training_step_calls += 1
        if self._num_runners == 0:
            self._sample_locally()
            self._receive_batches(None)
            self._train_from_queue()
            self._request_replay()
            self._poll_shard_stats()
            return
        self._request_samples()
        sample_refs = self._sample_refs()
        can_train = self._updates_due() >= 1
        replay_refs = [ref for _, ref in self._replay_reqs] if can_train else []
        watch = sample_refs + replay_refs
        ready = set(ray.wait(watch, num_returns=len(watch), timeout=0)[0]) if watch else set()
        if not ready and not (can_train and self._batch_queue):
            t0 = time.perf_counter()
            if watch:
                ready = set(ray.wait(watch, num_returns=1, timeout=self.config.idle_wait_s)[0])
            else:
                time.sleep(min(self.config.idle_wait_s, 0.005))
            self._idle_s += time.perf_counter() - t0
        if ready.intersection(sample_refs):
            self._collect_samples()
            self._request_samples()
        if ready.intersection(replay_refs):
            self._receive_batches(ready)
        self._train_from_queue()
        self._request_replay()
        self._poll_shard_stats()

    def _sample_refs(self) -> list[ray.ObjectRef]:
        """ObjectRefs of this algorithm's in-flight sample requests (RLlib keeps them in the
        EnvRunnerGroup's actor manager; read, never resolved here)."""
        manager = self.env_runner_group._worker_manager
        in_flight = getattr(manager, "_in_flight_req_to_actor_id", {})
        return [ref for ref, (tag, _) in in_flight.items() if tag == SAMPLE_TAG]

    # -- sampling

    def _weights_for(self, runner_id: int) -> Any:
        """Latest learner weights (an ObjectRef) if ``runner_id`` is due for a sync."""
        if self._num_updates == 0 or self._updates_at_sync[runner_id] == self._num_updates:
            return None
        if self._steps_since_sync[runner_id] < self.config.max_weight_sync_delay:
            return None
        if self._weights_ref_updates != self._num_updates:
            state = self.learner_group.get_state(
                components=COMPONENT_LEARNER + "/" + COMPONENT_RL_MODULE, inference_only=True
            )[COMPONENT_LEARNER]
            self._weights_ref = ray.put(state)
            self._weights_ref_updates = self._num_updates
        return self._weights_ref

    def _mark_synced(self, runner_id: int) -> None:
        self._steps_since_sync[runner_id] = 0
        self._updates_at_sync[runner_id] = self._num_updates
        self._num_weight_syncs += 1

    def _request_samples(self) -> None:
        for runner_id in self.env_runner_group.healthy_env_runner_ids():
            weights = self._weights_for(runner_id)
            sent = self.env_runner_group.foreach_env_runner_async(
                self._sample_fn,
                tag=SAMPLE_TAG,
                kwargs={"weights": weights},
                remote_worker_ids=[runner_id],
            )
            if sent and weights is not None:
                self._mark_synced(runner_id)

    def _collect_samples(self) -> None:
        results = self.env_runner_group.fetch_ready_async_reqs(tags=SAMPLE_TAG, timeout_seconds=0)
        for runner_id, result in results:
            self._on_sample_result(runner_id, result)
        if results:
            self.metrics.aggregate([r["metrics"] for _, r in results], key=ENV_RUNNER_RESULTS)

    def _sample_locally(self) -> None:
        """No remote runners: the local EnvRunner samples synchronously (debugging mode)."""
        weights = self._weights_for(0)
        if weights is not None:
            weights = ray.get(weights)
            self._mark_synced(0)
        result = self._sample_fn(self.env_runner, weights=weights)
        ray.get(self.env_runner._apex_pending_add)
        self._on_sample_result(0, result)
        self.metrics.aggregate([result["metrics"]], key=ENV_RUNNER_RESULTS)

    def _on_sample_result(self, runner_id: int, result: dict[str, Any]) -> None:
        steps = int(result["env_steps"])
        self._sampled += steps
        self._shard_steps[result["shard"]] += steps
        self._steps_since_sync[runner_id] += steps
        self._runner_seq_no[runner_id] = result["weights_seq_no"]
        self._runner_epsilon[runner_id] = result["epsilon"]
        self._num_sample_results += 1
        self._replay_add_errors += result.get("add_errors", 0)
        for key in ("sample_s", "priority_s", "add_wait_s"):
            self._runner_timing[key] += result[key]

    # -- learning

    def _learning_started(self) -> bool:
        return self._sampled >= self.config.num_steps_sampled_before_learning_starts

    def _updates_due(self) -> float:
        """Learner updates allowed now by ``training_intensity`` (inf when uncapped)."""
        if not self._learning_started():
            return 0
        intensity = self.config.training_intensity
        if not intensity:
            return math.inf
        batch = self.config.total_train_batch_size
        return max(math.floor((self._sampled * intensity - self._trained) / batch), 0)

    def _request_replay(self) -> None:
        """Keep enough replay batches queued or in flight for the updates now due (at most
        ``max_requests_in_flight_per_replay_shard`` requests per shard)."""
        if not self._learning_started():
            return
        cfg = self.config
        batch = cfg.total_train_batch_size
        k = max(int(cfg.replay_batches_per_request), 1)
        per_shard = cfg.max_requests_in_flight_per_replay_shard
        num_shards = len(self._shards)
        # Batches queued or in flight: what is due plus one request, at most
        # `max_requests_in_flight_per_replay_shard` requests' worth in total (prefetched
        # batches carry priorities from when they were drawn, so keep the queue short).
        want = min(self._updates_due() + k, per_shard * k)
        in_flight = defaultdict(int)
        for shard_index, _ in self._replay_reqs:
            in_flight[shard_index] += 1
        while len(self._batch_queue) + k * len(self._replay_reqs) < want:
            shard_index = next(
                (
                    i % num_shards
                    for i in range(self._next_shard, self._next_shard + num_shards)
                    if self._shard_steps[i % num_shards] >= batch
                    and in_flight[i % num_shards] < per_shard
                ),
                None,
            )
            if shard_index is None:
                break
            self._next_shard = (shard_index + 1) % num_shards
            ref = self._shards[shard_index].sample.remote(
                batch,
                int(cfg.n_step),
                float(cfg.gamma),
                float(cfg.replay_buffer_config.get("beta", 0.4)),
                k,
            )
            self._replay_reqs.append((shard_index, ref))
            in_flight[shard_index] += 1

    def _receive_batches(self, ready: set | None) -> None:
        """Move the replay batches of finished requests (``ready``; None: all, blocking) into
        the local queue, oldest request first."""
        remaining = []
        for shard_index, ref in self._replay_reqs:
            if ready is not None and ref not in ready:
                remaining.append((shard_index, ref))
                continue
            self._batch_queue.extend((shard_index, b) for b in ray.get(ref))
        self._replay_reqs = remaining

    def _train_from_queue(self) -> None:
        # One update per training_step: between two updates the driver re-issues sample
        # requests, so a long run of updates never leaves the runners without work.
        if self._batch_queue and self._updates_due() >= 1:
            self._update(*self._batch_queue.popleft())

    def _update(self, shard_index: int, batch: dict[str, np.ndarray]) -> None:
        tree_idx, item_id = batch.pop(TREE_IDX), batch.pop(ITEM_ID)
        n = len(batch[Columns.ACTIONS])
        self._in_flight_at_update.append(
            self.env_runner_group.num_in_flight_async_reqs(tag=SAMPLE_TAG)
        )
        train_batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(batch)}, env_steps=n)
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                batch=train_batch,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self._sampled,
                    NUM_ENV_STEPS_TRAINED_LIFETIME: self._trained + n,
                },
            )
        # As in DQN: isolate the TD errors (priorities) from the results.
        td_errors = []
        for result in learner_results:
            module_results = result.get(DEFAULT_MODULE_ID, {})
            if TD_ERROR_KEY in module_results:
                td_errors.append(convert_to_numpy(module_results.pop(TD_ERROR_KEY).peek()))
        self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        if td_errors:
            td = np.concatenate([np.asarray(t).reshape(-1) for t in td_errors])
            if len(td) == n:
                self._shards[shard_index].update_priorities.remote(tree_idx, item_id, td)
        self._trained += n
        self._num_updates += 1

    # -- waiting and stats

    def _poll_shard_stats(self, interval_s: float = 0.5) -> None:
        now = time.perf_counter()
        if now - self._last_stats_t < interval_s:
            return
        if self._stats_reqs is not None:
            ready, _ = ray.wait(self._stats_reqs, num_returns=len(self._stats_reqs), timeout=0)
            if len(ready) < len(self._stats_reqs):
                return
            self._shard_stats = ray.get(self._stats_reqs)
        self._stats_reqs = [s.stats.remote() for s in self._shards]
        self._last_stats_t = now

    def _iteration_metrics(self, iteration_s: float) -> dict[str, Any]:
        sampled0, trained0, updates0 = self._iter_snapshot
        self._iter_snapshot = (self._sampled, self._trained, self._num_updates)
        per_s = 1.0 / iteration_s if iteration_s > 0 else math.nan
        life_s = 1.0 / self._train_time_s if self._train_time_s > 0 else math.nan
        runner_keys = {rid: f"runner_{rid}" for rid in self._runner_epsilon}
        lag_updates = {
            runner_keys[r]: self._num_updates - self._updates_at_sync[r]
            for r in self._runner_epsilon
        }
        lag_seq = {
            runner_keys[r]: self._num_updates - self._runner_seq_no.get(r, 0)
            for r in self._runner_epsilon
        }
        shards = {f"shard_{i}": dict(stats) for i, stats in enumerate(self._shard_stats) if stats}
        fills = [s["fill"] for s in self._shard_stats if s]
        prios = [s["mean_priority"] for s in self._shard_stats if s]
        n_results = max(self._num_sample_results, 1)
        apex = {
            "env_steps_sampled_lifetime": self._sampled,
            "env_steps_trained_lifetime": self._trained,
            "env_steps_sampled_per_s": (self._sampled - sampled0) * per_s,
            "env_steps_trained_per_s": (self._trained - trained0) * per_s,
            "env_steps_sampled_per_s_lifetime": self._sampled * life_s,
            "env_steps_trained_per_s_lifetime": self._trained * life_s,
            "replay_ratio": self._trained / self._sampled if self._sampled else 0.0,
            "learner_updates_lifetime": self._num_updates,
            "learner_updates_per_s": (self._num_updates - updates0) * per_s,
            "weight_syncs_lifetime": self._num_weight_syncs,
            "training_step_calls_lifetime": self._num_training_step_calls,
            "training_time_s": self._train_time_s,
            "driver_idle_s_lifetime": self._idle_s,
            "epsilon": {runner_keys[r]: e for r, e in self._runner_epsilon.items()},
            "weight_sync_lag_updates": lag_updates,
            "weight_sync_lag_seq_no": lag_seq,
            "weight_sync_lag_updates_max": max(lag_updates.values(), default=0),
            "sample_requests_in_flight_at_update_mean": (
                float(np.mean(self._in_flight_at_update)) if self._in_flight_at_update else 0.0
            ),
            "replay_requests_in_flight": len(self._replay_reqs),
            "replay_batches_queued": len(self._batch_queue),
            "replay": shards,
            "replay_fill_mean": float(np.mean(fills)) if fills else 0.0,
            "replay_add_errors_lifetime": self._replay_add_errors,
            "replay_mean_priority": float(np.mean(prios)) if prios else math.nan,
            "runner_sample_s_mean": self._runner_timing["sample_s"] / n_results,
            "runner_priority_s_mean": self._runner_timing["priority_s"] / n_results,
            "runner_add_wait_s_mean": self._runner_timing["add_wait_s"] / n_results,
        }
        self._in_flight_at_update = self._in_flight_at_update[-1000:]
        return apex

    @override(DQN)
    def cleanup(self) -> None:
        for shard in getattr(self, "_shards", []):
            try:
                ray.kill(shard)
            except Exception:  # already gone
                pass
        self._shards = []
        super().cleanup()


def register(name: str = "ApexDQN") -> str:
    """Register :class:`ApexDQN` as a Tune trainable under ``name`` (idempotent); returns it."""
    from ray.tune.registry import register_trainable

    register_trainable(name, ApexDQN)
    return name

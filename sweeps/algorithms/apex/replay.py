"""Ape-X's prioritized replay: :class:`ApexEpisodeReplayBuffer` (RLlib's prioritized episode
buffer plus per-step initial priorities and index-carrying sample / priority-update calls) and
:class:`ApexReplayShard`, the Ray actor that holds one buffer. Also the small helpers both use
(fast episode-buffer reads, batched segment-tree writes) and :func:`strip_for_replay`, which
actors call on episodes before shipping them here.
"""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.rllib.core.columns import Columns

from sweeps.algorithms.growing_replay import GrowingPrioritizedEpisodeReplayBuffer

# Extra batch columns carrying the replay indices of a sampled batch (popped before training).
TREE_IDX = "_apex_tree_idx"
ITEM_ID = "_apex_item_id"


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


class ApexEpisodeReplayBuffer(GrowingPrioritizedEpisodeReplayBuffer):
    """RLlib's ``PrioritizedEpisodeReplayBuffer`` with what Ape-X needs on top (by way of
    :class:`~sweeps.algorithms.growing_replay.GrowingPrioritizedEpisodeReplayBuffer`, whose
    running episodes grow in place instead of being copied whole at every chunk).

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
        stored = self.stored_episode(episode.id_)
        if stored is None:
            return
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
        stats["pid"] = os.getpid()  # a new one after a restart (ApexDQN counts restarts)
        for name in ("add", "sample", "update_priorities"):
            stats[f"{name}_s_total"] = self.busy_s[name]
            stats[f"{name}_calls"] = self.calls[name]
        return stats

    def ping(self) -> int:
        """The shard's process id: it is up (and a restart shows as another id)."""
        return os.getpid()

"""Ape-X's prioritized replay: :class:`ApexEpisodeReplayBuffer` (the suite's columnar
prioritized episode buffer plus per-step initial priorities) and :class:`ApexReplayShard`, the
Ray actor that holds one buffer. Also :func:`strip_for_replay`, which actors call on episodes
before shipping them here.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS

from sweeps.algorithms.columnar_replay import (
    ITEM_ID,
    TREE_IDX,
    ColumnarPrioritizedEpisodeReplayBuffer,
    set_leaves,
)
from sweeps.seams.replay import (
    TreeSlotHook,
    claim_tree_slot,
    min_tree,
    priority_exponent,
    raise_max_priority,
    sum_tree,
)

__all__ = ["ITEM_ID", "TREE_IDX", "ApexEpisodeReplayBuffer", "ApexReplayShard", "strip_for_replay"]


def strip_for_replay(episodes: Sequence[Any]) -> None:
    """Drop what replay never reads from episode chunks, in place, before they are shipped:
    the per-step ``infos`` (dicts; most of the pickling and of the buffer's deep copy), the
    Q-values the actor kept for its initial priorities (``QF_PREDS``) and the spaces (their RNGs
    are deep-copied too). Lengths are kept, so chunks still concatenate.
    """
    empty: dict = {}
    for episode in episodes:
        episode.extra_model_outputs.pop(QF_PREDS, None)
        infos = episode.infos
        if isinstance(infos.data, list):
            infos.data = [empty] * len(infos.data)
        episode.observation_space = None
        episode.action_space = None


class ApexEpisodeReplayBuffer(ColumnarPrioritizedEpisodeReplayBuffer, TreeSlotHook):
    """The suite's columnar prioritized episode replay
    (:class:`~sweeps.algorithms.columnar_replay.ColumnarPrioritizedEpisodeReplayBuffer`:
    RLlib's buffer, running episodes grown in place, sampled as a train batch whose rows carry
    their replay indices) with what Ape-X needs on top:

    * ``add(..., priorities=...)``: Ape-X actors send one initial priority per transition; the
      parent's ``add(weight=...)`` takes a single scalar for the whole call.
    * chunks that do not continue their stored episode start a new one (``_link_chunk``).

    The parent's per-step tree writes in ``add`` come through RLlib's per-item hook
    (:meth:`assign_tree_slot`, seam: ``sweeps.seams.replay.TreeSlotHook``).

    Several batches per shard are in flight at once; each carries its tree indices (plus the
    item's (episode, step) identity, so a priority for a slot that was evicted and reused
    meanwhile is dropped).
    """

    def __init__(self, capacity: int = 10000, **kwargs: Any) -> None:
        super().__init__(capacity=capacity, **kwargs)
        # While not None, the parent's per-step tree writes in `add` are collected here and
        # written in one batch (`set_leaves`).
        self._pending_writes: list[tuple[int, float]] | None = None
        self._aliases: dict[str, str] = {}
        self.num_unlinked_chunks = 0

    def assign_tree_slot(self, sample_index: int, weight: float = 1.0) -> int:
        if self._pending_writes is None:
            return super().assign_tree_slot(sample_index, weight)
        idx = claim_tree_slot(self, sample_index)
        self._pending_writes.append((idx, weight ** priority_exponent(self)))
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
            alpha = priority_exponent(self)
            writes = list(zip([w[0] for w in writes], (prios**alpha).tolist(), strict=True))
            raise_max_priority(self, float(prios.max()))
        if writes:
            leaves, values = zip(*writes, strict=True)
            set_leaves(sum_tree(self), leaves, values)
            set_leaves(min_tree(self), leaves, values)

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

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "num_unlinked_chunks": self.num_unlinked_chunks}


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

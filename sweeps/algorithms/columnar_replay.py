"""Prioritized episode replay sampled as columns: :class:`ColumnarPrioritizedEpisodeReplayBuffer`.

RLlib's ``PrioritizedEpisodeReplayBuffer.sample`` returns one ``SingleAgentEpisode`` per sampled
row, which the learner connector then turns back into a batch: on Pong a large share of DQN's
update time (the replay-sample and learner-connector timers of ``python -m sweeps.profiling``
with RLlib's buffer). This buffer draws the same
prioritized sample (``P(i) ∝ p_i^α``, importance weights ``(P(i) N)^-β / max_j (P(j) N)^-β``) and
returns a ready train batch (columns of numpy arrays) for ``LearnerGroup.update(batch=...)``,
with the replay indices of each row so that new priorities go back to the rows they came from
(:meth:`update_priorities_at`; the parent only remembers its last sample). Storage, eviction and
the segment trees are the parent's, read through the replay seam (``sweeps.seams.replay``);
running games grow in place
(:class:`~sweeps.algorithms.growing_replay.GrowingPrioritizedEpisodeReplayBuffer`).

Used by DQN (``sweeps/algorithms/columnar_dqn.py``) and by Ape-X's replay shards
(``sweeps/algorithms/apex/replay.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.rllib.core.columns import Columns

from sweeps.algorithms.growing_replay import GrowingPrioritizedEpisodeReplayBuffer
from sweeps.seams.replay import (
    item_index,
    max_priority,
    min_tree,
    priority_exponent,
    raise_max_priority,
    sum_tree,
    tree_to_item,
)

# Extra batch columns carrying the replay indices of a sampled batch (popped before training).
TREE_IDX = "_replay_tree_idx"
ITEM_ID = "_replay_item_id"


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


def set_leaves(tree: Any, leaves: Sequence[int], values: Sequence[float]) -> None:
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


class ColumnarPrioritizedEpisodeReplayBuffer(GrowingPrioritizedEpisodeReplayBuffer):
    """RLlib's prioritized episode replay, sampled as a train batch of n-step transitions.

    One deliberate difference from the parent's sample: the parent never samples the last
    n−1 steps of an episode; here a finished episode's tail is sampled with the shorter n-step
    return up to the terminal (``n_step`` column = steps actually used), as in Ape-X. Steps
    whose n-step window is not yet complete (episode still running) are redrawn.
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
        # RLlib's config passes more (beta, metrics smoothing): sampling takes beta per call.
        kwargs = {k: v for k, v in kwargs.items() if k in ("batch_size_B", "batch_length_T")}
        super().__init__(capacity=capacity, alpha=alpha, **kwargs)
        self.priority_eps = float(priority_eps)
        self.rng = np.random.default_rng(seed)
        self.num_priority_updates = 0
        self.num_stale_priority_updates = 0

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
        sums = sum_tree(self)
        total = sums.sum()
        if not size or not item_index(self) or not total > 0.0:
            return None
        p_min = min_tree(self).min() / total
        max_weight = (p_min * size) ** (-beta)
        rows = self._draw(num_items, n_step, max_redraws * num_items, sums, total)
        if rows is None:
            return None

        tree_idx = np.array([r[0] for r in rows], dtype=np.int64)
        probs = np.array([sums[i] for i in tree_idx.tolist()]) / total
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

    def _draw(
        self, num_items: int, n_step: int, limit: int, sums: Any, total: float
    ) -> list[tuple[int, int, int, Any, int]] | None:
        """``num_items`` prioritized draws of complete n-step windows, each ``(tree index,
        episode index, timestep, episode, steps)``, in at most ``limit`` draws (else None)."""
        rows: list[tuple[int, int, int, Any, int]] = []
        draws = 0
        indices, idx_map, episodes = item_index(self), tree_to_item(self), self.episodes
        evicted = self.get_num_episodes_evicted()
        randoms = self.rng.random(limit) * total
        while len(rows) < num_items and draws < limit:
            tree_idx = sums.find_prefixsum_idx(randoms[draws])
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
        return rows if len(rows) == num_items else None

    def update_priorities_at(
        self, tree_idx: np.ndarray, item_id: np.ndarray, priorities: np.ndarray
    ) -> int:
        """Set new priorities (|TD error|) of sampled items; returns how many were applied
        (items evicted since they were sampled are skipped)."""
        idx_map, indices = tree_to_item(self), item_index(self)
        prios = np.abs(np.asarray(priorities, dtype=np.float64).reshape(-1)) + self.priority_eps
        prios = np.maximum(prios, 1e-12)  # as the parent: never a zero sampling weight
        weights = (prios ** priority_exponent(self)).tolist()
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
            set_leaves(sum_tree(self), leaves, [values[i] for i in leaves])
            set_leaves(min_tree(self), leaves, [values[i] for i in leaves])
            raise_max_priority(self, float(prios.max()))
        self.num_priority_updates += applied
        self.num_stale_priority_updates += len(weights) - applied
        return applied

    # --------------------------------------------------------------------------- stats

    def stats(self) -> dict[str, float]:
        """Fill and priority statistics (``mean_priority`` is the mean sampling weight p^α)."""
        size = self.get_num_timesteps()
        total = sum_tree(self).sum() if size else 0.0
        return {
            "num_env_steps": size,
            "capacity": self.capacity,
            "fill": size / self.capacity if self.capacity else math.nan,
            "num_episodes": self.get_num_episodes(),
            "num_env_steps_added": self.get_added_timesteps(),
            "num_env_steps_sampled": self.sampled_timesteps,
            "num_episodes_evicted": self.get_num_episodes_evicted(),
            "mean_priority": total / size if size else math.nan,
            "max_priority": max_priority(self),
            "num_priority_updates": self.num_priority_updates,
            "num_stale_priority_updates": self.num_stale_priority_updates,
        }

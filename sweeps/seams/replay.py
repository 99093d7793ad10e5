"""The replay seam: the internals of RLlib's prioritized episode replay buffer (read from Ray
2.60.0, ``ray/rllib/utils/replay_buffers/prioritized_episode_buffer.py`` and
``episode_replay_buffer.py``), and the class swap that makes a stored episode grow in place.

The suite's columnar buffer (``sweeps/algorithms/columnar_replay.py``) keeps RLlib's storage,
eviction and segment trees and samples them itself, as a train batch whose rows carry their
replay indices: it reads the buffer's item index, its two segment trees, their index map, the
priority exponent and the running maximum priority, none of which ``PrioritizedEpisodeReplayBuffer``
exposes. Ape-X's buffer (``sweeps/algorithms/apex/replay.py``) batches the tree writes of an
``add`` through the buffer's per-item hook. Running episodes grow in place
(``sweeps/algorithms/growing_replay.py``) by giving the observation buffer of a stored episode
the suite's class.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
    PrioritizedEpisodeReplayBuffer,
)


def item_index(buffer: Any) -> list[tuple[int, int, int]]:
    """The buffer's stored items, one ``(episode index, step, tree index)`` triple each
    (``EpisodeReplayBuffer._indices``; the episode index counts evicted episodes too), read from
    Ray 2.60.0 (``episode_replay_buffer.py``, ``prioritized_episode_buffer.py``).

    Waits for: a public read of a prioritized episode replay buffer's items in RLlib."""
    return buffer._indices


def sum_tree(buffer: Any) -> Any:
    """The buffer's ``SumSegmentTree`` of sampling weights ``p^α`` (``_sum_segment``), read
    from Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public read of a prioritized replay buffer's segment trees in RLlib."""
    return buffer._sum_segment


def min_tree(buffer: Any) -> Any:
    """The buffer's ``MinSegmentTree`` of sampling weights ``p^α`` (``_min_segment``), read
    from Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public read of a prioritized replay buffer's segment trees in RLlib."""
    return buffer._min_segment


def tree_to_item(buffer: Any) -> dict[int, int]:
    """The map from a segment tree index to the item's position in :func:`item_index`
    (``_tree_idx_to_sample_idx``), read from Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public read of a prioritized replay buffer's items in RLlib."""
    return buffer._tree_idx_to_sample_idx


def priority_exponent(buffer: Any) -> float:
    """The buffer's priority exponent α (``_alpha``: sampling weights are ``p^α``), read from
    Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public ``alpha`` of RLlib's ``PrioritizedEpisodeReplayBuffer``."""
    return buffer._alpha


def max_priority(buffer: Any) -> float:
    """The largest priority the buffer has seen (``_max_priority``: what a new item gets
    without one), read from Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public read of a prioritized replay buffer's maximum priority in RLlib."""
    return buffer._max_priority


def raise_max_priority(buffer: Any, priority: float) -> None:
    """Raise the buffer's maximum priority (``_max_priority``) to ``priority`` if larger, as
    RLlib's ``update_priorities`` does, read from Ray 2.60.0 (``prioritized_episode_buffer.py``).

    Waits for: a public way to set priorities by tree index (not only of the last sample) in
    RLlib."""
    buffer._max_priority = max(buffer._max_priority, priority)


def claim_tree_slot(buffer: Any, item: int) -> int:
    """A free segment-tree slot for item ``item`` (its position in :func:`item_index`): taken
    from ``_free_nodes``, ``_max_idx`` raised, mapped in ``_tree_idx_to_sample_idx``. The
    bookkeeping of ``PrioritizedEpisodeReplayBuffer._get_free_node_and_assign`` without its two
    tree writes (the caller writes the leaves), read from Ray 2.60.0
    (``prioritized_episode_buffer.py``).

    Waits for: a public batched ``add`` with per-step priorities in RLlib."""
    idx = buffer._free_nodes.popleft()
    buffer._max_idx = idx if idx > buffer._max_idx else buffer._max_idx
    buffer._tree_idx_to_sample_idx[idx] = item
    return idx


class TreeSlotHook(PrioritizedEpisodeReplayBuffer):
    """RLlib's prioritized episode replay with its per-item hook under a public name:
    ``_get_free_node_and_assign(sample_index, weight)``, which ``add`` calls for every stored
    step (a tree slot and its initial weight), is :meth:`assign_tree_slot`; a subclass overrides
    that and calls ``super().assign_tree_slot`` for RLlib's own. Read from Ray 2.60.0
    (``prioritized_episode_buffer.py``).

    Waits for: a public batched ``add`` with per-step priorities in RLlib."""

    def _get_free_node_and_assign(self, sample_index: int, weight: float = 1.0) -> int:
        return self.assign_tree_slot(sample_index, weight)

    def assign_tree_slot(self, sample_index: int, weight: float = 1.0) -> int:
        """RLlib's own: a free slot, its leaves set to ``weight^α``; returns the slot."""
        return super()._get_free_node_and_assign(sample_index, weight)


def grow_in_place(buffer: Any, cls: type) -> None:
    """Give ``buffer`` (an ``InfiniteLookbackBuffer`` RLlib built: a stored episode's
    observations) the class ``cls``, a subclass with no state of its own at creation: the
    ``__class__`` of this very object is replaced. Not a subclass RLlib builds: its
    ``SingleAgentEpisode`` creates the buffer with RLlib's own class (no factory names another),
    and a new object in its place would re-run RLlib's constructor and ``space`` setter on data
    RLlib already set up; the swap keeps the object and its state untouched. Read from Ray
    2.60.0 (``ray/rllib/env/utils/infinite_lookback_buffer.py``, ``single_agent_episode.py``).

    Waits for: a public way to choose the ``InfiniteLookbackBuffer`` class of an episode (or of
    the episodes a replay buffer stores) in RLlib."""
    buffer.__class__ = cls


def seed_sampling(buffer: Any, seed: int | None) -> None:
    """Seed the draws of ``buffer`` (the algorithm's local replay, DQN's; None: nothing to do)
    from the run's ``seed``: RLlib's episode replay buffers draw their samples from ``self.rng``,
    which ``EpisodeReplayBuffer.__init__`` makes unseeded (``np.random.default_rng(seed=None)``,
    read from Ray 2.60.0, ``episode_replay_buffer.py``), so two runs of one seed replayed
    different batches. The suite's columnar buffer (``self.rng`` too) is seeded the same way,
    over any seed it was built with: the run's seed is the one that counts. Ape-X's shards are
    seeded where they are built (``apex/config.py``).

    Waits for: a seed in RLlib's ``replay_buffer_config``."""
    if buffer is None or seed is None or not hasattr(buffer, "rng"):
        return
    buffer.rng = np.random.default_rng(int(seed))

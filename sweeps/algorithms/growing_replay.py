"""Episode replay whose running episodes grow in amortised O(chunk) time, not O(episode).

RLlib's episode replay buffers keep a running episode as one ``SingleAgentEpisode`` and append
each new chunk to it (``SingleAgentEpisode.concat_episode``): the stored observations are a numpy
array, copied whole on every chunk (``np.delete`` of the boundary observation, then
``np.concatenate``). Storing an episode of L steps in chunks of k steps copies O(L²/k)
observations. On Pong (42x42x4 frames; games of 800 to several thousand steps) that is a large
share of DQN's driver time at short fragments, and it grows as the games grow longer
(``benchmarks/replay_add.py`` measures both buffers).

:class:`GrowingLookbackBuffer` keeps a stored episode's observations in an array with spare room
that doubles when full: ``extend`` writes into the room and ``pop`` of the last item shortens a
view, so a chunk costs O(k). When the episode ends its observations are copied once into an
array of their own size, so finished episodes in the replay hold no spare room.
:class:`GrowingPrioritizedEpisodeReplayBuffer` is RLlib's ``PrioritizedEpisodeReplayBuffer``
with it (DQN's ``replay_buffer_config["type"]``); Ape-X's replay buffer subclasses it. Storage,
sampling, priorities and eviction are the parent's, unchanged.
"""

from __future__ import annotations

from abc import ABCMeta
from typing import Any

import numpy as np
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
    PrioritizedEpisodeReplayBuffer,
)

from sweeps.seams.replay import grow_in_place


class GrowingLookbackBuffer(InfiniteLookbackBuffer):
    """An ``InfiniteLookbackBuffer`` whose numpy ``data`` is a view on a larger array, so that
    appending at the end and popping the last item copy only what is added.

    Anything else (nested data, lists, a ``data`` that someone else replaced) falls back to the
    parent's behaviour; the next append then starts a new array with room."""

    _store: np.ndarray | None = None  # the array with room; ``data`` is ``_store[:n]``
    _view: np.ndarray | None = None  # the ``data`` this buffer last set

    @classmethod
    def adopt(cls, buffer: InfiniteLookbackBuffer) -> None:
        """Make ``buffer`` (a stored episode's) grow in place from now on: it becomes one of
        this class (seam: ``sweeps.seams.replay.grow_in_place``)."""
        if type(buffer) is InfiniteLookbackBuffer:
            grow_in_place(buffer, cls)

    def _owns_data(self) -> bool:
        return self._store is not None and self.data is self._view

    def _set(self, view: np.ndarray) -> None:
        self.data = self._view = view

    def extend(self, items) -> None:
        data = self.data
        fits = (
            self.finalized
            and isinstance(data, np.ndarray)
            and isinstance(items, np.ndarray)
            and items.dtype == data.dtype
            and items.shape[1:] == data.shape[1:]
        )
        if not fits:
            self.release()
            super().extend(items)
            return
        n, k = len(data), len(items)
        if not self._owns_data() or len(self._store) < n + k:
            store = np.empty((max(2 * (n + k), 16), *data.shape[1:]), dtype=data.dtype)
            store[:n] = data
            self._store = store
        self._store[n : n + k] = items
        self._set(self._store[: n + k])

    def pop(self, index: int = -1) -> None:
        if self._owns_data() and len(self.data) and index in (-1, len(self.data) - 1):
            self._set(self.data[:-1])
            return
        self.release()
        super().pop(index)

    def release(self) -> None:
        """Drop the spare room: ``data`` becomes an array of its own size."""
        if self._owns_data():
            self.data = self.data.copy()
        self._store = self._view = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickle (checkpoints, Ray transport) the data alone, not the array with room.
        state = dict(self.__dict__)
        state.pop("_store", None)
        state.pop("_view", None)
        return state


class _TypeReadAsName(ABCMeta):
    """RLlib 2.60 builds DQN's replay after ``"EpisodeReplayBuffer" in
    replay_buffer_config["type"]`` (``Algorithm._create_local_replay_buffer_if_necessary``): a
    string test, on a type its own config loading has turned into a class
    (``AlgorithmConfig.update_from_dict``, as every Tune trial does). The test reads the class's
    name here, so a replay class works in a Tune trial as RLlib's built-in names do."""

    def __contains__(cls, text: object) -> bool:
        return isinstance(text, str) and text in cls.__name__


class GrowingPrioritizedEpisodeReplayBuffer(
    PrioritizedEpisodeReplayBuffer, metaclass=_TypeReadAsName
):
    """RLlib's prioritized episode replay, its running episodes growing in place (see the
    module docstring). Same arguments, same samples."""

    def add(self, episodes: Any, weight: float | None = None, **kwargs: Any) -> None:
        episodes = list(episodes) if isinstance(episodes, list | tuple) else [episodes]
        # The stored games these chunks continue grow in place (their observations, by far
        # their largest part) ...
        for episode in episodes:
            stored = self.stored_episode(episode.id_)
            if stored is not None and not stored.is_done:
                GrowingLookbackBuffer.adopt(stored.observations)
        super().add(episodes, weight=weight, **kwargs)
        # ... and the games a chunk ended drop their spare room.
        for episode in episodes:
            stored = self.stored_episode(episode.id_) if episode.is_done else None
            if stored is not None and isinstance(stored.observations, GrowingLookbackBuffer):
                stored.observations.release()

    def stored_episode(self, episode_id: str) -> Any:
        """The stored episode of this id (all its chunks so far), or None."""
        index = self.episode_id_to_index.get(episode_id)
        if index is None:
            return None
        return self.episodes[index - self.get_num_episodes_evicted()]

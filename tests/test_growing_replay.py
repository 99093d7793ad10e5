"""Episodes that grow in place in the replay (sweeps/algorithms/growing_replay.py): same contents
and same samples as RLlib's buffer, finished episodes without spare room. No Ray."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
    PrioritizedEpisodeReplayBuffer,
)

from sweeps.algorithms.growing_replay import (
    GrowingLookbackBuffer,
    GrowingPrioritizedEpisodeReplayBuffer,
)

OBS = gym.spaces.Box(0, 255, (3, 3), np.uint8)
ACT = gym.spaces.Discrete(4)


def test_extend_and_pop_match_the_parent():
    rng = np.random.default_rng(0)
    start = rng.integers(0, 255, (5, 3, 3), dtype=np.uint8)
    plain = InfiniteLookbackBuffer(start.copy(), lookback=1)
    growing = InfiniteLookbackBuffer(start.copy(), lookback=1)
    GrowingLookbackBuffer.adopt(growing)
    for _ in range(40):
        items = rng.integers(0, 255, (int(rng.integers(1, 9)), 3, 3), dtype=np.uint8)
        for buffer in (plain, growing):
            buffer.pop()
            buffer.extend(items)
        assert np.array_equal(plain.data, growing.data) and len(plain) == len(growing)
    assert growing._store is not None and len(growing._store) >= len(growing.data)
    growing.release()
    assert growing._store is None and growing.data.base is None
    assert np.array_equal(plain.data, growing.data)
    # A pickled buffer carries its data only, and unpickles to the same contents.
    growing.extend(start)
    clone = pickle.loads(pickle.dumps(growing))
    assert np.array_equal(clone.data, growing.data) and "_store" not in clone.__dict__


def test_a_replaced_or_nested_data_falls_back_to_the_parent():
    growing = InfiniteLookbackBuffer(np.zeros((3, 3, 3), np.uint8))
    GrowingLookbackBuffer.adopt(growing)
    growing.extend(np.ones((2, 3, 3), np.uint8))
    growing.data = np.full((4, 3, 3), 7, np.uint8)  # someone else sets the data
    growing.extend(np.ones((1, 3, 3), np.uint8))
    assert len(growing.data) == 5 and (growing.data[:4] == 7).all()
    growing.pop(0)  # not the last item: the parent's delete
    assert len(growing.data) == 4 and growing._store is None


def _chunks(rng: np.random.Generator, length: int, chunk: int, episode_id: str):
    """An episode of ``length`` steps, ending terminated, cut into chunks the way env runners
    hand them over (numpy'd, each starting with the previous chunk's last observation)."""
    episode = SingleAgentEpisode(id_=episode_id, observation_space=OBS, action_space=ACT)
    episode.add_env_reset(observation=OBS.sample())
    out = []
    for t in range(length):
        episode.add_env_step(
            observation=rng.integers(0, 255, (3, 3), dtype=np.uint8),
            action=int(rng.integers(4)),
            reward=float(rng.normal()),
            terminated=t == length - 1,
        )
        if episode.is_done:
            out.append(episode.to_numpy())
        elif len(episode) == chunk:
            out.append(episode.to_numpy())
            episode = episode.cut()
    return out


@pytest.mark.parametrize("capacity", [10_000, 150])  # no eviction; evicting while adding
def test_the_buffer_stores_and_samples_as_rllib_does(capacity):
    rng = np.random.default_rng(1)
    a = _chunks(rng, 97, 8, "a")
    b = _chunks(rng, 61, 8, "b")
    rounds = [[x, y] for x, y in zip(a, b, strict=False)] + [[x] for x in a[len(b) :]]
    plain = PrioritizedEpisodeReplayBuffer(capacity=capacity, alpha=0.6)
    growing = GrowingPrioritizedEpisodeReplayBuffer(capacity=capacity, alpha=0.6)
    for i, chunks in enumerate(rounds):
        plain.add(_copies(chunks))
        growing.add(_copies(chunks))
        if i == 3 and capacity > 150:  # "a" is running: its observations grow in place
            running = growing.episodes[growing.episode_id_to_index["a"]]
            assert isinstance(running.observations, GrowingLookbackBuffer)
            assert running.observations._store is not None
    assert [e.id_ for e in plain.episodes] == [e.id_ for e in growing.episodes]
    for p, g in zip(plain.episodes, growing.episodes, strict=True):
        assert np.array_equal(p.get_observations(), g.get_observations())
        assert np.array_equal(p.get_rewards(), g.get_rewards())
        # Every episode here ended: none keeps spare room.
        assert getattr(g.observations, "_store", None) is None
        assert g.observations.data.base is None
        if capacity > 150:  # no eviction: every episode was stored in several chunks
            assert isinstance(g.observations, GrowingLookbackBuffer)
    for buffer in (plain, growing):
        buffer.rng = np.random.default_rng(3)  # the parent draws from .rng
    ps = plain.sample(num_items=16, n_step=3, gamma=0.9, beta=0.4)
    gs = growing.sample(num_items=16, n_step=3, gamma=0.9, beta=0.4)
    for p, g in zip(ps, gs, strict=True):
        assert np.array_equal(p.get_observations(), g.get_observations())
        assert np.array_equal(p.get_rewards(), g.get_rewards())


def _copies(chunks):
    return [pickle.loads(pickle.dumps(c)) for c in chunks]


def test_the_run_s_seed_sets_what_rllib_s_replay_draws():
    """RLlib's replay buffer draws its samples unseeded; ``seams.replay.seed_sampling`` seeds
    it from the run's seed (the suite callbacks do, for the algorithm's local replay): two
    buffers of the same contents and seed replay the same batches, other seeds other ones."""
    from sweeps.seams.replay import seed_sampling

    def sampled(seed):
        rng = np.random.default_rng(1)
        buffer = PrioritizedEpisodeReplayBuffer(capacity=10_000, alpha=0.6)
        buffer.add(_copies(_chunks(rng, 97, 8, "a") + _chunks(rng, 61, 8, "b")))
        seed_sampling(buffer, seed)
        batch = buffer.sample(num_items=32, n_step=1, gamma=0.9, beta=0.4)
        return np.concatenate([e.get_rewards() for e in batch])

    assert np.array_equal(sampled(7), sampled(7))
    assert not np.array_equal(sampled(7), sampled(8))
    seed_sampling(None, 7)  # an algorithm without a local replay: nothing to seed

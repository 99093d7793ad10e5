"""DQN with its replay sampled as columns (``sweeps/algorithms/columnar_dqn.py``).

Fast tests: the config's defaults and checks, and the replay as a Tune trial builds it. Slow
tests (``-m slow``): the built algorithm's updates, priorities and weight sync on CartPole, and
that it learns there. The replay's sampling itself is tested in ``tests/test_apex.py`` (Ape-X's
replay is the same buffer with per-step initial priorities).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_TRAINING_STEP_CALLS_PER_ITERATION,
)

from sweeps.algorithms.columnar_dqn import ColumnarDQN, ColumnarDQNConfig
from sweeps.algorithms.columnar_replay import ColumnarPrioritizedEpisodeReplayBuffer


def _cartpole(**training) -> ColumnarDQNConfig:
    return (
        ColumnarDQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, rollout_fragment_length=16)
        .training(
            **{
                "lr": 5e-4,
                "train_batch_size": 32,
                "num_steps_sampled_before_learning_starts": 200,
                "training_intensity": 16.0,  # 32 / 16 native ratio -> 8 updates per round
                "target_network_update_freq": 500,
                "epsilon": [(0, 1.0), (5_000, 0.02)],
                "replay_buffer_config": {"capacity": 20_000, "alpha": 0.6, "beta": 0.4},
                **training,
            }
        )
        .debugging(seed=0, log_level="ERROR")
    )


def test_the_config_defaults_to_the_columnar_replay_and_checks_it() -> None:
    config = ColumnarDQNConfig()
    assert config.algo_class is ColumnarDQN
    assert ColumnarDQN.get_default_config().algo_class is ColumnarDQN
    assert config.replay_buffer_config["type"] is ColumnarPrioritizedEpisodeReplayBuffer
    _cartpole().validate()
    with pytest.raises(ValueError, match="ColumnarPrioritizedEpisodeReplayBuffer"):
        _cartpole(replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer"}).validate()
    with pytest.raises(ValueError, match="integer n_step"):
        _cartpole(n_step=(1, 3)).validate()


def test_a_trial_builds_the_columnar_replay() -> None:
    """As a Tune trial builds it: the config through a dict (the type becomes a class path and
    back; RLlib's replay constructor tests it as a string), the replay's extra settings
    (beta, RLlib's metrics smoothing) left to the sample call."""
    from ray.rllib.algorithms.algorithm import Algorithm

    config = ColumnarDQNConfig.from_dict(_cartpole().to_dict())
    assert config.algo_class is ColumnarDQN
    replay = Algorithm._create_local_replay_buffer_if_necessary(
        SimpleNamespace(config=config), config.to_dict()
    )
    assert type(replay) is ColumnarPrioritizedEpisodeReplayBuffer
    assert replay.capacity == 20_000 and replay._alpha == 0.6


def _weights(algo) -> np.ndarray:
    state = algo.learner_group.get_weights()
    return np.concatenate([np.ravel(np.asarray(v)) for v in state["default_policy"].values()])


@pytest.mark.slow
def test_each_round_makes_rllibs_number_of_updates_and_writes_priorities(ray_session) -> None:
    """After the learning start, each training step samples one round and makes
    ``training_intensity``'s updates of one batch each; their priorities go back to the replay
    and the runner gets the new weights."""
    config = _cartpole()
    store, updates = calculate_rr_weights(config)
    assert (store, updates) == (1, 8)
    algo = config.build()
    try:
        while algo.local_replay_buffer.get_num_timesteps() < 200:
            algo.train()
        replay = algo.local_replay_buffer
        sampled_before = replay.sampled_timesteps
        updated_before = replay.num_priority_updates
        before = _weights(algo)
        result = algo.train()
        iterations = result[NUM_TRAINING_STEP_CALLS_PER_ITERATION]
        assert replay.sampled_timesteps - sampled_before == iterations * updates * 32
        assert replay.num_priority_updates - updated_before == iterations * updates * 32
        assert not np.allclose(_weights(algo), before)
        runner = algo.env_runner.module.get_state()
        learner = algo.learner_group.get_weights()["default_policy"]
        for name, value in runner.items():
            np.testing.assert_allclose(np.asarray(value), np.asarray(learner[name]), rtol=1e-6)
    finally:
        algo.stop()


@pytest.mark.slow
def test_columnar_dqn_learns_cartpole(ray_session) -> None:
    """as-test: a training return >= 150 (mean of the last episodes) within 40k env steps."""
    algo = _cartpole().build()
    try:
        best, steps = -np.inf, 0
        while steps < 40_000 and best < 150:
            result = algo.train()
            steps = result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME]
            best = max(best, result[ENV_RUNNER_RESULTS].get(EPISODE_RETURN_MEAN, -np.inf))
        assert best >= 150, f"training return {best:.0f} after {steps} env steps"
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_restored_dqn_refills_its_replay_before_it_learns(ray_session, tmp_path) -> None:
    """RLlib's checkpoints hold no replay (new API stack): a restored DQN learns again once its
    new replay has been given ``num_steps_sampled_before_learning_starts`` env steps, as a new
    one does. (By RLlib's rule, the lifetime env steps, it trained at once, batch after batch,
    on the first fragments after a resume.)"""
    config = _cartpole()
    algo = config.build()
    try:
        while algo.local_replay_buffer.sampled_timesteps == 0:  # until it has learned
            algo.train()
        algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    restored = config.build()
    try:
        restored.restore_from_path(str(tmp_path / "checkpoint"))
        lifetime = restored.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME))
        assert lifetime >= 200 and restored.local_replay_buffer.get_num_timesteps() == 0
        added_at_update, update = [], restored._update

        def counted_update() -> bool:
            added_at_update.append(restored.local_replay_buffer.get_added_timesteps())
            return update()

        restored._update = counted_update
        for _ in range(20):
            restored.train()
            if added_at_update:
                break
    finally:
        restored.stop()
    assert added_at_update, "no update after the restore"
    assert min(added_at_update) >= 200, added_at_update[:5]

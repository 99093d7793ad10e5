"""Ape-X DQN (``sweeps.algorithms.apex``) and the masked DQN module (``masked_dqn``).

Fast tests (no Ray): the ε schedule, the replay buffer subclass, initial priorities, the masked
module. Slow tests (``-m slow``; one shared Ray instance, at most one algorithm alive at a time):
the built algorithm's runners, asynchronous sampling, priority write-back, weight sync,
learning on ``Cabs-v0`` and masking on ``CabsRequests-v0``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_NEXT_PREDS, QF_PREDS
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

from envs import CABS, CABS_REQUESTS, register_envs
from envs.cabs import MASK_START, NUM_ACTIONS, CabsEnv
from sweeps.algorithms.apex import (
    APEX_RESULTS,
    ITEM_ID,
    TREE_IDX,
    ApexDQN,
    ApexDQNConfig,
    ApexEpisodeReplayBuffer,
    cabs_config,
    current_epsilon,
    game_epsilons,
    initial_priorities,
    per_runner_epsilon,
    register,
    strip_for_replay,
)
from sweeps.algorithms.masked_dqn import (
    MaskedDQNTorchRLModule,
    dqn_module_class,
    dqn_module_spec,
)

register_envs()

OBS_SPACE = gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(4)


def make_episode(length: int, *, terminated: bool = True, offset: float = 0.0, id_=None):
    """Episode whose obs at step t is [offset + t] * 3, action t % 4 and reward t + 1."""
    return SingleAgentEpisode(
        id_=id_,
        observations=[np.full(3, offset + t, np.float32) for t in range(length + 1)],
        actions=[t % 4 for t in range(length)],
        rewards=[float(t + 1) for t in range(length)],
        terminated=terminated,
        observation_space=OBS_SPACE,
        action_space=ACT_SPACE,
        len_lookback_buffer=0,
    ).to_numpy()


def leaf_weights(buffer: ApexEpisodeReplayBuffer) -> np.ndarray:
    """Sampling weights p^alpha of the stored steps, in storage order."""
    return np.array([buffer._sum_segment[tree_idx] for _, _, tree_idx in buffer._indices])


# ================================================================== ε schedule (pure)


def test_per_runner_epsilon_schedule():
    assert per_runner_epsilon(0, 1) == pytest.approx(0.4)
    eps = [per_runner_epsilon(i, 4) for i in range(4)]
    expected = [0.4 ** (1 + 7 * i / 3) for i in range(4)]
    assert eps == pytest.approx(expected)
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4**8)
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))
    assert per_runner_epsilon(1, 2, base=0.5, alpha=1.0) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        per_runner_epsilon(4, 4)


def test_game_epsilons_make_every_game_an_actor():
    # 1 runner of 8 games: the paper's 8-actor schedule across the games.
    assert game_epsilons(0, 1, 8) == pytest.approx([per_runner_epsilon(j, 8) for j in range(8)])
    # 2 runners of 3 games: runner 1 holds actors 3, 4, 5 of 6.
    assert game_epsilons(1, 2, 3) == pytest.approx([per_runner_epsilon(k, 6) for k in (3, 4, 5)])
    assert game_epsilons(0, 1, 1) == pytest.approx([0.4])


def test_per_game_epsilon_explores_each_game_at_its_own_rate():
    """RLlib's DQN ε-greedy reads a tensor ε row by row: games at ε 0 always act greedily,
    games at ε 1 pick uniformly at random."""
    from sweeps.algorithms.apex.exploration import _set_module_epsilon

    module = _masked_module(0.0)
    env = CabsEnv(requests=True)
    obs = np.stack([env.reset(seed=s)[0] for s in range(4)])
    obs[:, MASK_START:] = 1.0  # every action available
    batch = {Columns.OBS: torch.from_numpy(obs)}
    _set_module_epsilon(module, (0.0, 1.0, 0.0, 1.0))
    greedy = module.forward_inference(batch)[Columns.ACTIONS].numpy()
    explored = np.stack(
        [module.forward_exploration(batch, t=t)[Columns.ACTIONS].numpy() for t in range(200)]
    )
    assert (explored[:, [0, 2]] == greedy[[0, 2]]).all()
    for game in (1, 3):
        assert (explored[:, game] != greedy[game]).mean() > 0.5


@pytest.mark.parametrize("runners, fed", [(0, 1), (1, 1), (2, 2), (4, 4), (8, 4)])
def test_only_the_shards_runners_feed_are_built_and_share_the_capacity(runners, fed):
    """Runner i feeds shard i % S: with one runner and four shards, three would stay empty and
    the replay would hold a quarter of its capacity."""
    config = ApexDQNConfig().env_runners(num_env_runners=runners).apex(num_replay_buffer_shards=4)
    config.training(replay_buffer_config={"capacity": 200_000})
    assert config.num_replay_shards_fed == fed
    assert config.replay_shard_buffer_kwargs(0)["capacity"] == 200_000 // fed


def test_config_api_and_defaults():
    config = ApexDQNConfig()
    # Faithful defaults (old RLlib Ape-X / the paper).
    assert config.num_replay_buffer_shards == 4
    assert config.max_weight_sync_delay == 400
    assert (config.exploration_epsilon_base, config.exploration_alpha) == (0.4, 7.0)
    assert config.exploration_per_game is False
    assert (config.n_step, config.double_q, config.dueling) == (3, True, True)
    assert config.replay_buffer_config["alpha"] == 0.6
    assert config.replay_buffer_config["beta"] == 0.4
    assert config.num_steps_sampled_before_learning_starts == 50_000
    assert config.algo_class is ApexDQN
    config.apex(num_replay_buffer_shards=2, max_weight_sync_delay=10)
    config.training(exploration_alpha=3.0, lr=1e-3, max_requests_in_flight_per_replay_shard=3)
    assert (config.num_replay_buffer_shards, config.max_weight_sync_delay) == (2, 10)
    assert (config.exploration_alpha, config.lr) == (3.0, 1e-3)
    assert config.max_requests_in_flight_per_replay_shard == 3
    assert config.replay_shard_buffer_kwargs(0)["capacity"] == 2_000_000 // 2


def test_training_return_counts_only_the_games_at_low_epsilon():
    """training_return_max_epsilon: a game played at a higher fixed ε (or at none known) does
    not count in the training return; without the setting every game does."""
    from types import SimpleNamespace

    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from sweeps.harness import keys
    from sweeps.harness.callbacks import SuiteCallbacks

    class Episode:
        def __init__(self, ret: float) -> None:
            self.ret = ret

        def get_return(self) -> float:
            return self.ret

    def logged(cap: float | None, epsilon, returns: dict[int, float]) -> float | None:
        config = SimpleNamespace(
            in_evaluation=False,
            metrics_num_episodes_for_smoothing=20,
            training_return_max_epsilon=cap,
        )
        # what _set_module_epsilon leaves on a DQN module, on a stand-in without a schedule
        module = SimpleNamespace() if epsilon is None else SimpleNamespace(_apex_epsilon=epsilon)
        runner = SimpleNamespace(config=config, module=module)
        callbacks, metrics = SuiteCallbacks(), MetricsLogger(root=True)
        for index, ret in returns.items():
            callbacks.on_episode_end(
                episode=Episode(ret), env_runner=runner, metrics_logger=metrics, env_index=index
            )
        games = metrics.peek(keys.TRAINING_GAMES[-1], default=math.nan)  # (end, return) each
        return float(np.mean([ret for _, ret in games])) if isinstance(games, list) else None

    games = (0.4, 0.16, 0.004, 0.001)
    assert logged(0.01, games, {0: -21.0, 2: 15.0, 1: -5.0, 3: 17.0}) == pytest.approx(16.0)
    assert logged(None, games, {0: -21.0, 2: 15.0}) == pytest.approx(-3.0)
    assert logged(0.01, 0.4, {0: -21.0}) is None  # the runner's one ε is too high
    assert logged(0.01, None, {0: -21.0}) is None  # no Ape-X ε known: not counted
    with pytest.raises(ValueError, match="training_return_max_epsilon"):
        ApexDQNConfig().apex(training_return_max_epsilon=2.0).validate()


def test_sample_ahead_limit_resolves_and_validates():
    config = ApexDQNConfig().env_runners(
        num_env_runners=3, num_envs_per_env_runner=4, rollout_fragment_length=16
    )
    assert config.sample_ahead_limit() == 2 * 16 * 4 * 3  # "auto": two requests per runner
    assert config.apex(max_env_steps_sampled_ahead=100).sample_ahead_limit() == 100
    assert config.apex(max_env_steps_sampled_ahead=None).sample_ahead_limit() is None
    with pytest.raises(ValueError, match="max_env_steps_sampled_ahead"):
        config.apex(max_env_steps_sampled_ahead=-1).environment(CABS).validate()


# ================================================================== replay buffer (pure)


def test_buffer_takes_per_step_initial_priorities():
    buffer = ApexEpisodeReplayBuffer(capacity=100, alpha=0.5, priority_eps=0.0, seed=0)
    first, second = make_episode(4), make_episode(3, offset=100)
    buffer.add([first, second], priorities=[np.array([1.0, 4.0, 9.0, 16.0]), np.ones(3)])
    assert leaf_weights(buffer) == pytest.approx([1, 2, 3, 4, 1, 1, 1])
    # Without priorities: the parent's behaviour (max priority seen so far).
    buffer.add([make_episode(2, offset=200)])
    assert leaf_weights(buffer)[-2:] == pytest.approx([16**0.5] * 2)
    with pytest.raises(ValueError):
        buffer.add([make_episode(2)], priorities=[np.ones(2), np.ones(2)])


def test_buffer_sample_columns_nstep_and_terminal_tail():
    buffer = ApexEpisodeReplayBuffer(capacity=100, alpha=1.0, seed=0)
    buffer.add([make_episode(5)], priorities=[np.ones(5)])
    batch = buffer.sample_transitions(400, n_step=3, gamma=0.5, beta=0.4)
    for k in range(400):
        t = int(batch[Columns.OBS][k][0])
        steps = min(3, 5 - t)
        assert batch["n_step"][k] == steps
        assert batch[Columns.NEXT_OBS][k][0] == t + steps
        assert batch[Columns.ACTIONS][k] == t % 4
        assert batch[Columns.REWARDS][k] == pytest.approx(
            sum(0.5**j * (t + j + 1) for j in range(steps))
        )
        assert bool(batch[Columns.TERMINATEDS][k]) == (t + steps == 5)
    # Uniform priorities: every step (the terminal tail included) is drawn, weights all 1.
    assert set(batch[Columns.OBS][:, 0].astype(int)) == set(range(5))
    assert batch["weights"] == pytest.approx(np.ones(400))
    # An unfinished episode's last n-1 steps are not sampled until their window completes.
    running = ApexEpisodeReplayBuffer(capacity=100, seed=0)
    running.add([make_episode(5, terminated=False)])
    obs = running.sample_transitions(200, n_step=3, gamma=0.9)[Columns.OBS][:, 0]
    assert set(obs.astype(int)) == {0, 1, 2}


def test_buffer_prioritized_sampling_and_priority_updates():
    buffer = ApexEpisodeReplayBuffer(capacity=1000, alpha=1.0, priority_eps=0.0, seed=1)
    prios = np.full(20, 0.01)
    prios[7] = 10.0
    buffer.add([make_episode(20)], priorities=[prios])
    batch = buffer.sample_transitions(500, n_step=1, gamma=0.9, beta=1.0)
    drawn = batch[Columns.OBS][:, 0].astype(int)
    assert np.mean(drawn == 7) > 0.9  # p = 10 / (10 + 19 * 0.01) ~ 0.98
    # Importance weights correct for it: the rare items get the largest weight (max = 1).
    assert batch["weights"][drawn == 7].max() < batch["weights"][drawn != 7].max() == 1.0
    # Priority write-back: demote the hot item, it stops dominating.
    hot = drawn == 7
    applied = buffer.update_priorities_at(
        batch[TREE_IDX][hot], batch[ITEM_ID][hot], np.zeros(hot.sum())
    )
    assert applied == hot.sum()
    drawn2 = buffer.sample_transitions(500, n_step=1, gamma=0.9)[Columns.OBS][:, 0]
    assert np.mean(drawn2 == 7) < 0.2
    # Priorities for evicted (and reused) slots are dropped, not misapplied.
    old = buffer.sample_transitions(50, n_step=1, gamma=0.9)
    buffer.add([make_episode(600, offset=1000)])
    buffer.add([make_episode(600, offset=5000)])
    before = leaf_weights(buffer).copy()
    assert buffer.update_priorities_at(old[TREE_IDX], old[ITEM_ID], np.full(50, 99.0)) == 0
    assert leaf_weights(buffer) == pytest.approx(before)
    assert buffer.stats()["num_stale_priority_updates"] == 50


def test_buffer_survives_a_gap_between_chunks():
    """A chunk whose predecessor never reached the buffer starts a new stored episode (the
    parent class would fail an assertion); later chunks follow it."""
    whole = make_episode(30, terminated=True)
    first, second, third = whole[0:10], whole[15:20], whole[20:30]  # steps 10..14 missing
    buffer = ApexEpisodeReplayBuffer(capacity=1000, seed=0)
    for chunk in (first, second, third):
        buffer.add([chunk])
    assert buffer.get_num_timesteps() == 25
    assert buffer.get_num_episodes() == 2
    assert buffer.stats()["num_unlinked_chunks"] == 1
    batch = buffer.sample_transitions(300, n_step=3, gamma=0.9)
    starts = batch[Columns.OBS][:, 0].astype(int)
    assert set(starts) <= set(range(0, 10)) | set(range(15, 30))
    assert (batch[Columns.NEXT_OBS][:, 0] - starts == batch["n_step"]).all()


def _small_dqn_module():
    """RLlib's DQN module on the test spaces (one hidden layer of 8)."""
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import (
        DefaultDQNTorchRLModule,
    )
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    config = DQNConfig().rl_module(model_config={"fcnet_hiddens": [8]})
    return RLModuleSpec(
        module_class=DefaultDQNTorchRLModule,
        observation_space=OBS_SPACE,
        action_space=ACT_SPACE,
        model_config=config.model_config,
    ).build()


def test_initial_priorities_are_nstep_td_errors():
    module = _small_dqn_module()
    done, running = make_episode(4), make_episode(3, terminated=False, offset=10)
    gamma, n = 0.9, 2
    prios = initial_priorities(module, [done, running], n, gamma)
    for episode, p in zip([done, running], prios, strict=True):
        obs = torch.from_numpy(np.asarray(episode.get_observations()))
        q = module.compute_q_values({Columns.OBS: obs})[QF_PREDS].detach().numpy()
        length = len(episode)
        for t in range(length):
            boot = min(t + n, length)
            ret = sum(gamma ** (k - t) * episode.get_rewards(k) for k in range(t, boot))
            terminal = boot == length and episode.is_terminated
            target = ret + (0.0 if terminal else gamma ** (boot - t) * q[boot].max())
            assert p[t] == pytest.approx(abs(q[t, episode.get_actions(t)] - target), rel=1e-5)


def test_initial_priorities_from_kept_q_values_match_a_fresh_forward():
    """Chunks carrying the Q-values of their exploration forward (``QF_PREDS`` in
    extra_model_outputs, as ``emit_q_values`` makes the runner keep them) get the priorities of
    one forward over all their frames; replay is shipped the chunks without them."""
    from sweeps.algorithms.apex.actor import chunk_q_values, kept_q_values

    module = _small_dqn_module()

    def with_kept_q(length: int, terminated: bool, offset: float) -> SingleAgentEpisode:
        obs = [np.full(3, offset + t, np.float32) for t in range(length + 1)]
        with torch.no_grad():
            q = module.compute_q_values({Columns.OBS: torch.from_numpy(np.stack(obs[:-1]))})
        return SingleAgentEpisode(
            observations=obs,
            actions=[t % 4 for t in range(length)],
            rewards=[float(t + 1) for t in range(length)],
            extra_model_outputs={QF_PREDS: list(q[QF_PREDS].numpy())},
            terminated=terminated,
            observation_space=OBS_SPACE,
            action_space=ACT_SPACE,
            len_lookback_buffer=0,
        ).to_numpy()

    kept = [with_kept_q(5, True, 0.0), with_kept_q(4, False, 20.0)]
    plain = [make_episode(3, offset=40.0), make_episode(0)]  # no Q kept, and an empty chunk
    assert kept_q_values(kept[0]).shape == (5, 4) and kept_q_values(plain[0]) is None
    q = chunk_q_values(module, kept + plain)
    assert [None if x is None else x.shape for x in q] == [(6, 4), (5, 4), (4, 4), None]
    n, gamma = 3, 0.9
    mixed = initial_priorities(module, kept + plain, n, gamma)
    strip_for_replay(kept)
    assert all(QF_PREDS not in e.extra_model_outputs for e in kept)
    fresh = initial_priorities(module, kept + plain, n, gamma)
    for a, b in zip(mixed, fresh, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ================================================================== masked module (pure)


def _masked_module(epsilon: float) -> MaskedDQNTorchRLModule:
    from ray.rllib.algorithms.dqn import DQNConfig

    config = (
        DQNConfig()
        .environment(CABS_REQUESTS)
        .training(epsilon=epsilon)
        .rl_module(rl_module_spec=dqn_module_spec(CABS_REQUESTS, {"fcnet_hiddens": [32]}))
    )
    module = config.get_rl_module_spec(env=gym.make(CABS_REQUESTS)).build()
    assert isinstance(module, MaskedDQNTorchRLModule)
    return module


def test_module_spec_helper():
    assert dqn_module_class(CABS_REQUESTS) is MaskedDQNTorchRLModule
    assert dqn_module_class(CABS) is not MaskedDQNTorchRLModule
    spec = dqn_module_spec(CABS_REQUESTS, {"fcnet_hiddens": [16]})
    assert spec.module_class is MaskedDQNTorchRLModule


@pytest.mark.parametrize("epsilon", [1.0, 0.0])
def test_masked_module_never_picks_unavailable_actions(epsilon):
    module = _masked_module(epsilon)
    env = CabsEnv(requests=True)
    obs, _ = env.reset(seed=3)
    for t in range(400):
        batch = {Columns.OBS: torch.from_numpy(obs[None])}
        available = set(np.flatnonzero(obs[MASK_START:]).tolist())
        explored = int(module.forward_exploration(batch, t=t)[Columns.ACTIONS][0])
        greedy = int(module.forward_inference(batch)[Columns.ACTIONS][0])
        assert explored in available and greedy in available
        obs, _, terminated, _, _ = env.step(explored)
        if terminated:
            obs, _ = env.reset()


def test_masked_module_q_values_and_targets():
    module = _masked_module(0.0)
    env = CabsEnv(requests=True)
    obs = np.stack([env.reset(seed=s)[0] for s in range(64)])
    mask = obs[:, MASK_START:] > 0.5
    q = module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS].detach()
    assert (q.numpy()[~mask] <= -1e8).all() and (q.numpy()[mask] > -1e8).all()
    # Random choice is uniform over the available actions only.
    module.epsilon_schedule.__init__(fixed_value_or_schedule=1.0, framework="torch")
    one = torch.from_numpy(np.repeat(obs[:1], 4000, axis=0))
    actions = module.forward_exploration({Columns.OBS: one}, t=0)[Columns.ACTIONS].numpy()
    counts = np.bincount(actions, minlength=NUM_ACTIONS)
    assert set(np.flatnonzero(counts)) == set(np.flatnonzero(mask[0]))
    # The learner's double-Q target uses the masked online argmax at s'.
    module.make_target_networks()
    fwd = module.forward_train(
        {Columns.OBS: torch.from_numpy(obs), Columns.NEXT_OBS: torch.from_numpy(obs[::-1].copy())}
    )
    next_best = fwd[QF_NEXT_PREDS].argmax(-1).numpy()
    assert mask[::-1][np.arange(64), next_best].all()


# ================================================================== Ray: the algorithm


def _greedy_return(module, env_id: str, episodes: int, seed: int) -> float:
    envs = [CabsEnv(requests=env_id == CABS_REQUESTS) for _ in range(episodes)]
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    returns, alive = np.zeros(episodes), np.ones(episodes, dtype=bool)
    with torch.no_grad():
        while alive.any():
            q = module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS]
            for i in np.flatnonzero(alive):
                obs[i], reward, terminated, truncated, _ = envs[i].step(int(q[i].argmax()))
                returns[i] += reward
                alive[i] = not (terminated or truncated)
    return float(returns.mean())


def _make_unavailable_counter():
    """Counter of unavailable actions taken in episodes (CabsRequests-v0). A nested function,
    so cloudpickle ships it by value to EnvRunner actors (which cannot import this module)."""

    def count(episodes) -> int:
        import numpy as np

        from envs.cabs import MASK_START

        bad = 0
        for episode in episodes:
            obs = np.asarray(episode.get_observations())
            actions = np.asarray(episode.get_actions()).astype(int)
            bad += int((obs[np.arange(len(actions)), MASK_START + actions] < 0.5).sum())
        return bad

    return count


_unavailable_actions_taken = _make_unavailable_counter()


def _small_config(env: str = CABS, runners: int = 2) -> ApexDQNConfig:
    return (
        cabs_config(ApexDQNConfig())
        .environment(env)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=4, rollout_fragment_length=16)
        .apex(num_replay_buffer_shards=2, max_weight_sync_delay=64)
        .training(num_steps_sampled_before_learning_starts=200, training_intensity=None)
        .reporting(min_time_s_per_iteration=0.5)
        .debugging(seed=0, log_level="ERROR")
    )


def _train_until(algo, done, *, what: str, deadline_s: float = 120.0) -> list[dict]:
    """``algo.train()`` until ``done(results so far)`` is true; the results. An iteration is
    0.5 s of wall-clock here: how much it samples and trains depends on the box and on the
    suite's other process (CI's box once sampled nothing in one), so a test that needs
    something to have happened trains until it has, within ``deadline_s``."""
    deadline, results = time.monotonic() + deadline_s, []
    while not results or not done(results):
        assert time.monotonic() < deadline, f"{what}: not after {len(results)} iterations"
        results.append(algo.train())
    return results


def _apex(results: list[dict], key: str) -> Any:
    return results[-1][APEX_RESULTS][key]


@pytest.fixture(scope="class")
def algo():
    """One 2-runner, 2-shard ApexDQN on Cabs-v0, trained until the learner has updated and both
    shards hold a batch, then until sampling and learning went on (2 iterations at least); built
    once per test class.

    The tests themselves request the shared `ray_session`, which finds this Ray instance and
    shuts it down at the end."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo = _small_config().build()

    def learning_from_both_shards(results: list[dict]) -> bool:
        shards = _apex(results, "replay")
        added = [shards.get(f"shard_{i}", {}).get("num_env_steps_added", 0) for i in (0, 1)]
        return _apex(results, "learner_updates_lifetime") > 0 and min(added) >= 64

    results = _train_until(algo, learning_from_both_shards, what="learning from both shards")
    first = results[-1][APEX_RESULTS]  # the learner has updated by here

    def went_on_and_every_runner_synced(more: list[dict]) -> bool:
        """2 iterations more at least, until sampling and learning both went on and every
        runner holds synced weights: a loaded box may land no fragment in a 0.5 s iteration."""
        last = more[-1][APEX_RESULTS]
        grew = all(
            last[k] > first[k] for k in ("env_steps_sampled_lifetime", "learner_updates_lifetime")
        )
        seq = algo.env_runner_group.foreach_env_runner(
            lambda er: er._weights_seq_no, local_env_runner=False
        )
        return len(more) >= 2 and grew and all(v > 0 for v in seq)

    results += _train_until(
        algo, went_on_and_every_runner_synced, what="sampling and learning on, runners synced"
    )
    yield algo, results
    algo.stop()


@pytest.mark.slow
class TestApexMechanics:
    """The mechanics checks, all on the one algorithm of the ``algo`` fixture."""

    def test_runner_epsilons_on_built_algorithm(self, algo, ray_session):
        algo, results = algo
        expected = {1: per_runner_epsilon(0, 2), 2: per_runner_epsilon(1, 2)}
        assert algo.get_runner_epsilons() == pytest.approx(expected)
        on_runners = dict(
            algo.env_runner_group.foreach_env_runner(
                lambda er: (er.worker_index, current_epsilon(er)), local_env_runner=False
            )
        )
        assert on_runners == pytest.approx(expected)
        assert results[-1][APEX_RESULTS]["epsilon"] == pytest.approx(
            {"runner_1": expected[1], "runner_2": expected[2]}
        )

    def test_greedy_sampling_is_epsilon_zero(self, algo, ray_session):
        algo, _ = algo

        def _greedy_check(er):
            episodes = er.sample(num_timesteps=64, explore=False)
            obs = np.concatenate([np.asarray(e.get_observations())[:-1] for e in episodes])
            actions = np.concatenate([np.asarray(e.get_actions()) for e in episodes])
            q = er.module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS]
            return bool((q.argmax(-1).numpy() == actions).all())

        assert all(algo.env_runner_group.foreach_env_runner(_greedy_check, local_env_runner=False))

    def test_sampling_continues_while_learning(self, algo, ray_session):
        algo, results = algo
        # Ape-X's own lifetime counters are in every iteration's result; RLlib's env-runner
        # metrics only in an iteration that collected a fragment (a 0.5 s iteration on a
        # loaded box may collect none), so neither count need grow in *every* iteration.
        sampled = [r[APEX_RESULTS]["env_steps_sampled_lifetime"] for r in results]
        updates = [r[APEX_RESULTS]["learner_updates_lifetime"] for r in results]
        assert sampled == sorted(sampled) and updates == sorted(updates)
        # From the first iteration that ended with the learner updating to the last, both
        # the learner and the runners went on: sampling did not stop for learning.
        first = next(i for i, u in enumerate(updates) if u > 0)
        assert first < len(results) - 1, updates
        assert sampled[-1] > sampled[first] and updates[-1] > updates[first], (sampled, updates)
        # Sample requests were queued on the runners while the learner updated.
        assert results[-1][APEX_RESULTS]["sample_requests_in_flight_at_update_mean"] >= 1.0
        # Ape-X's count is RLlib's wherever RLlib reports one.
        rllib = [r.get(ENV_RUNNER_RESULTS, {}).get(NUM_ENV_STEPS_SAMPLED_LIFETIME) for r in results]
        assert any(n is not None for n in rllib)
        pairs = zip(rllib, sampled, strict=True)
        assert all(n is None or n == s for n, s in pairs), (rllib, sampled)

    def test_runners_keep_sampling_during_slow_updates(self, algo, ray_session):
        algo, _ = algo
        before = algo.train()[APEX_RESULTS]
        fragment = 4 * 16

        def since_before(results: list[dict]) -> tuple[int, int]:
            calls = _apex(results, "learner_calls_lifetime") - before["learner_calls_lifetime"]
            sampled = (
                _apex(results, "env_steps_sampled_lifetime") - before["env_steps_sampled_lifetime"]
            )
            return calls, sampled

        def a_fragment_per_call(results: list[dict]) -> bool:
            calls, sampled = since_before(results)
            return calls >= 3 and sampled >= fragment * calls

        # The driver sits in (slow) updates nearly all the time, yet the runners' fragments
        # keep landing: at least one per learner call, summed since `before` (a learner call,
        # slowed here, may take several SGD steps: count calls). How many land in a given
        # iteration depends on the box: CI's, loaded by the suite's other process, once landed
        # one fragment in four calls' 1.6 s; so train on until they have, within the deadline.
        restore = _slow_learner(algo, 0.4)
        try:
            results = _train_until(
                algo, a_fragment_per_call, what="a fragment per slowed learner call"
            )
        finally:
            restore()
        calls, sampled = since_before(results)
        assert calls >= 3 and sampled >= fragment * calls, (sampled, calls)

    def test_priorities_written_back(self, algo, ray_session):
        algo, results = algo
        stats = algo.replay_stats()
        assert all(s["num_priority_updates"] > 0 for s in stats)
        assert all(s["num_env_steps"] > 0 for s in stats)
        replay = results[-1][APEX_RESULTS]["replay"]
        assert set(replay) == {"shard_0", "shard_1"}
        # Non-uniform sampling: importance weights vary within a batch.
        import ray

        batch = ray.get(algo.replay_shards[0].sample.remote(256, 3, 0.99, 0.4))[0]
        assert batch["weights"].std() > 0
        assert 0 < batch["weights"].min() < batch["weights"].max() <= 1.0

    def test_one_learner_call_takes_one_sgd_step_per_batch(self, algo, ray_session):
        """sgd_steps_per_learner_call: k replay batches go to one LearnerGroup.update as k
        minibatches, in order; each batch's |TD errors| go back to its own shard."""
        import ray

        algo, _ = algo
        learner = algo.learner_group._learner
        inner_update, steps = learner._update, []

        def counting_update(*args, **kwargs):
            steps.append(1)
            return inner_update(*args, **kwargs)

        batches = [
            (shard, b)
            for shard in (0, 1)
            for b in ray.get(algo.replay_shards[shard].sample.remote(32, 3, 0.95, 0.4, 2))
        ]
        before = [
            s["num_priority_updates"] + s["num_stale_priority_updates"] for s in algo.replay_stats()
        ]
        updates, trained = algo._num_updates, algo._trained
        learner._update = counting_update
        try:
            algo._update(batches)
        finally:
            learner._update = inner_update
        after = [
            s["num_priority_updates"] + s["num_stale_priority_updates"] for s in algo.replay_stats()
        ]
        assert len(steps) == 4
        assert algo._num_updates - updates == 4 and algo._trained - trained == 4 * 32
        assert [a - b for a, b in zip(after, before, strict=True)] == [64, 64]

    def test_weight_sync_advances_runner_seq_no(self, algo, ray_session):
        algo, results = algo
        seq = dict(
            algo.env_runner_group.foreach_env_runner(
                lambda er: (er.worker_index, er._weights_seq_no), local_env_runner=False
            )
        )
        assert all(v > 0 for v in seq.values())

        def every_runner_synced_again(_results) -> bool:
            now = dict(
                algo.env_runner_group.foreach_env_runner(
                    lambda er: (er.worker_index, er._weights_seq_no), local_env_runner=False
                )
            )
            return all(now[k] > seq[k] for k in seq)

        # Each runner needs a fragment back and an update since its last sync: not always
        # within one 0.5 s iteration on a loaded box.
        _train_until(algo, every_runner_synced_again, what="a newer weight sync on every runner")
        apex = results[-1][APEX_RESULTS]
        assert apex["weight_syncs_lifetime"] > 0
        assert set(apex["weight_sync_lag_updates"]) == {"runner_1", "runner_2"}


@pytest.mark.slow
def test_each_game_explores_at_its_own_epsilon(ray_session):
    """exploration_per_game: one runner of 4 games is 4 actors of the ε schedule; sampling
    with one ε per game works and the result reports the runner's mean."""
    algo = _small_config(runners=1).apex(exploration_per_game=True).build()
    try:
        expected = game_epsilons(0, 1, 4)
        (on_runner,) = algo.env_runner_group.foreach_env_runner(
            lambda er: er.module.epsilon_schedule.get_current_value().tolist(),
            local_env_runner=False,
        )
        assert on_runner == pytest.approx(expected)
        # A first iteration may collect nothing on a loaded box: train until one has.
        results = _train_until(
            algo, lambda r: _apex(r, "env_steps_sampled_lifetime") > 0, what="a first fragment"
        )
        assert _apex(results, "epsilon") == pytest.approx({"runner_1": np.mean(expected)})
    finally:
        algo.stop()


def _slow_learner(algo, seconds: float):
    """Every learner update of ``algo`` takes ``seconds`` longer; returns the undo."""
    update = algo.learner_group.update

    def slow_update(*args, **kwargs):
        time.sleep(seconds)
        return update(*args, **kwargs)

    algo.learner_group.update = slow_update
    return lambda: setattr(algo.learner_group, "update", update)


@pytest.mark.slow
def test_runners_wait_for_a_slow_learner(ray_session):
    """The replay ratio holds both ways: with the learner slowed down, sampling stays within
    `max_env_steps_sampled_ahead` (plus the requests already in flight) of trained / ratio."""
    intensity, per_request, in_flight = 2.0, 4 * 16, 2
    algo = (
        _small_config(runners=1)
        .apex(num_replay_buffer_shards=1, max_env_steps_sampled_ahead=per_request)
        .training(training_intensity=intensity, num_steps_sampled_before_learning_starts=200)
        .build()
    )
    _slow_learner(algo, 0.2)
    # Until the slowed learner has trained 2,048 env steps (8 learner calls of 4 x 64): then
    # the ratio holds whatever the box's speed (what sampling may run ahead is 192 steps).
    try:
        results = _train_until(
            algo,
            lambda r: _apex(r, "env_steps_trained_lifetime") >= 2048,
            what="2,048 env steps trained",
        )
    finally:
        algo.stop()
    apex = results[-1][APEX_RESULTS]
    sampled, trained = apex["env_steps_sampled_lifetime"], apex["env_steps_trained_lifetime"]
    owed_from = 200  # the steps before learning starts only fill the buffer
    assert sampled - owed_from - trained / intensity <= per_request + in_flight * per_request
    assert apex["replay_ratio"] >= 0.5 * intensity


def _replay_ratio_driver(intensity: float, before_learning: int, batch: int, **counters):
    """ApexDQN's replay-ratio bookkeeping on a bare object holding ``counters`` (no Ray): the
    config it reads and the methods under test, bound to it."""
    from types import MethodType, SimpleNamespace

    from sweeps.algorithms.apex.algorithm import ApexDQN

    config = (
        ApexDQNConfig()
        .training(
            training_intensity=intensity,
            num_steps_sampled_before_learning_starts=before_learning,
            train_batch_size_per_learner=batch,
        )
        .apex(max_env_steps_sampled_ahead=100)
    )
    algo = SimpleNamespace(config=config, _steps_not_owed=0, **counters)
    for name in (
        "_learning_started",
        "_sampled_since_learning_started",
        "_updates_due",
        "_sampling_ahead",
        "_on_shard_restart",
    ):
        setattr(algo, name, MethodType(getattr(ApexDQN, name), algo))
    return algo


def test_replay_ratio_counts_from_the_learning_start():
    """Steps sampled before ``num_steps_sampled_before_learning_starts`` are not owed: when
    learning starts the learner is not in debt, so runners keep sampling (on Pong, with 50k
    steps before learning, counting from step 0 stopped the runners for minutes)."""
    algo = _replay_ratio_driver(1.0, 50_000, 32, _sampled=50_000, _trained=0)
    assert algo._updates_due() == 0 and not algo._sampling_ahead()
    algo._sampled = 50_000 + 64
    assert algo._updates_due() == 2 and not algo._sampling_ahead()
    algo._sampled = 50_000 + 101  # more than 100 steps ahead of trained / ratio: wait
    assert algo._sampling_ahead()
    algo._trained = 64
    assert not algo._sampling_ahead() and algo._updates_due() == 1
    algo._sampled = 10  # before learning starts nothing is due and nobody waits
    assert algo._updates_due() == 0 and not algo._sampling_ahead()


def test_a_restarted_shard_does_not_stall_the_runners():
    """A replay shard that comes back empty: the learner owed training it can no longer do
    (its replay is gone) and the runners waited for it; both are let off, runners sample the
    shard's share of the warm-up before the learner owes training again."""
    algo = _replay_ratio_driver(
        8.0,
        1_000,
        64,
        _sampled=1_900,
        _trained=1_792,  # owes 900 x 8 - 1,792 = 5,408 env steps of training
        _shards=[None, None],
        _shard_steps=[950, 950],
    )
    assert algo._sampling_ahead() and algo._updates_due() > 0  # waiting for the learner
    algo._on_shard_restart(0)
    assert algo._shard_steps == [0, 950]
    assert not algo._sampling_ahead() and algo._updates_due() == 0
    algo._sampled += 500  # the shard's share of the warm-up: 1,000 / 2 shards
    assert algo._updates_due() == 0 and not algo._sampling_ahead()
    algo._sampled += 64  # then training is owed again, at the ratio
    assert algo._updates_due() == 8


@pytest.mark.slow
@pytest.mark.parametrize("iterations_before_kill", [2, 0])
def test_killed_replay_shard_is_restarted_and_training_goes_on(ray_session, iterations_before_kill):
    """Killed mid-training, or before the shard's first stats answer (a restart then used to go
    uncounted: benchmarks/faults.py shard)."""
    import ray

    algo = (
        _small_config(runners=1)
        .apex(num_replay_buffer_shards=1)
        .training(training_intensity=2.0, num_steps_sampled_before_learning_starts=200)
        .build()
    )
    try:
        # Mid-training: train until the learner has trained (two iterations on an idle box, more
        # when the suite's other process slows the runner down; CI's failure: 0 after two).
        deadline, i, trained = time.monotonic() + 120, 0, 0
        while i < iterations_before_kill or (iterations_before_kill and not trained):
            trained = algo.train()[APEX_RESULTS]["env_steps_trained_lifetime"]
            i += 1
            assert time.monotonic() < deadline, f"nothing trained after {i} iterations"
        ray.kill(algo.replay_shards[0], no_restart=False)  # its process dies; Ray restarts it
        deadline = time.monotonic() + 120  # a new worker process: seconds on a busy machine
        while time.monotonic() < deadline:
            back = algo.train()[APEX_RESULTS]
            if back["replay_shard_restarts"]:
                break

        # The new shard is refilled and trained from (after its share of the warm-up: more
        # than a few 0.5 s iterations on a loaded box); its stats come back polled, a second
        # or more after the fact on a busy machine: train on until they show it all.
        def refilled_and_training(results) -> bool:
            after = results[-1][APEX_RESULTS]
            return (
                after["replay"].get("shard_0", {}).get("num_env_steps_added", 0) > 0
                and after["env_steps_trained_lifetime"] > back["env_steps_trained_lifetime"]
                and after["env_steps_sampled_lifetime"] > back["env_steps_sampled_lifetime"] + 300
            )

        after = _train_until(algo, refilled_and_training, what="the new shard trained from")
        after = after[-1][APEX_RESULTS]
    finally:
        algo.stop()
    assert after["replay_shard_restarts"] == 1
    assert after["env_steps_sampled_lifetime"] > back["env_steps_sampled_lifetime"] + 300
    assert after["env_steps_trained_lifetime"] > back["env_steps_trained_lifetime"]
    assert after["replay"]["shard_0"]["num_env_steps_added"] > 0  # the new shard, refilled


@pytest.mark.slow
def test_apex_learns_cabs(ray_session):
    """as-test: greedy return >= 2,500 (mean of 5 episodes) within 60 s of training."""
    algo = cabs_config(ApexDQNConfig()).environment(CABS).debugging(seed=0, log_level="ERROR")
    algo = algo.build()
    try:
        train_s, best, it = 0.0, -np.inf, 0
        while train_s < 60.0 and best < 2500:
            t0 = time.perf_counter()
            algo.train()
            train_s += time.perf_counter() - t0
            it += 1
            module = algo.learner_group._learner.module[DEFAULT_MODULE_ID]
            best = max(best, _greedy_return(module, CABS, 5, seed=1000 * it))
        assert best >= 2500, f"greedy return {best:.0f} after {train_s:.1f} s of training"
    finally:
        algo.stop()


@pytest.mark.slow
def test_masked_module_with_apex_and_stock_dqn(ray_session):
    """CabsRequests-v0: runners (Ape-X, remote) and DQN (local runner) never pick an
    unavailable action while exploring, nor greedily."""
    from ray.rllib.algorithms.dqn import DQNConfig

    spec = dqn_module_spec(CABS_REQUESTS, {"fcnet_hiddens": [64]})
    apex = _small_config(CABS_REQUESTS, runners=1).rl_module(rl_module_spec=spec).build()
    try:
        apex.train()

        count = _unavailable_actions_taken

        def _bad(er):
            return count(er.sample(num_timesteps=256)) + count(
                er.sample(num_timesteps=128, explore=False)
            )

        assert apex.env_runner_group.foreach_env_runner(_bad, local_env_runner=False) == [0]
    finally:
        apex.stop()

    dqn = (
        DQNConfig()
        .environment(CABS_REQUESTS)
        .env_runners(num_env_runners=0, rollout_fragment_length=32)
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size=32)
        .rl_module(rl_module_spec=spec)
        .reporting(min_sample_timesteps_per_iteration=128)
        .debugging(seed=0, log_level="ERROR")
        .build()
    )
    try:
        dqn.train()
        assert _unavailable_actions_taken(dqn.env_runner.sample(num_timesteps=256)) == 0
    finally:
        dqn.stop()


def test_register_makes_a_tune_trainable():
    from ray.tune.registry import get_trainable_cls

    assert register() == "ApexDQN"
    assert get_trainable_cls("ApexDQN") is ApexDQN

"""Tests of the Pong factory (ale-py's C++ vector env) and the CPU recipe's shapes and settings."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.pong import TARGETS, make_pong, validate_pong_config


def test_pong_observations_are_stacked_42x42_frames() -> None:
    env = make_pong()
    obs, _ = env.reset(seed=0)
    assert obs.shape == (42, 42, 4) and obs.dtype == np.float32
    assert env.observation_space.shape == (42, 42, 4)
    assert env.action_space == gym.spaces.Discrete(6)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert obs.shape == (42, 42, 4) and obs.dtype == np.float32
        assert obs in env.observation_space
        assert reward in (-1.0, 0.0, 1.0) and not terminated and not truncated
    env.close()


def test_byte_frames_are_the_float_frames_unscaled() -> None:
    """``obs_dtype="uint8"``: the same frames channels-last as bytes, which the suite's Atari
    modules scale (``fast_cnn.frames_to_unit``) to exactly the env's float32 frames."""
    import torch

    from sweeps.algorithms.fast_cnn import frames_to_unit

    floats, as_bytes = make_pong(), make_pong(obs_dtype="uint8")
    assert as_bytes.observation_space == gym.spaces.Box(0, 255, (42, 42, 4), np.uint8)
    a, _ = floats.reset(seed=2)
    b, _ = as_bytes.reset(seed=2)
    for step in range(40):
        assert b.dtype == np.uint8 and b.flags.c_contiguous and b in as_bytes.observation_space
        assert np.array_equal(frames_to_unit(torch.from_numpy(b)).numpy(), a), step
        action = step % 6
        a, *_ = floats.step(action)
        b, *_ = as_bytes.step(action)
    floats.close()
    as_bytes.close()


def test_a_game_is_scored_to_21_unclipped() -> None:
    """A whole game: one side reaches 21; the return is the game's own score."""
    env = make_pong()
    env.reset(seed=3)
    env.action_space.seed(3)
    ret, points = 0.0, {1.0: 0, -1.0: 0}
    while True:
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        ret += reward
        if reward:
            points[reward] += 1
        if terminated or truncated:
            break
    assert terminated and max(points.values()) == 21 and ret == points[1.0] - points[-1.0]
    env.close()


def test_the_vector_env_steps_many_games_channels_last() -> None:
    vec = make_pong({"num_envs": 3, "dim": 84})
    obs, _ = vec.reset(seed=0)
    assert obs.shape == (3, 84, 84, 4) and vec.single_observation_space.shape == (84, 84, 4)
    obs, reward, terminated, truncated, _ = vec.step(np.zeros(3, dtype=np.int64))
    assert obs.shape == (3, 84, 84, 4) and reward.shape == terminated.shape == (3,)
    assert -1.0 <= obs.min() and obs.max() <= 1.0
    vec.close()


def test_pong_dim_84_through_the_registry() -> None:
    envs.register_envs()
    env = gym.make(envs.PONG, dim=84)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (84, 84, 4)
    env.close()


@pytest.mark.parametrize(
    "config, key",
    [
        ({"dim": "64"}, "dim"),
        ({"frame_stack": 4}, "frame_stack"),
        ({"framestack": 0}, "framestack"),
        ({"repeat_action_probability": 2}, "repeat_action_probability"),
        ({"num_envs": 0}, "num_envs"),
        ({"obs_dtype": "float16"}, "obs_dtype"),
    ],
)
def test_bad_pong_config_raises(config: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        validate_pong_config(config)


def _config(algo: str, argv: list[str] | None = None):
    from sweeps.harness.cli import build_parser

    envs.register_envs()
    module = importlib.import_module(f"sweeps.{algo}_pong")
    return module.make_config(build_parser(module.SWEEP).parse_args(argv or []))


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_the_cpu_recipe(algo: str) -> None:
    """Trial 0 of the V-trace Pong sweeps: one runner stepping 32 games in one vector env,
    the suite's 42x42 net, sticky actions off; 20-step fragments trained in minibatches of 160
    (APPO in 3 passes, IMPALA in one) through a short queue, weights broadcast after every
    update, with a floor under the entropy keyed to the training return and V-trace over whole
    chunks."""
    from sweeps.workloads.rllib_config import PONG_42_FILTERS, RLLIB_42_FILTERS

    config = _config(algo)
    assert config.num_env_runners == 1 and config.num_envs_per_env_runner == 32
    assert config.gym_env_vectorize_mode == "vector_entry_point"
    assert config.clip_rewards is True
    net = PONG_42_FILTERS if algo == "appo" else RLLIB_42_FILTERS
    assert config.model_config["conv_filters"] == net
    assert config.evaluation_interval is None  # judged by the training return
    assert validate_pong_config(config.env_config)["repeat_action_probability"] == 0.0
    assert config.rollout_fragment_length == 20 and config.minibatch_size == 160
    assert config.train_batch_size_per_learner == 500
    assert config.minibatch_size % config.rollout_fragment_length == 0  # whole V-trace rows
    assert config.broadcast_interval == 1
    assert config.num_epochs == (3 if algo == "appo" else 1)  # passes over each batch
    assert config.entropy_coeff == [[0, 0.002], [3_000_000, 0.0]]
    # a floor under the entropy, lowered as the training return rises (IMPALA's, with no trust
    # region, to 0.3 nats)
    assert config.learner_config_dict == {
        "entropy_target": [[-15, 0.6], [-5, 0.1 if algo == "appo" else 0.3]],
        "entropy_target_by": "return",
        "vtrace_whole_chunks": True,
    }
    if algo == "appo":
        assert config.clip_param == 0.2
        assert config.use_circular_buffer is False and config.simple_queue_size == 2
    else:  # no trust region: the learning rate annealed
        assert config.lr == [[0, 0.0005], [6_000_000, 0.00005]]
        assert config.learner_queue_size == 2


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_every_vtrace_pong_trial_runs_vtrace_over_whole_chunks(algo: str) -> None:
    """The search space keeps the switch beside the sampled entropy floor."""
    import optuna

    module = importlib.import_module(f"sweeps.{algo}_pong")
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    settings = module.sample_params(trial)["learner_config_dict"]
    assert settings["vtrace_whole_chunks"] is True
    assert settings["entropy_target_by"] == "return"


def test_the_dqn_cpu_recipe_replays_4_steps_per_sampled_step() -> None:
    """DQN's trial 0: one runner stepping 8 games in 32-step fragments, each round of 256 sampled
    env steps followed by 16 updates of 64 replayed ones (RLlib's own round-robin weights), the
    replay growing running games in place and sampled as columns."""
    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

    from sweeps.algorithms.columnar_dqn import ColumnarDQN, ColumnarDQNConfig
    from sweeps.algorithms.columnar_replay import ColumnarPrioritizedEpisodeReplayBuffer

    config = _config("dqn")
    assert config.num_env_runners == 1 and config.num_envs_per_env_runner == 8
    assert config.rollout_fragment_length == 32 and config.train_batch_size == 64
    store, updates = calculate_rr_weights(config)
    sampled = config.rollout_fragment_length * config.num_envs_per_env_runner
    assert (store, updates) == (1, 16)
    assert updates * config.train_batch_size / sampled == 4.0  # the replay ratio
    # As a Tune trial builds it: the config through a dict (the type becomes a class path and
    # back), then RLlib's own replay constructor.
    from ray.rllib.algorithms.algorithm import Algorithm

    assert config.algo_class is ColumnarDQN
    trial_config = ColumnarDQNConfig.from_dict(config.to_dict())
    replay = Algorithm._create_local_replay_buffer_if_necessary(
        SimpleNamespace(config=trial_config), trial_config.to_dict()
    )
    assert type(replay) is ColumnarPrioritizedEpisodeReplayBuffer and replay.capacity == 100_000
    assert config.lr == 1e-4 and config.n_step == 3 and config.double_q and config.dueling


@pytest.mark.parametrize("algo", ["dqn", "apex", "appo"])
def test_the_recipes_learn_on_the_suites_net(algo: str) -> None:
    """DQN, Ape-X and APPO learn Pong on the workload's 42x42 net, with a 5x5 map before its
    dense layer, not on the cheaper 2013 DQN net whose 3x3 map stalled them."""
    from sweeps.workloads.rllib_config import CHEAP_42_FILTERS, PONG_MODEL

    net = _config(algo).model_config["conv_filters"]
    assert net == PONG_MODEL["conv_filters"] != CHEAP_42_FILTERS
    assert net[-1][1] == 5  # the dense layer as a conv over the 5x5 map


def test_the_apex_recipe_reads_its_training_return_at_dqns_final_epsilon() -> None:
    """Ape-X's trial 0: each of the runner's 8 games is an actor of the ε schedule, and the
    training return counts the games at or below DQN's final ε (the last 3 of 8)."""
    from sweeps.algorithms.apex.exploration import game_epsilons

    config = _config("apex")
    assert config.exploration_per_game is True
    assert config.training_return_max_epsilon == 0.01 == _config("dqn").epsilon[-1][1]
    counted = [e <= config.training_return_max_epsilon for e in game_epsilons(0, 1, 8)]
    assert counted == [False] * 5 + [True] * 3
    # DQN's learning rate and target period (500 updates of 64), one 50k shard for one runner.
    assert config.lr == _config("dqn").lr == 1e-4
    assert config.target_network_update_freq / config.train_batch_size == 500
    assert config.num_env_runners == 1 and config.num_replay_shards_fed == 1
    assert config.replay_shard_buffer_kwargs(0)["capacity"] == 50_000
    # Runners' connector states are not synced after each iteration (a blocking call behind
    # the runner's queued samples): Ape-X's runners need nothing from it.
    assert config._dont_auto_sync_env_runner_states is True


def test_apex_runners_keep_their_exploration_q_values_for_the_initial_priorities() -> None:
    """On an Ape-X Pong runner (8 games of byte frames), each step of the sampled chunks
    carries the Q-values its action was chosen on, so the initial priorities forward only the
    chunks' last frames; replay gets the chunks without them."""
    from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from sweeps.algorithms.apex.actor import initial_priorities, keep_q_values, kept_q_values
    from sweeps.algorithms.apex.exploration import apply_runner_epsilon
    from sweeps.algorithms.apex.replay import strip_for_replay

    config = _config("apex").env_runners(num_env_runners=0, rollout_fragment_length=20)
    runner = SingleAgentEnvRunner(config=config, worker_index=1)
    try:
        apply_runner_epsilon(runner, 1, 0.4, 7.0, per_game=True)
        keep_q_values(runner)
        episodes = runner.sample(num_timesteps=160, random_actions=False)
        assert sum(len(e) for e in episodes) >= 160
        for episode in [e for e in episodes if len(e)]:
            q = kept_q_values(episode)
            assert q is not None and q.shape == (len(episode), 6)
        with_kept = initial_priorities(runner.module, episodes, 3, 0.99)
        strip_for_replay(episodes)
        assert all(QF_PREDS not in e.extra_model_outputs for e in episodes)
        fresh = initial_priorities(runner.module, episodes, 3, 0.99)
        for a, b in zip(with_kept, fresh, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    finally:
        runner.stop()


def test_the_recipe_net_maps_42x42_frames_to_one_256_vector() -> None:
    import torch

    config = _config("appo")
    env = make_pong()
    spec = config.get_rl_module_spec(env=env)
    module = spec.build()
    batch = {"obs": torch.from_numpy(np.stack([env.reset(seed=0)[0]] * 2))}
    out = module.forward_inference(batch)
    assert out["action_dist_inputs"].shape == (2, 6)
    env.close()


def test_the_dqn_module_explores_epsilon_greedy_without_a_distribution() -> None:
    """``FusedDQNTorchRLModule._forward_exploration``: the argmax at ε 0, every action about
    equally often at ε 1, one ε per row (Ape-X's games), and with ``emit_q_values`` the Q-values
    the actions were chosen on."""
    import torch
    from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
    from ray.rllib.utils.schedules.scheduler import Scheduler

    from sweeps.algorithms.fast_cnn import FusedDQNTorchRLModule

    env = make_pong()
    module = _config("dqn").get_rl_module_spec(env=env).build()
    assert isinstance(module, FusedDQNTorchRLModule) and not module.emit_q_values
    obs = torch.from_numpy(np.stack([env.reset(seed=s)[0] for s in range(8)]))
    env.close()
    with torch.no_grad():
        q = module.compute_q_values({"obs": obs})[QF_PREDS]

    def explore(epsilon) -> dict:
        module.epsilon_schedule = Scheduler(fixed_value_or_schedule=epsilon, framework="torch")
        with torch.no_grad():
            return module.forward_exploration({"obs": obs}, t=0)

    torch.manual_seed(0)
    assert torch.equal(explore(0.0)["actions"], q.argmax(-1))
    counts = torch.bincount(
        torch.cat([explore(1.0)["actions"] for _ in range(300)]), minlength=6
    ).numpy()
    assert counts.sum() == 2400 and counts.min() > 300 and counts.max() < 500  # 400 each
    per_row = torch.tensor([0.0] * 4 + [1.0] * 4)
    rows = torch.stack([explore(per_row)["actions"] for _ in range(100)])
    assert (rows[:, :4] == q.argmax(-1)[:4]).all() and len(rows[:, 4:].unique()) == 6
    assert QF_PREDS not in explore(0.5)
    module.emit_q_values = True
    assert torch.equal(explore(0.5)[QF_PREDS], q)


@pytest.mark.parametrize("byte_frames", [False, True])
def test_the_dqn_module_trains_as_rllibs_without_the_next_frames_backward(
    byte_frames: bool,
) -> None:
    """``FusedDQNTorchRLModule._forward_train`` runs the next frames under no_grad: the outputs
    RLlib's double-Q forward gives, and the same gradients of a double-Q TD loss, on float and
    on byte frames."""
    import torch
    from ray.rllib.algorithms.dqn.default_dqn_rl_module import (
        QF_NEXT_PREDS,
        QF_PREDS,
        QF_TARGET_NEXT_PREDS,
    )
    from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import (
        DefaultDQNTorchRLModule,
    )

    env = make_pong()
    module = _config("dqn").get_rl_module_spec(env=env).build()
    module.make_target_networks()
    frames = [env.reset(seed=0)[0]] + [env.step(a % 6)[0] for a in range(8)]
    env.close()
    if byte_frames:
        frames = [np.rint((f + 1.0) * 127.5).astype(np.uint8) for f in frames]
    obs, next_obs = (torch.from_numpy(np.stack(f)) for f in (frames[:-1], frames[1:]))
    actions = torch.arange(8) % 6

    def loss_and_grads(forward_train) -> tuple[dict, list]:
        module.zero_grad()
        out = forward_train(module, {"obs": obs, "new_obs": next_obs})
        best = out[QF_NEXT_PREDS].argmax(-1, keepdim=True)
        target = 1.0 + 0.99 * out[QF_TARGET_NEXT_PREDS].gather(-1, best).squeeze(-1)
        q = out[QF_PREDS].gather(-1, actions[:, None]).squeeze(-1)
        (q - target.detach()).pow(2).mean().backward()
        return out, [p.grad.clone() for p in module.parameters() if p.requires_grad]

    ours, our_grads = loss_and_grads(type(module)._forward_train)
    theirs, their_grads = loss_and_grads(DefaultDQNTorchRLModule._forward_train)
    assert not ours[QF_NEXT_PREDS].requires_grad and theirs[QF_NEXT_PREDS].requires_grad
    for key in (QF_PREDS, QF_NEXT_PREDS, QF_TARGET_NEXT_PREDS):
        torch.testing.assert_close(ours[key], theirs[key], rtol=1e-5, atol=1e-6)
    assert len(our_grads) == len(their_grads) > 0
    for a, b in zip(our_grads, their_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("algo", ["impala", "appo", "dqn", "apex"])
def test_the_fused_net_computes_what_rllibs_computes(algo: str) -> None:
    """The Atari module (``sweeps/algorithms/fast_cnn.py``): RLlib's default module with its
    symmetric padding done by the conv: same parameters, same outputs, one pad layer fewer."""
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from torch import nn

    from sweeps.harness.cli import apply_settings
    from sweeps.workloads.rllib_config import RLLIB_42_FILTERS

    # RLlib's classic 42x42 net: its first layer pads 1 on every side, its second 1 before and
    # 2 after (the recipe's net pads nowhere, so fusing leaves it as RLlib builds it)
    config = apply_settings(_config(algo), [("model_config", {"conv_filters": RLLIB_42_FILTERS})])
    env = make_pong()
    fused_spec = config.get_rl_module_spec(env=env)
    default = config.get_default_rl_module_spec().module_class
    assert fused_spec.module_class is not default and issubclass(fused_spec.module_class, default)
    plain_spec = RLModuleSpec(
        module_class=default,
        observation_space=fused_spec.observation_space,
        action_space=fused_spec.action_space,
        model_config=fused_spec.model_config,
    )
    torch.manual_seed(0)
    plain = plain_spec.build()
    fused = fused_spec.build()
    for module in (plain, fused):
        if hasattr(module, "make_target_networks"):  # (as their learners do: DQN, APPO)
            module.make_target_networks()
    assert plain.state_dict().keys() == fused.state_dict().keys()
    fused.load_state_dict(plain.state_dict())
    pads = [m.padding for m in plain.modules() if isinstance(m, nn.ZeroPad2d)]
    left = [m.padding for m in fused.modules() if isinstance(m, nn.ZeroPad2d)]
    assert (1, 1, 1, 1) in pads and left == [p for p in pads if p != (1, 1, 1, 1)]
    obs = torch.from_numpy(np.stack([env.reset(seed=s)[0] for s in range(4)]))
    for forward in ("forward_inference", "forward_train"):
        batch = {"obs": obs, "new_obs": obs}  # (DQN's forward_train also reads new_obs)
        a, b = getattr(plain, forward)(batch), getattr(fused, forward)(batch)
        for key in a:
            if isinstance(a[key], torch.Tensor):
                # the same up to float32 rounding: RLlib's DQN module runs obs and new_obs in one
                # pass and splits it, the suite's in two, and a batch's size can change the conv's
                # summation order (5e-8 apart on a Zen 3 host, bit for bit on an earlier one)
                torch.testing.assert_close(
                    a[key], b[key], rtol=1e-5, atol=1e-6, msg=f"{forward} {key}"
                )
    env.close()


@pytest.mark.parametrize("algo", ["impala", "appo", "dqn", "apex"])
def test_the_recipes_ship_byte_frames_their_nets_scale(algo: str) -> None:
    """Every Pong recipe's env makes uint8 frames (a quarter of the bytes in episodes, replay
    and transport); its module, target network included, computes from them what it computes
    from the env's float frames (to float32 rounding: the same inputs, to the bit, may sit in
    memory in another order, and the convolution then sums in another order)."""
    import torch

    config = _config(algo)
    assert validate_pong_config(config.env_config)["obs_dtype"] == "uint8"
    as_bytes = make_pong(config.env_config)
    module = config.get_rl_module_spec(env=as_bytes).build()
    if hasattr(module, "make_target_networks"):  # (as their learners do: DQN, APPO)
        module.make_target_networks()
    floats = make_pong()

    def frames(env) -> torch.Tensor:  # three different positions of the game
        out = []
        for seed in range(3):
            env.reset(seed=seed)
            for t in range(60 + 40 * seed):
                obs, *_ = env.step(t % 6)
            out.append(obs)
        return torch.from_numpy(np.stack(out))

    byte_obs, float_obs = frames(as_bytes), frames(floats)
    assert not torch.equal(float_obs[0], float_obs[2])
    assert byte_obs.dtype == torch.uint8
    with torch.no_grad():
        for forward in ("forward_inference", "forward_train"):
            a = getattr(module, forward)({"obs": byte_obs, "new_obs": byte_obs})
            b = getattr(module, forward)({"obs": float_obs, "new_obs": float_obs})
            assert a.keys() == b.keys()
            for key in a:
                if isinstance(a[key], torch.Tensor):
                    torch.testing.assert_close(a[key], b[key], msg=f"{forward} {key}")
        if hasattr(module, "make_target_networks"):  # DQN, Ape-X, APPO: the target net too
            a, b = (module.forward_target({"obs": obs}) for obs in (byte_obs, float_obs))
            assert a.keys() == b.keys()
            for key in a:
                torch.testing.assert_close(a[key], b[key], msg=f"forward_target {key}")
    as_bytes.close()
    floats.close()


def test_a_larger_frame_takes_the_64x64_net() -> None:
    from sweeps.workloads.rllib_config import PONG_MODEL, pong_model

    assert len(pong_model(64)["conv_filters"]) == 4 and pong_model(42) == PONG_MODEL


def test_pong_targets_and_benchmark_stop() -> None:
    from sweeps.benchmark import _stop_reward, parse_args

    assert TARGETS == (0.0, 10.0, 18.0)
    assert _stop_reward(parse_args(["--env", "pong", "--storage-path", "/tmp"])) == 18.0


def test_the_pong_sweeps_are_sized_for_a_cpu_and_dry_run_shows_it(tmp_path, capsys) -> None:
    """ASHA's first rung after the flat start of every Pong curve (~1.2M env steps at -21),
    greedy evaluation off, checkpoints every 30 iterations; nothing started, nothing written."""
    from sweeps import appo_pong

    assert appo_pong.main(["--dry-run", "--storage-path", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "ASHA judges trials at 1,500,000 env steps" in out
    assert "greedy evaluation off (trials judged by the training return)" in out
    assert "a checkpoint every 30 iteration(s)" in out
    assert "env_steps >= 4e+06" in out  # APPO's recipe reaches 18 well before
    assert not (tmp_path / "runs").exists()

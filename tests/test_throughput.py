"""``python -m sweeps.throughput`` and ``python -m sweeps.profiling`` without training anything:
bad input is refused before Ray starts, and the figures they print (efficiency, replay ratio,
"not started", scaling notes, timer shares) come out right from fake results. Their real runs
are benchmarks, quoted in results/*/THROUGHPUT.md and PROFILE.md."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from sweeps import profiling, throughput
from sweeps.perf import perf_report, timer_shares


@pytest.fixture
def nothing_runs(monkeypatch):
    """Fail the test if a script gets as far as measuring the env or starting Ray."""

    def boom(*args, **kwargs):
        raise AssertionError("bad input reached the measurement")

    monkeypatch.setattr(throughput, "raw_env_rate", boom)
    monkeypatch.setattr(throughput, "start_ray", boom)


def _refused(capsys, main, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    return err


@pytest.mark.parametrize("main", [throughput.main, profiling.main])
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--algos", "foo"], "unknown algorithm(s) ['foo']"),
        (["--algos", "dqn,foo"], "unknown algorithm(s) ['foo']"),
        (["--seconds", "0"], "must be a positive number"),
        (["--max-warmup-s", "-1"], "must be a positive number"),
        (["--num-env-runners", "1,x"], "expected comma-separated integers"),
        (["--num-env-runners", "-1"], "expected non-negative integers"),
        (["--num-envs-per-env-runner", "0"], "must be >= 1"),
        (["--env", "atari"], "invalid choice"),
        (["--algos", "dqn", "--set", "no_such_setting=1"], "has no setting 'no_such_setting'"),
        (["--set", "lr"], "expected KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, nothing_runs, main, argv, expected):
    assert expected in _refused(capsys, main, argv)


def test_profiling_refuses_a_baseline_throughput_takes_it(capsys, nothing_runs):
    err = _refused(capsys, profiling.main, ["--algos", "dqn,sb3-dqn"])
    assert "reads RLlib's timers" in err and "sweeps.throughput --algos sb3-dqn" in err
    assert throughput.parse_args(["--algos", "dqn,sb3-dqn"]).algos == ["dqn", "sb3-dqn"]


def test_a_baseline_is_built_from_its_sweep_with_evaluation_off():
    args = throughput.parse_args(["--algos", "sb3-dqn", "--iteration-s", "2"])
    config = throughput.baseline_config("sb3-dqn", args)
    assert config.settings["eval_interval"] == 0 and config.settings["iteration_s"] == 2.0
    assert config.recipe.hyperparams["batch_size"] == 64  # the suite's cab defaults
    assert "suite defaults for cabs" in config.recipe.source


def test_q_learning_extras_name_what_a_dqn_adds():
    assert throughput.q_learning_extras(True, True, True, 3) == (
        "double Q, dueling, prioritized replay, n-step 3"
    )
    assert throughput.q_learning_extras(False, False, False, 1) == "none"


def test_a_dqn_configs_extras_are_read_from_it():
    from ray.rllib.algorithms.dqn import DQNConfig

    plain = DQNConfig().training(
        double_q=False,
        dueling=False,
        n_step=1,
        replay_buffer_config={"type": "EpisodeReplayBuffer"},
    )
    assert throughput.rllib_extras(plain) == "none"
    tuned, _ = throughput.tuned_config("dqn", throughput.parse_args(["--algos", "dqn"]), 0)
    assert throughput.rllib_extras(tuned) == "double Q, dueling, prioritized replay, n-step 3"
    uniform = tuned.training(replay_buffer_config={"alpha": 0.0})
    assert "prioritized" not in throughput.rllib_extras(uniform)


def test_markdown_into_a_folder_is_refused(capsys, nothing_runs, tmp_path):
    err = _refused(capsys, throughput.main, ["--markdown", str(tmp_path)])
    assert "is a folder" in err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_report_may_be_overwritten(tmp_path):
    report = tmp_path / "THROUGHPUT.md"
    report.write_text("old")
    assert throughput.parse_args(["--markdown", str(report)]).markdown == str(report)
    deeper = tmp_path / "new" / "folder" / "PROFILE.md"
    assert profiling.parse_args(["--markdown", str(deeper)]).markdown == str(deeper)


def test_set_reaches_every_algorithm_built():
    args = throughput.parse_args(["--env", "pong", "--algos", "impala,appo", "--set", "lr=0.001"])
    for algo in args.algos:
        config, _ = throughput.tuned_config(algo, args, 2)
        assert config.lr == 0.001 and config.num_env_runners == 2


def test_parse_args_defaults_and_lists():
    args = throughput.parse_args(["--algos", "apex,dqn,apex", "--num-env-runners", "4,1,2,1"])
    assert args.algos == ["apex", "dqn"]
    assert args.num_env_runners == [1, 2, 4]
    assert profiling.parse_args([]).seconds == 20.0


def test_trained_counter_prefers_apex_own_count():
    rllib = {"learners": {"__all_modules__": {"num_env_steps_trained_lifetime": 400.0}}}
    assert throughput.trained(rllib) == 400.0
    assert throughput.trained({**rllib, "apex": {"env_steps_trained_lifetime": 100}}) == 100.0
    assert throughput.trained({}) == 0.0


def test_runner_efficiency():
    assert throughput.runner_efficiency(1000.0, 2, 1000.0) == pytest.approx(0.5)
    # 0 remote runners: the local runner is the one sampling process
    assert throughput.runner_efficiency(300.0, 0, 1000.0) == pytest.approx(0.3)
    assert throughput.runner_efficiency(300.0, 1, 0.0) is None


def _row(**overrides):
    values = dict(
        algo="dqn",
        env="pong",
        runners=1,
        envs_per_runner=1,
        build_s=5.0,
        warmup_s=100.0,
        started_in_warmup=True,
        seconds=20.0,
        iterations=20,
        sampled_per_s=400.0,
        trained_per_s=1600.0,
        trained_lifetime=5e4,
        raw_per_s=1600.0,
        step_calls_per_iter=3.0,
        return_mean=-20.0,
    )
    values.update(overrides)
    return throughput.make_row(**values)


def test_row_rates_ratio_and_efficiency():
    row = _row()
    assert row["env_steps_trained_per_s"] == 1600.0
    assert row["replay_ratio"] == pytest.approx(4.0)
    assert row["runner_efficiency"] == pytest.approx(0.25)
    assert row["note"] == ""


def test_updates_per_second_are_trained_samples_over_the_batch():
    assert _row(update_batch=64)["updates_per_s"] == 25.0
    assert _row()["updates_per_s"] is None  # no batch: no figure, never 0
    not_started = _row(update_batch=64, trained_lifetime=0.0, trained_per_s=0.0)
    assert not_started["updates_per_s"] is None


def test_the_suite_against_a_baseline_says_whether_settings_matched():
    dqn = _row(
        algo="dqn", update_batch=64, sampled_per_s=1600.0, trained_per_s=1600.0, extras="n-step 3"
    )
    sb3 = _row(
        algo="sb3-dqn",
        runners=0,
        update_batch=64,
        sampled_per_s=6400.0,
        trained_per_s=6400.0,
        extras="n-step 3",
    )
    extras = _row(
        algo="apex",
        update_batch=64,
        sampled_per_s=400.0,
        trained_per_s=1600.0,
        extras="double Q, n-step 3",
    )
    ppo = _row(algo="appo", update_batch=512, trained_per_s=5120.0)
    lines = perf_report.against_baselines([dqn, sb3, extras, ppo])
    body = [line for line in lines if line.startswith("- ")]
    assert len(body) == 2  # appo is no counterpart of SB3's DQN
    assert "dqn (1 env runner(s)): 25.0 updates/s against sb3-dqn's 100.0: **0.25x**" in body[0]
    assert "(matched settings)" in body[0]
    assert "not matched: 16 vs 64 env steps per update; double Q, n-step 3 vs n-step 3" in body[1]
    table = "\n".join(perf_report.throughput_table([dqn, sb3]))
    assert "| sb3-dqn (one process) | 0 |" in table and "| 25.0 | 64 | n-step 3 |" in table
    assert perf_report.against_baselines([dqn]) == []
    scaling = perf_report.throughput_table([dqn, _row(algo="dqn", runners=2), sb3])
    assert "| sb3-dqn (one process) | 0 | 1 | 6,400 | 6,400 | 1.00 | 6,400 | 400% | — |" in (
        "\n".join(scaling)
    )


def test_learning_not_started_is_said_never_zero():
    row = _row(trained_lifetime=0.0, trained_per_s=0.0, started_in_warmup=False)
    assert row["env_steps_trained_per_s"] is None
    assert row["replay_ratio"] is None
    assert row["note"] == "learning not started within 120 s"
    table = "\n".join(perf_report.throughput_table([row]))
    assert "learning not started within 120 s" in table
    assert "| 0 |" not in table


def test_learning_started_in_the_window_is_flagged():
    row = _row(started_in_warmup=False)
    assert row["env_steps_trained_per_s"] == 1600.0
    assert "during the measured window" in row["note"]


def test_table_scaling_column_only_with_several_runner_counts():
    single = perf_report.throughput_table([_row(), _row(algo="impala", runners=0)])
    assert "vs fewest remote runners" not in single[0]
    rows = [
        _row(algo="impala", runners=1, sampled_per_s=500.0),
        _row(algo="impala", runners=2, sampled_per_s=900.0),
        _row(algo="dqn", runners=1),
    ]
    table = perf_report.throughput_table(rows)
    assert "vs fewest remote runners" in table[0]
    body = table[2:]
    assert [line.split(" | ")[0] for line in body] == ["| dqn", "| impala", "| impala"]
    assert "1.80x" in body[2]
    assert "| 28% |" in body[2]  # 900/s over 2 runners = 450/s per runner, raw 1,600/s


def test_zero_runners_is_its_own_row_not_the_scaling_baseline():
    rows = [
        _row(algo="appo", runners=0, sampled_per_s=900.0),
        _row(algo="appo", runners=1, sampled_per_s=300.0),
        _row(algo="appo", runners=2, sampled_per_s=450.0),
    ]
    body = perf_report.throughput_table(rows)[2:]
    assert "| — |" in body[0]  # 0 runners: compared with nothing
    assert "| 1.00x |" in body[1] and "| 1.50x |" in body[2]


def test_a_window_without_sampling_says_so():
    row = _row(sampled_per_s=0.0)
    assert row["note"] == "no env steps sampled in the measured window"
    assert row["replay_ratio"] is None
    assert "1,600 (no env steps sampled" in perf_report.trained_text(row)


def test_scaling_note_names_the_runner_counts_the_machine_cannot_show():
    note = perf_report.scaling_note(2, [1, 2, 4])
    assert "2 CPUs" in note and "2, 4" in note and "cannot show scaling" in note
    assert perf_report.scaling_note(16, [1, 2, 4, 8, 14]) is None


def test_markdown_names_machine_command_and_raw_rate():
    args = throughput.parse_args(["--env", "pong", "--max-warmup-s", "300", "--seconds", "20"])
    info = {"cpus": 2, "gpu": None, "cpu_model": "test CPU", "load_start": 1.5, "load_end": 2.5}
    text = perf_report.throughput_markdown(
        [_row(runners=1), _row(runners=2)], info, "python -m sweeps.throughput --env pong", args
    )
    assert "Command: `python -m sweeps.throughput --env pong`" in text
    assert "2 CPUs (test CPU), GPU: none" in text
    assert "1.50 at the start, 2.50 at the end" in text
    assert "Raw env rate: 1,600 steps/s" in text
    assert "cannot show scaling" in text


class CountingEnv:
    """A stand-in env: episodes of 10 steps."""

    def __init__(self) -> None:
        import gymnasium as gym

        self.action_space = gym.spaces.Discrete(3)
        self.t = self.resets = 0

    def reset(self, seed=None):
        self.t, self.resets = 0, self.resets + 1
        return 0, {}

    def step(self, action):
        self.t += 1
        return 0, 0.0, self.t >= 10, False, {}


def test_raw_env_rate_steps_and_resets():
    env = CountingEnv()
    rate = throughput.raw_env_rate(env, 0.05)
    assert rate > 1000 and env.resets > 1


def test_raw_env_rate_of_the_cab_env():
    assert throughput.raw_env_rate(throughput.make_env("cabs", "requests"), 0.05) > 0


# --- profile -------------------------------------------------------------------------------


def _result(**runner):
    return {
        "env_runners": {
            "env_step_timer": 0.001,
            "rlmodule_inference_timer": 0.002,
            "env_to_module_connector": {
                "connector_pipeline_timer": 0.0005,
                "timers": {"connectors": {"numpy_to_tensor": 0.0002}},
            },
            "module_to_env_connector": {"connector_pipeline_timer": 0.0005},
            "sample": 0.08,
            "time_between_sampling": 0.02,
            **runner,
        },
        "timers": {"training_step": 0.01, "learner_update_timer": 0.004, "mystery": 1.0},
        "learners": {"__all_modules__": {"learner_connector": {"connector_pipeline_timer": 0.001}}},
    }


def test_runner_shares():
    # 800 env steps/s per runner over 4 envs: 200 vector steps/s
    rows = {r["stage"]: r for r in timer_shares.runner_breakdown(_result(), 800.0, 4)}
    assert rows["env step"]["calls_per_s"] == pytest.approx(200)
    assert rows["env step"]["share"] == pytest.approx(0.2)
    assert rows["RLModule inference"]["share"] == pytest.approx(0.4)
    assert rows["sample() total"]["share"] == pytest.approx(0.8)
    outside = rows["outside sample() (waiting, transport, weight sync)"]
    assert outside["share"] == pytest.approx(0.2)
    # sample() is 80%; the four timed stages 0.2 + 0.1 + 0.4 + 0.1 = 80%; nothing else left
    assert rows["rest of sample() (episode bookkeeping)"]["share"] == pytest.approx(0.0, abs=1e-9)
    assert rows["· env_to_module_connector: numpy_to_tensor"]["share"] == pytest.approx(0.04)


def test_driver_shares_use_the_algorithms_call_rates():
    rate = {"iteration": 1, "training_step": 50, "update": 400, "learner_call": 100,
            "sample_round": 2, "broadcast": 0}  # fmt: skip
    rows = {r["stage"]: r for r in timer_shares.driver_breakdown("apex", _result(), rate)}
    assert rows["timers/training_step"]["share"] == pytest.approx(0.5)
    # Ape-X: one learner call trains several batches; its timer runs per call
    assert rows["timers/learner_update_timer"]["share"] == pytest.approx(0.4)
    assert rows["timers/mystery"]["share"] is None  # no known call rate: per-call time only
    assert rows["timers/mystery"]["per_call_ms"] == pytest.approx(1000)
    learner = rows["learner: learner_connector/connector_pipeline_timer"]
    assert learner["share"] == pytest.approx(0.1)


def test_a_learner_call_trains_its_batch_in_every_pass(monkeypatch):
    """APPO's recipe: 3 passes over each 500-step batch in minibatches of 160. 7,500 env steps
    trained per second (each pass counted) are 5 learner calls a second, not 7,500 / 160."""
    from types import SimpleNamespace

    monkeypatch.setattr(
        timer_shares,
        "window_rates",
        lambda first, last, seconds: {"sampled_per_s": 2500.0, "trained_per_s": 7500.0},
    )
    config = SimpleNamespace(
        num_env_runners=1,
        num_envs_per_env_runner=32,
        get_rollout_fragment_length=lambda: 20,
        total_train_batch_size=500,
        num_epochs=3,
    )
    rate = timer_shares.rates("appo", config, {}, [{}], 10.0)
    assert rate["learner_call"] == pytest.approx(5.0)
    assert rate["update"] == pytest.approx(15.0)  # no minibatch size in the results: the batch
    assert rate["sample_round"] == pytest.approx(2500 / 640)


def test_apex_figures_are_window_differences():
    def apex(idle, adds, add_s):
        return {
            "apex": {
                "driver_idle_s_lifetime": idle,
                "learner_updates_lifetime": 40 * idle,
                "learner_calls_lifetime": 10 * idle,
                "replay": {
                    "shard_0": {"add_s_total": add_s, "add_calls": adds},
                    "shard_1": {"add_s_total": add_s, "add_calls": adds},
                },
            }
        }

    rows = {
        r["stage"]: r
        for r in timer_shares.apex_driver_stages(apex(1.0, 10, 0.5), apex(3.0, 30, 2.5), 10.0)
    }
    assert rows["Ape-X driver idle (blocked in ray.wait)"]["share"] == pytest.approx(0.2)
    assert rows["Ape-X learner updates (SGD steps)"]["calls_per_s"] == pytest.approx(8.0)
    assert rows["Ape-X learner calls"]["calls_per_s"] == pytest.approx(2.0)
    add = rows["Ape-X replay shard busy: add"]
    assert add["share"] == pytest.approx(0.2)  # 2 s busy of 10 s, per shard
    assert add["calls_per_s"] == pytest.approx(2.0)
    assert add["per_call_ms"] == pytest.approx(100)


def test_restarted_timers_are_running_means_of_new_calls_only():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    logger = MetricsLogger()
    for value in (100.0, 100.0):  # the build and warm-up
        logger.log_value(("timers", "training_step"), value, reduce="ema")
    logger.log_value("episode_return_mean", 5.0, reduce="ema")
    assert timer_shares._restart(logger) == 1  # the timer, not the return
    for value in (1.0, 2.0, 3.0):
        logger.log_value(("timers", "training_step"), value, reduce="ema")
    assert logger.peek(("timers", "training_step")) == pytest.approx(2.0)
    reduced = logger.reduce(compile=True)
    assert reduced["timers"]["training_step"] == pytest.approx(2.0)
    logger.log_value(("timers", "training_step"), 6.0, reduce="ema")
    assert logger.peek(("timers", "training_step")) == pytest.approx(3.0)  # across reduces


def test_py_spy_top_functions():
    raw = (
        "<module> (a.py:1);f (/x/site-packages/torch/nn/linear.py:5) 30\n"
        "<module> (a.py:1);g (envs/cabs.py:9) 10\n"
        "<module> (a.py:1);f (/x/site-packages/torch/nn/linear.py:7) 10\n"
    )
    top, total = profiling.top_functions(raw)
    assert total == 50
    assert top[0] == ("f (torch/nn/linear.py)", pytest.approx(0.8))
    assert top[1] == ("g (envs/cabs.py)", pytest.approx(0.2))


def test_profile_markdown_summary(monkeypatch):
    args = profiling.parse_args(["--env", "cabs", "--max-warmup-s", "60", "--seconds", "20"])
    info = {"cpus": 2, "gpu": None, "cpu_model": "x", "load_start": 1.0, "load_end": 1.0}
    rate = {"iteration": 1, "training_step": 50, "update": 100, "learner_call": 100,
            "sample_round": 2, "broadcast": 0}  # fmt: skip
    p = {
        "row": _row(env="cabs"),
        "rates": rate,
        "runner": timer_shares.runner_breakdown(_result(), 800.0, 4),
        "driver": timer_shares.driver_breakdown("dqn", _result(), rate),
        "py_spy": {"driver": ([("f (x.py)", 0.5)], 100)},
        "fragment": 32,
    }
    text = perf_report.profile_markdown([p], info, "python -m sweeps.profiling", args)
    summary = next(line for line in text.splitlines() if line.startswith("| dqn |"))
    assert "RLModule inference 40%" in summary
    assert "timers/training_step" not in summary  # the total, not a cost of its own
    assert "share of its 100 CPU samples" in text
    assert math.isfinite(p["rates"]["update"])


@pytest.mark.parametrize(
    "algo, runners, learners, threads",
    [
        ("dqn", 1, 0, 2),  # samples, then trains: the idle runner's CPU goes to the learner
        ("dqn", 1, 1, 1),  # a remote learner: the driver keeps its own CPU
        ("apex", 1, 0, 1),  # samples while it trains: the runner keeps its CPU
        ("dqn-actor", 1, 0, 2),  # a Tune trial: Ray's actor subclass, methods wrapped
        ("columnar-actor", 1, 0, 2),  # the suite's DQN with RLlib's training_step
        ("apex-actor", 1, 0, 1),
        ("dqn", 14, 0, 8),  # runners on other nodes: at most this machine's cores
        ("dqn-oversubscribed", 14, 0, 1),  # --num-cpus beyond the cores: one thread each
    ],
)
def test_torch_threads_take_the_cpus_idle_while_the_learner_updates(
    algo, runners, learners, threads, monkeypatch
):
    import torch
    from ray.rllib.algorithms.dqn import DQN

    from sweeps.algorithms.apex.algorithm import ApexDQN
    from sweeps.algorithms.columnar_dqn import ColumnarDQN
    from sweeps.harness.callbacks import _size_torch_threads

    config = SimpleNamespace(
        num_cpus_for_main_process=1,
        num_env_runners=runners,
        num_cpus_per_env_runner=1,
        num_learners=learners,
    )
    cls = {"dqn": DQN, "columnar": ColumnarDQN, "apex": ApexDQN}[algo.split("-")[0]]
    if algo.endswith("-actor"):  # as ray.actor._modify_class and its tracing wrappers make it
        cls = type(
            cls.__name__,
            (cls,),
            {
                "__ray_actor_class__": cls,
                "training_step": lambda self: None,
            },
        )
    algorithm = object.__new__(cls)
    algorithm.config = config
    monkeypatch.setattr("sweeps.harness.cpu_time.cores", lambda: 8)  # the cores it may use
    if algo.endswith("-oversubscribed"):
        monkeypatch.setenv("SUITE_OVERSUBSCRIBED", "1")
    before = torch.get_num_threads()
    try:
        _size_torch_threads(algorithm)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_a_baseline_is_measured_once_as_its_trial(tmp_path):
    """SB3's DQN on the cab env, as the benchmark's trial: one row whatever the runner counts,
    its updates/s at its recipe's one update per 64 env steps; the driver's torch threads as
    they were before it."""
    import json

    import ray
    import torch

    ray.shutdown()  # the session's local Ray, if an earlier test started it: main starts its own
    threads = torch.get_num_threads()
    out = tmp_path / "throughput.json"
    argv = ["--algos", "sb3-dqn", "--seconds", "2", "--max-warmup-s", "10", "--raw-env-s", "0.5"]
    assert throughput.main([*argv, "--num-env-runners", "0,1", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["algo"], row["num_env_runners"], row["num_envs_per_env_runner"]) == (
        "sb3-dqn",
        0,
        8,
    )
    assert row["updates_per_s"] > 0 and row["q_learning_extras"] == "n-step 3"
    assert 48 <= row["env_steps_sampled_per_s"] / row["updates_per_s"] <= 80
    assert torch.get_num_threads() == threads

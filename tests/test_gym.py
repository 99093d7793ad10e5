"""Any Gymnasium env (the generic workload): an env of the tests' own loaded by entry point and
``CartPole-v1``, through the sweep and benchmark paths; bad input refused in one line before Ray
starts; the report of a real benchmark run (random-policy row, targets, the fastest named).

The one real benchmark (two algorithms, one seed, a few seconds of training each) is shared by
every test that reads its folder or report (``corridor_benchmark``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pandas as pd
import pytest

import envs
from envs.gym import random_returns, resolve
from sweeps import benchmark, gym_family
from sweeps.__main__ import main as list_main
from sweeps.harness.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CORRIDOR = "tests.gym_envs:Corridor"


# ------------------------------------------------------------------------------------------------
# The env, resolved and built (no Ray)
# ------------------------------------------------------------------------------------------------


def test_an_id_an_entry_point_and_a_factory_resolve_with_their_config():
    cartpole = resolve("CartPole-v1")
    assert cartpole.kind == "id" and cartpole.reward_threshold == 475.0
    assert cartpole.vector_observations and cartpole.discrete_actions
    corridor = resolve(CORRIDOR, {"length": 9})  # a class: the config as keyword arguments
    assert corridor.kind == "entry_point" and corridor.observation_space == gym.spaces.Discrete(9)
    assert not corridor.vector_observations and corridor.reward_threshold is None
    factory = resolve("tests.gym_envs:make_corridor", {"length": 3})  # a factory: one dict
    assert factory.observation_space == gym.spaces.Discrete(3)
    # the creator RLlib's runners and sweeps.evaluate use
    assert envs.make(CORRIDOR, {"length": 5}).observation_space.n == 5


def test_an_ale_id_takes_pongs_atari_recipe():
    breakout = resolve("ALE/Breakout-v5")
    assert breakout.kind == "atari"
    assert breakout.observation_space.shape == (42, 42, 4)  # envs/pong.py's frames
    config = gym_family.make_config("appo", _args(env="ALE/Breakout-v5"))
    assert config.gym_env_vectorize_mode == "vector_entry_point"
    from sweeps.workloads.rllib_config import PONG_MODEL

    assert config.model_config["conv_filters"] == PONG_MODEL["conv_filters"]
    assert config.clip_rewards is True


def test_discrete_observations_are_flattened_vectors_are_not():
    from sweeps.workloads.rllib_config import flatten_observations

    corridor = gym_family.make_config("apex", _args(env=CORRIDOR))
    assert corridor._env_to_module_connector is flatten_observations
    cartpole = gym_family.make_config("dqn", _args(env="CartPole-v1"))
    assert cartpole._env_to_module_connector is None
    assert cartpole.model_config["fcnet_hiddens"] == list(gym_family.HIDDENS)


def test_observations_rescaled_by_the_env_s_own_bounds_where_it_asks():
    import numpy as np

    # MountainCar: position in [-1.2, 0.6], velocity in +-0.07, each to [-1, 1]; the key is the
    # suite's, not the env's (gym.make would refuse it).
    raw, scaled = (
        envs.make("MountainCar-v0", {}),
        envs.make("MountainCar-v0", {"obs_scale": "bounds"}),
    )
    assert scaled.observation_space == gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    (x, _), (y, _) = raw.reset(seed=3), scaled.reset(seed=3)
    np.testing.assert_allclose(y, [2 * (x[0] + 1.2) / 1.8 - 1, x[1] / 0.07], rtol=1e-5, atol=1e-6)
    for _ in range(50):
        x, *_ = raw.step(2)
        y, *_ = scaled.step(2)
    assert scaled.observation_space.contains(y)
    np.testing.assert_allclose(y, [2 * (x[0] + 1.2) / 1.8 - 1, x[1] / 0.07], rtol=1e-5, atol=1e-6)
    # CartPole: the bounded position and angle rescaled, the unbounded velocities as they are.
    cartpole = resolve("CartPole-v1", {"obs_scale": "bounds"}).observation_space
    assert list(cartpole.low) == [-1.0, -np.inf, -1.0, -np.inf]
    # Nothing to rescale (a Discrete, an image) or "none": the env as it is.
    assert resolve("Taxi-v3", {"obs_scale": "bounds"}).observation_space == gym.spaces.Discrete(500)
    assert resolve("MountainCar-v0", {"obs_scale": "none"}).observation_space.high[1] == np.float32(
        0.07
    )
    with pytest.raises(ValueError, match=r"obs_scale='unit': expected one of none, bounds"):
        resolve("CartPole-v1", {"obs_scale": "unit"})


def test_random_reference_is_seeded_and_capped():
    a = random_returns(CORRIDOR, {}, 20, 0)
    assert a == random_returns(CORRIDOR, {}, 20, 0) and a["episodes"] == 20
    assert a["mean"] < 0.5  # far below the greedy optimum 0.95
    capped = random_returns("CartPole-v1", {}, 50, 0, max_steps=100)
    assert capped["episodes"] < 50 and capped["steps"] == 100


def test_the_exact_optimum_of_an_env_that_publishes_its_model():
    from envs import exact_optimum
    from envs.gym import tabular_optimum

    # A lake without slips: the goal is always reached (the only reward, 1); with slips the
    # best policy reaches it about 74% of the time within the 100-step limit (Sutton & Barto's
    # 4x4 map, a known figure); Taxi's shortest rides, 20 a fare less a step each, from a
    # uniform start: 7.93; the cliff's shortest path, 13 steps of -1.
    assert tabular_optimum("FrozenLake-v1", {"is_slippery": False}) == 1.0
    assert tabular_optimum("FrozenLake-v1") == pytest.approx(0.744, abs=1e-3)
    assert exact_optimum("Taxi-v3") == pytest.approx(7.93)
    assert exact_optimum("CliffWalking-v1") == -13.0
    # No model, no figure (and an ALE game's emulator is not even started)
    assert tabular_optimum("CartPole-v1") is None and tabular_optimum(CORRIDOR) is None
    assert tabular_optimum("ALE/Pong-v5") is None
    # exact_optimum builds only what Gymnasium's registry names (a trial's env may be a name
    # only Ray Tune's registry knows: tests/faulty_envs.py)
    assert exact_optimum("Unregistered-v0") is None and exact_optimum(CORRIDOR) is None


def test_python_m_sweeps_lists_the_generic_sweeps(capsys):
    assert list_main([]) == 0
    out = capsys.readouterr().out
    for algo in ("dqn", "apex", "impala", "appo"):
        assert f"{algo}_gym" in out
    assert "on any Gymnasium env" in out


def _args(**kw) -> Settings:
    """The parsed flags of a generic sweep (its defaults and ``kw``)."""
    from sweeps.appo_gym import SWEEP
    from sweeps.harness.cli import flag_values

    return flag_values(SWEEP).replace(**kw)


def test_the_best_trial_of_a_run_without_target_is_printed(tmp_path, capsys):
    """An env without a reward_threshold, run without --target: the summary says so (it used to
    index the empty target list)."""
    from types import SimpleNamespace

    from sweeps.harness.record import RunRecord
    from sweeps.harness.reporting import print_best

    best = SimpleNamespace(
        metrics={"suite": {"greedy_return": 1.0}}, path=str(tmp_path / "T_1"), config={"lr": 1e-3}
    )
    record = RunRecord(targets=[], hyperparameters=["lr"])
    print_best(best, record, "suite/greedy_return")
    out = capsys.readouterr().out
    assert "no reward target (no --target, no reward_threshold" in out and "lr=0.001" in out


# ------------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, before Ray starts, nothing written
# ------------------------------------------------------------------------------------------------

BAD_SWEEP_INPUT = {
    "unknown id": (
        "dqn_gym",
        ["--env", "CartPol-v1"],
        "--env CartPol-v1: no such Gymnasium env; did you mean CartPole-v1",
    ),
    "entry point that does not import": (
        "appo_gym",
        ["--env", "tests.no_such_module:Env"],
        "cannot import tests.no_such_module: ModuleNotFoundError",
    ),
    "not an env": (
        "appo_gym",
        ["--env", "tests.gym_envs:NotAnEnv"],
        "NotAnEnv is not a gymnasium.Env subclass",
    ),
    "not an env (a value)": (
        "appo_gym",
        ["--env", "tests.gym_envs:NOT_AN_ENV"],
        "not a gymnasium.Env subclass or a factory",
    ),
    "raises on construction": (
        "impala_gym",
        ["--env", "tests.gym_envs:Broken"],
        "raised on construction: RuntimeError: Broken: no licence file found",
    ),
    "env-config not JSON": (
        "appo_gym",
        ["--env-config", "{length: 3}"],
        "argument --env-config: is not JSON",
    ),
    "env-config not an object": ("appo_gym", ["--env-config", "[3]"], "must be a JSON object"),
    "env-config rejected (key)": (
        "apex_gym",
        ["--env", CORRIDOR, "--env-config", '{"size": 3}'],
        'rejected --env-config {"size": 3}: TypeError: Corridor.__init__() got an unexpected',
    ),
    "env-config rejected (value)": (
        "apex_gym",
        ["--env", CORRIDOR, "--env-config", '{"length": 1}'],
        "length must be an int >= 2, got 1",
    ),
    "a variant flag": (
        "dqn_gym",
        ["--env", "Acrobot-v1", "--variant", "requests"],
        "--variant: Acrobot-v1 has no variants",
    ),
    "tm-seed": ("dqn_gym", ["--tm-seed", "3"], "--tm-seed: CartPole-v1 has no variants"),
    "continuous actions for DQN": (
        "dqn_gym",
        ["--env", "Pendulum-v1"],
        "--env Pendulum-v1 has a Box action space (Box(-2.0, 2.0, (1,), float32)): DQN needs "
        "Discrete actions; algorithms that fit: IMPALA, APPO",
    ),
    "continuous actions for Ape-X": ("apex_gym", ["--env", "Pendulum-v1"], "Ape-X needs Discrete"),
    "an observation no network takes": (
        "appo_gym",
        ["--env", "tests.gym_envs:TextWorld"],
        "observation space Text(",
    ),
}


@pytest.mark.parametrize("sweep, argv, message", BAD_SWEEP_INPUT.values(), ids=BAD_SWEEP_INPUT)
def test_bad_input_to_a_sweep_is_one_line_and_exit_2(sweep, argv, message, tmp_path, capsys):
    import importlib

    import ray

    module = importlib.import_module(f"sweeps.{sweep}")
    started = ray.is_initialized()
    with pytest.raises(SystemExit) as exit_info:
        module.main([*argv, "--storage-path", str(tmp_path / "runs"), "--name", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "runs").exists()
    assert ray.is_initialized() == started  # Ray was not started for it


BAD_BENCHMARK_INPUT = {
    "unknown id": (["--env", "Acrobat-v1"], "did you mean Acrobot-v1"),
    "continuous actions": (
        ["--env", "Pendulum-v1"],
        "DQN and Ape-X need Discrete actions; algorithms that fit: IMPALA, APPO, SB3 PPO "
        "(--algos impala,appo,sb3-ppo)",
    ),
    "a variant flag": (["--env", "CartPole-v1", "--variant", "base"], "has no variants"),
    "env-config on a named workload": (
        ["--env", "cabs", "--env-config", "{}"],
        "--env-config: for a Gymnasium env; --env cabs is a named workload",
    ),
    "rejected": (["--env", CORRIDOR, "--env-config", '{"length": 0}'], "length must be"),
}


@pytest.mark.parametrize("argv, message", BAD_BENCHMARK_INPUT.values(), ids=BAD_BENCHMARK_INPUT)
def test_bad_input_to_the_benchmark_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        benchmark.main([*argv, "--storage-path", str(tmp_path / "runs")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "runs").exists()


def test_benchmark_dry_run_routes_any_env_to_the_generic_sweeps(tmp_path, capsys):
    argv = ["--env", "Acrobot-v1", "--algos", "dqn,apex,impala,appo", "--dry-run"]
    assert benchmark.main([*argv, "--storage-path", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "targets (greedy return): -100" in out  # Acrobot-v1's reward_threshold
    for algo in ("dqn", "apex", "impala", "appo"):
        assert f"python -m sweeps.{algo}_gym " in out
    assert "--env Acrobot-v1 --env-config '{}'" in out and "--stop-reward -100.0" in out
    assert not (tmp_path / "runs").exists()
    # an env without a threshold and no --target: no stop reward, the report says so
    argv = ["--env", CORRIDOR, "--algos", "appo", "--dry-run"]
    assert benchmark.main([*argv, "--storage-path", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "targets (greedy return): none" in out and "--stop-reward" not in out
    argv = ["--env", CORRIDOR, "--algos", "appo", "--target", "0.5", "0.9", "--dry-run"]
    assert benchmark.main([*argv, "--storage-path", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "targets (greedy return): 0.5, 0.9" in out and "--stop-reward 0.9" in out


# ------------------------------------------------------------------------------------------------
# Real runs: CartPole through the sweep path, the tests' env through the benchmark and the report
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corridor_benchmark(tmp_path_factory, children_join_the_shared_ray):
    """``python -m sweeps.benchmark`` on the tests' own env (Discrete observations: one-hot),
    Ape-X and APPO, one seed, a few seconds of training each; its folder and its output."""
    storage = tmp_path_factory.mktemp("bench")
    cmd = [
        sys.executable, "-m", "sweeps.benchmark",
        "--env", CORRIDOR, "--env-config", '{"length": 6}', "--target", "0.5", "0.9",
        "--algos", "apex,appo", "--benchmark-seeds", "1", "--stop-train-time-s", "5",
        "--storage-path", str(storage), "--name", "corridor",
    ]  # fmt: skip
    env = children_join_the_shared_ray
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
    return storage / "corridor", done


@pytest.mark.slow
def test_benchmark_of_an_entry_point_env_runs_and_reports(corridor_benchmark):
    folder, done = corridor_benchmark
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for algo in ("apex", "appo"):
        record = json.loads((folder / f"corridor-{algo}" / "run.json").read_text())
        assert record["sweep"] == f"{algo}_gym" and record["status"] == "finished"
        assert record["env"] == CORRIDOR and record["variant"] == '{"length":6}'
        assert record["targets"] == [0.5, 0.9]
        assert record["metric"] == "suite/greedy_return"
        random = record["references"]["random"]
        assert random["episodes"] == 100 and random["mean"] < 0.5
    runs = pd.read_csv(folder / "runs.csv")
    assert set(runs["algo"]) == {"apex", "appo"}
    assert runs["greedy_return"].notna().any()  # greedy evaluation ran
    # each evaluation counted each of its episodes once, from its own seeded start
    assert runs.groupby("algo")["periodic_once"].max().eq(1).all()
    assert runs["random_return"].notna().all()


@pytest.mark.slow
def test_the_report_of_a_generic_env(corridor_benchmark, tmp_path):
    folder, done = corridor_benchmark
    assert done.returncode == 0
    report = (folder / "REPORT.md").read_text()
    assert f"# Results: {CORRIDOR}" in report
    assert "target **0.9**" in report
    assert "A uniformly random policy scores" in report
    assert "*random policy (reference, 100 seeded episodes, measured in these runs)*" in report
    summary = report.split("## Summary")[1].split(": detail")[0]
    # A computed verdict: a winner, a tie at these seeds, or the target missed.
    assert any(v in summary for v in ("reaches 0.9", "can't be told apart", "reached 0.9"))
    assert list(folder.glob("curves_tests.gym_envs_Corridor*.png"))
    # Without a target, the report says so and shows final returns (from the table alone).
    runs = pd.read_csv(folder / "runs.csv", dtype=str)
    runs["targets"] = "[]"
    runs.to_csv(tmp_path / "runs.csv", index=False)
    cmd = [sys.executable, "-m", "analysis", "report", str(tmp_path / "runs.csv")]
    subprocess.run([*cmd, "--out", str(tmp_path / "out")], cwd=ROOT, check=True, timeout=120)
    text = (tmp_path / "out" / "REPORT.md").read_text()
    assert "No reward target: the runs were given no `--target`" in text
    assert "**Highest final greedy evaluation return:" in text
    assert "A uniformly random policy scores" in text

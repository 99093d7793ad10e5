"""The single-process baselines (``sweeps/baselines/``): Stable-Baselines3 with rl-zoo3's tuned
hyperparameters, read from the zoo's own files, judged as the four are.

Fast: the recipes (read, not copied), the config the runner takes, the benchmark's plan, and the
trial itself in-process (no Ray cluster): its results carry the suite's keys, its training clock
leaves evaluation out, its checks play the confirmed target's seeded episodes, and a checkpoint
restores it. Slow: a benchmark of a baseline beside one of the four, end to end, to a report
that says which is faster.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from sweeps import benchmark
from sweeps.baselines import hyperparams
from sweeps.baselines.config import BaselineConfig, is_rllib
from sweeps.harness import confirm, keys
from sweeps.harness.runner import parse
from tests.test_analysis import NAN, write_experiment

ZOO = Path(__import__("rl_zoo3").__file__).parent / "hyperparams"


# --- recipes --------------------------------------------------------------------------------


@pytest.mark.parametrize("algo,stem", [("sb3-dqn", "dqn"), ("sb3-ppo", "ppo")])
def test_zoo_hyperparameters_are_read_from_the_packages_file_not_copied(algo, stem):
    recipe = hyperparams.recipe(algo, "gym", "CartPole-v1")
    on_file = yaml.safe_load((ZOO / f"{stem}.yml").read_text())["CartPole-v1"]
    assert recipe.hyperparams == on_file
    assert recipe.source.endswith(f"hyperparams/{stem}.yml: CartPole-v1")
    assert "rl-zoo3 2.9.2" in recipe.source


def test_an_atari_game_takes_the_zoos_atari_entry_and_other_envs_its_default():
    atari = hyperparams.recipe("sb3-ppo", "gym", "ALE/Breakout-v5", atari=True)
    assert "ppo.yml: atari without env_wrapper, frame_stack" in atari.source
    on_file = yaml.safe_load((ZOO / "ppo.yml").read_text())["atari"]
    assert atari.hyperparams == {
        k: v for k, v in on_file.items() if k not in ("env_wrapper", "frame_stack")
    }
    assert hyperparams.recipe("sb3-dqn", "gym", "tests.gym_envs:Corridor").source.endswith(
        "dqn.yml: default"
    )
    cabs = hyperparams.recipe("sb3-dqn", "cabs", "Cabs-v0")
    assert cabs.hyperparams == hyperparams.DEFAULTS["cabs"]["sb3-dqn"]
    assert "suite defaults" in cabs.source


def test_cab_defaults_match_the_suite_recipes():
    """The cab baselines take the suite's DQN recipe's ε schedule (5k env steps, not a share of
    the budget) and, on the request variant, its γ."""
    from sweeps import dqn_cabs, dqn_family

    dqn = hyperparams.recipe("sb3-dqn", "cabs", "Cabs-v0").hyperparams
    (_, start), (steps, final) = dqn_cabs.TUNED["epsilon"]
    assert dqn["exploration_fraction"] * dqn["n_timesteps"] == steps
    assert dqn.get("exploration_initial_eps", 1.0) == start  # SB3's default
    assert dqn["exploration_final_eps"] == final
    for algo in ("sb3-dqn", "sb3-ppo"):
        requests = hyperparams.recipe(algo, "cabs", "CabsRequests-v0")
        assert requests.hyperparams["gamma"] == dqn_family.REQUESTS_GAMMA
        assert "CabsRequests-v0" in requests.source


def test_model_kwargs_as_rl_zoo3_makes_them():
    built = hyperparams.model_kwargs(
        {
            "n_envs": 8,
            "n_timesteps": 1e5,
            "policy": "MlpPolicy",
            "learning_rate": "lin_0.001",
            "train_freq": [4, "step"],
            "policy_kwargs": "dict(net_arch=[64, 64], activation_fn=nn.ReLU)",
        }
    )
    assert (built.n_envs, built.n_timesteps) == (8, 100_000)
    assert "n_envs" not in built.kwargs and "n_timesteps" not in built.kwargs
    assert built.kwargs["learning_rate"](0.5) == pytest.approx(0.0005)  # linear to 0
    assert built.kwargs["train_freq"] == (4, "step")
    assert built.kwargs["policy_kwargs"]["net_arch"] == [64, 64]
    with pytest.raises(ValueError, match="normalize"):
        hyperparams.model_kwargs({"normalize": True, "policy": "MlpPolicy"})


# --- the config the runner takes -------------------------------------------------------------


def _config(argv=(), sweep="sweeps.sb3_dqn_cabs"):
    module = __import__(sweep, fromlist=["SWEEP"])
    return parse(module.SWEEP, ["--benchmark-seeds", "1", *argv], new_folder=False)


def test_a_baseline_sweep_parses_to_its_config_with_the_confirmed_target():
    _, config = _config(["--stop-reward", "2500", "--iteration-s", "0.5"])
    assert isinstance(config, BaselineConfig) and not is_rllib(config)
    space = config.to_dict()
    assert space["env"] == "Cabs-v0" and space["model_class"] == "DQN"
    assert space["confirm"]["target"] == 2500.0
    assert space["confirm"]["seed"] == confirm.CONFIRM_SEED  # the four's checks' episodes
    assert space["iteration_s"] == 0.5


def test_set_changes_a_hyperparameter_and_refuses_an_unknown_one():
    from sweeps.harness.errors import UsageError

    _, config = _config(["--set", "learning_rate=0.01"])
    assert config.to_dict()["hyperparams"]["learning_rate"] == 0.01
    with pytest.raises(UsageError, match="has no setting 'learning_rat'"):
        _config(["--set", "learning_rat=0.01"])


def test_the_benchmark_runs_a_baseline_once_whatever_the_runner_counts(tmp_path):
    args = benchmark.parse_args(
        [
            "--algos", "sb3-dqn,dqn",
            "--num-env-runners", "0,1",
            "--storage-path", str(tmp_path),
            "--name", "b",
        ]
    )  # fmt: skip
    runs = benchmark.plan(args)
    assert [r.folder.name for r in runs] == ["b-sb3-dqn", "b-dqn-r0", "b-dqn-r1"]
    assert runs[0].module == "sweeps.sb3_dqn_cabs" and runs[0].sweep == "sb3_dqn_cabs"
    assert "--num-env-runners" not in runs[0].flags
    assert benchmark.check_reuse(runs[0]).reuse is None  # its own parser takes the flags


def test_a_baseline_without_a_sweep_for_the_env_is_one_clear_error(capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    missing = "sweeps.sb3_dqn_pong"  # (as for a workload added without its baseline's sweep)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == missing else find_spec(name)
    )
    with pytest.raises(SystemExit) as e:
        benchmark.parse_args(["--env", "pong", "--algos", "sb3-dqn"])
    assert e.value.code == 2
    assert "sb3-dqn: the baseline has no sweep for --env pong" in capsys.readouterr().err


def test_a_baseline_refuses_sweep_mode_in_one_line(tmp_path, capsys):
    from sweeps import sb3_dqn_cabs

    assert sb3_dqn_cabs.main(["--storage-path", str(tmp_path), "--name", "x"]) == 2
    err = capsys.readouterr().err
    assert "sb3_dqn_cabs has no search: " in err and "--benchmark-seeds N" in err
    assert not (tmp_path / "x").exists()


# --- the trial, in-process ------------------------------------------------------------------


def _trainable(tmp_path, monkeypatch, **settings):
    """The trial as Tune builds it, in this process (its log folder under ``tmp_path``)."""
    import ray.tune.trainable.trainable as tune_trainable

    from sweeps.baselines.trainable import BaselineTrainable

    monkeypatch.setattr(tune_trainable, "DEFAULT_STORAGE_PATH", str(tmp_path / "ray_results"))

    _, config = _config(["--stop-reward", "2500", "--confirm-episodes", "3"])
    space = {**config.to_dict(), "iteration_s": 0.3, "eval_episodes": 2, **settings}
    return BaselineTrainable(config=space)


def test_results_carry_the_suites_keys_and_the_clock_leaves_evaluation_out(tmp_path, monkeypatch):
    from sweeps.harness import held_out_eval

    played = []
    real_play = held_out_eval.play

    def slow_play(module, env_id, env_config, episodes, seed, sampled=False):
        played.append((episodes, seed, sampled))
        time.sleep(0.4)
        return real_play(module, env_id, env_config, episodes, seed, sampled)

    monkeypatch.setattr(held_out_eval, "play", slow_play)
    trial = _trainable(tmp_path, monkeypatch)
    try:
        started = time.perf_counter()
        results = [trial.train() for _ in range(3)]
        wall = time.perf_counter() - started
    finally:
        trial.stop()
    last = results[-1]
    train, evaluation = keys.get(last, keys.TRAIN_TIME_S), keys.get(last, keys.EVAL_TIME_S)
    assert len(played) >= 3 and evaluation >= 0.4 * len(played)
    # 3 slices of at least 0.3 s of learn() (longer on a loaded box) are the clock; the
    # evaluation is not in it (counted in both, the two would add up to more than the wall).
    assert train >= 0.9 - 1e-6
    assert train + evaluation <= wall
    assert keys.get(last, keys.ENV_STEPS) > 0
    assert keys.get(last, keys.ENV_STEPS) == keys.get(last, keys.ENV_STEPS_SAMPLED)
    assert not math.isnan(keys.get(last, keys.GREEDY_RETURN))
    assert keys.get(last, keys.EVAL_RETURN_MEAN) == keys.get(last, keys.GREEDY_RETURN)
    # Reported beside the greedy return, whatever 0.9 s of training learned (it can be < 0).
    pct = keys.get(last, keys.PCT_OF_OPTIMUM)
    assert math.isfinite(pct) and (pct > 0) == (keys.get(last, keys.GREEDY_RETURN) > 0)
    assert keys.get(last, keys.CPU)["processes"] == 1
    assert keys.get(last, keys.EVALUATIONS) == 3  # cabs: no --eval-share, one each iteration
    assert 1.2 <= keys.get(last, keys.PERIODIC_EVAL_S) <= evaluation


def test_the_baseline_keeps_evaluation_to_its_share_as_the_four_do(tmp_path, monkeypatch):
    from sweeps.harness import held_out_eval

    real_play = held_out_eval.play

    def slow_play(module, env_id, env_config, episodes, seed, sampled=False):
        time.sleep(0.4)
        return real_play(module, env_id, env_config, episodes, seed, sampled)

    monkeypatch.setattr(held_out_eval, "play", slow_play)
    trial = _trainable(tmp_path, monkeypatch, eval_share=0.25)
    try:
        results = [trial.train() for _ in range(3)]
    finally:
        trial.stop()
    # The first evaluation (>= 0.4 s) ran; a second needs >= 3.2 s of training at 25%: 0.9 s ran.
    assert [keys.get(r, keys.EVALUATIONS) for r in results] == [1, 1, 1]
    assert keys.get(results[-1], keys.PERIODIC_EVAL_S) >= 0.4


def test_a_check_plays_the_confirmed_targets_seeded_episodes(tmp_path, monkeypatch):
    from sweeps.harness import held_out_eval

    seeds = []
    real_play = held_out_eval.play

    def recording_play(module, env_id, env_config, episodes, seed, sampled=False):
        seeds.append((episodes, seed, sampled))
        return real_play(module, env_id, env_config, episodes, seed, sampled)

    monkeypatch.setattr(held_out_eval, "play", recording_play)
    trial = _trainable(tmp_path, monkeypatch, eval_interval=0)
    try:
        check = trial._play_check(None)
    finally:
        trial.stop()
    # greedy, then sampled (a Q-learner has no distribution: None), on CONFIRM_SEED + i
    assert seeds == [(3, confirm.CONFIRM_SEED, False), (3, confirm.CONFIRM_SEED, True)]
    assert check.policy == "greedy" and math.isnan(check.sampled)


def test_a_checkpoint_restores_the_model_and_its_clocks(tmp_path, monkeypatch):
    trial = _trainable(tmp_path, monkeypatch, eval_interval=0)
    try:
        first, deadline = trial.train(), time.monotonic() + 120
        while not keys.get(first, keys.EPISODES_LIFETIME, 0):  # a 0.3-s slice on a slow box
            assert time.monotonic() < deadline, "no game ended in 120 s"
            first = trial.train()
        folder = tmp_path / "checkpoint"
        folder.mkdir()
        trial.save_checkpoint(str(folder))
        steps = keys.get(first, keys.ENV_STEPS)
    finally:
        trial.stop()
    from sweeps.harness.held_out_eval import load_module

    policy = load_module(folder)  # what python -m sweeps.evaluate plays
    assert policy.takes_env_io and policy.sampled([[0.0] * 1]) is None
    again = _trainable(tmp_path, monkeypatch, eval_interval=0)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            again.load_checkpoint(str(folder))
        assert not [w for w in said if "n_steps" in str(w.message)]
        buffer, model = again.model.replay_buffer, again.model
        assert (buffer.n_steps, buffer.gamma) == (model.n_steps, model.gamma)  # n-step kept
        assert model.n_steps > 1  # (the cab recipe's 3: the restore is an n-step one)
        assert again.model.num_timesteps == steps
        second = again.train()
    finally:
        again.stop()
    assert keys.get(second, keys.TRAIN_TIME_S) > keys.get(first, keys.TRAIN_TIME_S)
    episodes = keys.get(first, keys.EPISODES_LIFETIME)
    assert keys.get(second, keys.EPISODES_LIFETIME) >= episodes > 0  # counted on, not anew
    assert keys.get(second, keys.ENV_STEPS) > steps


def test_a_trial_leaves_no_folder_in_the_temp_dir(tmp_path, monkeypatch):
    """SB3's default logger made an empty SB3-<date> folder in the temp dir on every learn(),
    for a new model and for a restored one."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    trial = _trainable(tmp_path, monkeypatch, eval_interval=0)
    try:
        trial.train()
        folder = tmp_path / "checkpoint"
        folder.mkdir()
        trial.save_checkpoint(str(folder))
    finally:
        trial.stop()
    again = _trainable(tmp_path, monkeypatch, eval_interval=0)
    try:
        again.load_checkpoint(str(folder))
        again.train()
    finally:
        again.stop()
    assert not list(temp.iterdir())


# --- the report ---------------------------------------------------------------------------


def test_the_report_opens_with_whether_the_suite_beats_the_library(tmp_path):
    from analysis.__main__ import main

    rising = dict(returns=[NAN, 60.0, 95.0, 95.0], greedy=[NAN, 60.0, 95.0, 95.0])
    write_experiment(
        tmp_path / "raw", "sb3", [dict(seed=s, **rising) for s in range(3)], algo="sb3-dqn"
    )
    faster = [dict(seed=s, secs_per_iter=0.25, **rising) for s in range(3)]
    write_experiment(tmp_path / "raw", "apex", faster, algo="apex")
    assert main(["report", str(tmp_path / "raw"), "--out", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "REPORT.md").read_text()
    summary = report.split("### ", 2)[1]
    first = next(line for line in summary.splitlines()[1:] if line.strip())
    assert first.startswith(
        "**Is Ray worth it here?** Against Stable-Baselines3 (`sb3-dqn · one process`): **yes**"
    )
    assert "4.00×" in first  # 3 s against 0.75 s on every seed
    assert "speedup [95% interval] vs sb3-dqn · one process" in summary
    assert "### Speedup against Stable-Baselines3" in report


def _verdict_beside_scaling(tmp_path, library_at: Sequence[int], at_4: Sequence[int]) -> str:
    """The summary's first line for DQN at 1 and 4 runners (``write_scaling``: predicted on a
    core per process at 2 s and 0.75 s at the medians) and the baseline, one process, its
    seeds reaching the target at ``library_at`` s, predicted as run."""
    from analysis.__main__ import main
    from tests.test_scaling_report import _reaching_90_at, add_cpu_figures, write_scaling

    root = write_scaling(tmp_path / "raw", cpu=True, at_4=at_4)
    library = [
        dict(seed=s, greedy=_reaching_90_at(i, last=6), returns=[NAN] * 6)
        for s, i in enumerate(library_at)
    ]
    exp = write_experiment(root, "sb3", library, algo="sb3-dqn")
    add_cpu_figures(exp, factor=1.0, ran_s={"trial": 2.0}, trial_cpus=1.0)
    assert main(["report", str(root), "--out", str(tmp_path / "out")]) == 0
    summary = (tmp_path / "out" / "REPORT.md").read_text().split("### ", 2)[1]
    return next(line for line in summary.splitlines()[1:] if line.strip())


def test_where_the_library_is_faster_the_report_predicts_the_crossover(tmp_path):
    """DQN at 4 runners 3 s as run, slower than the baseline's 2 s; predicted 0.75 s: the
    crossover is the 4-runner trial's 5 cores."""
    first = _verdict_beside_scaling(tmp_path, library_at=(2, 2, 2), at_4=(3, 3, 3))
    assert "**not on this machine**" in first
    assert "Predicted on a machine with a core per process" in first
    assert "**the crossover is at 5 cores**, where dqn · 4 runners on 5 cores" in first


def test_where_the_seeds_cannot_tell_but_the_library_leads_the_crossover_is_said_too(tmp_path):
    """The library's seeds reach the target at 2, 2 and 5 s (median 2 s), the suite's fastest
    (DQN at 4 runners) at 2, 3 and 3 s: a tie at 3 seeds, the library ahead on the medians;
    the sentence goes on to where more cores put the suite ahead."""
    first = _verdict_beside_scaling(tmp_path, library_at=(2, 2, 5), at_4=(2, 3, 3))
    assert "can't be told apart" in first
    assert "**the crossover is at 5 cores**, where dqn · 4 runners on 5 cores" in first


# --- end to end -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_benchmark_puts_the_baseline_beside_the_four_and_says_which_is_faster(
    tmp_path, children_join_the_shared_ray
):
    out = tmp_path / "report"
    cmd = [
        sys.executable, "-m", "sweeps.benchmark",
        "--algos", "sb3-dqn,dqn",
        "--num-env-runners", "1",
        "--benchmark-seeds", "1",
        "--stop-train-time-s", "20",
        "--stop-reward", "1500",
        "--confirm-episodes", "5",
        "--storage-path", str(tmp_path / "runs"),
        "--name", "b",
        "--out", str(out),
    ]  # fmt: skip
    env = children_join_the_shared_ray
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = (out / "REPORT.md").read_text()
    assert "sb3-dqn · one process" in report
    assert "**Is Ray worth it here?** Against Stable-Baselines3" in report
    assert "### Speedup against Stable-Baselines3" in report

"""Tests of ``analysis``: collect, tables, report and CLI, on small fake Tune experiments.

The fixtures below are *fixtures*: hand-written experiment folders in the layout the runner
produces (run.json + one folder per trial with params.json and result.json), with controlled
return curves so that every expected number can be computed by hand. No Ray cluster is started.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import collect, report, tables
from analysis.__main__ import main
from sweeps import keys

NAN = math.nan

# --- Fixture writer ---------------------------------------------------------------------------


def _put(result: dict[str, Any], key: keys.Key, value: Any) -> None:
    node = result
    for part in key[:-1]:
        node = node.setdefault(part, {})
    node[key[-1]] = value


def write_trial(
    exp_dir: Path,
    index: int,
    *,
    returns: Sequence[float],
    greedy: Sequence[float] | None = None,
    seed: int = 0,
    num_env_runners: int = 1,
    hp: dict[str, Any] | None = None,
    steps_per_iter: int = 100,
    secs_per_iter: float = 1.0,
    eval_secs_per_iter: float = 0.5,
    error: bool = False,
    tm_seed: int | None = None,
) -> Path:
    """One fake trial: iteration i (1-based) has env_steps = i * steps_per_iter and training
    wall-clock = i * secs_per_iter (+ i * eval_secs_per_iter of evaluation in time_total_s)."""
    trial_id = f"abc12_{index:05d}"
    trial_dir = exp_dir / f"DQN_Cabs-v0_{trial_id}_{index}_seed={seed}"
    trial_dir.mkdir(parents=True)
    params: dict[str, Any] = {
        "seed": seed,
        "num_env_runners": num_env_runners,
        "env_config": {} if tm_seed is None else {"tm_seed": tm_seed},
    }
    for dotted, value in (hp or {}).items():
        node = params
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    (trial_dir / "params.json").write_text(json.dumps(params))
    lines = []
    for i, ret in enumerate(returns, start=1):
        train_s, eval_s = i * secs_per_iter, i * eval_secs_per_iter
        r: dict[str, Any] = {"training_iteration": i, "trial_id": trial_id, "timestamp": 1000 + i}
        _put(r, keys.TIME_TOTAL_S, train_s + eval_s)
        _put(r, keys.RETURN_MEAN, ret)
        _put(r, keys.RETURN_MIN, ret - 10 if not math.isnan(ret) else NAN)
        _put(r, keys.RETURN_MAX, ret + 10 if not math.isnan(ret) else NAN)
        _put(r, keys.ENV_STEPS_SAMPLED, i * steps_per_iter)
        _put(r, keys.ENV_STEPS, i * steps_per_iter)
        _put(r, keys.TRAIN_TIME_S, train_s)
        _put(r, keys.EVAL_TIME_S, eval_s)
        _put(r, keys.ENV_STEPS_PER_S, steps_per_iter / secs_per_iter)
        g = greedy[i - 1] if greedy is not None else NAN
        _put(r, keys.GREEDY_RETURN, g)
        if not math.isnan(g):
            _put(r, keys.EVAL_RETURN_MEAN, g)
        r["config"] = {"lr": 0.001, "a_big": list(range(5))}  # analysis must ignore this
        lines.append(json.dumps(r))
    (trial_dir / "result.json").write_text("".join(line + "\n" for line in lines))
    if error:
        (trial_dir / "error.txt").write_text("Traceback: RuntimeError: boom\n")
    return trial_dir


def write_experiment(
    root: Path,
    name: str,
    trials: Sequence[dict[str, Any]],
    *,
    algo: str = "dqn",
    env: str = "cabs",
    variant: str | None = "base",
    kind: str = "benchmark",
    budget: int = 500,
    targets: Sequence[float] = (50.0, 90.0),
    optimum: float | None = 100.0,
    scheduler: dict[str, Any] | None = None,
    hyperparameters: Sequence[str] = (),
    git_dirty: bool | None = False,
) -> Path:
    """A fake Tune experiment folder with our runner's run.json and one folder per trial."""
    exp_dir = root / name
    exp_dir.mkdir(parents=True)
    run = {
        "sweep": name,
        "algo": algo,
        "env": env,
        "variant": variant,
        "env_id": "Cabs-v0",
        "kind": kind,
        "command": f"python sweeps/{name}.py --num-samples {len(trials)}",
        "argv": [f"sweeps/{name}.py", "--num-samples", str(len(trials))],
        "args": {"num_samples": len(trials)},
        "hyperparameters": list(hyperparameters),
        "search_space": {h: "loguniform(0.0001, 0.01)" for h in hyperparameters},
        "metric": keys.flat(keys.RETURN_MEAN),
        "mode": "max",
        "stop": {keys.flat(keys.ENV_STEPS): budget},
        "scheduler": scheduler or {"type": "fifo"},
        "optimum": optimum,
        "targets": list(targets),
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": git_dirty,
        "versions": {"ray": "2.60.0", "torch": "2.13.0", "python": "3.11.7"},
        "machine": {"cpus": 2, "gpus": 0, "cpu_model": "Fake CPU", "platform": "Linux-x86_64"},
        "started_at": "2025-01-01T00:00:00+00:00",
        "ended_at": "2025-01-01T01:00:00+00:00",
        "status": "finished",
    }
    (exp_dir / "run.json").write_text(json.dumps(run))
    (exp_dir / "experiment_state-2025-01-01_00-00-00.json").write_text("{}")
    for index, trial in enumerate(trials):
        write_trial(exp_dir, index, **trial)
    return exp_dir


RISING = [NAN, 60.0, 95.0, 95.0, 95.0]  # reaches 50 at iteration 2 and 90 at iteration 3


def write_suite(root: Path) -> Path:
    """Three benchmarks (DQN x1 runner, Ape-X x1 and x4 runners) and one ASHA sweep of Ape-X.

    Iteration i: env steps = 100 i, training time = i * secs_per_iter. Targets 50 and 90.
    """
    write_experiment(
        root,
        "dqn_bench",
        [
            # target 50: iteration 3 (3 s, 300 steps); target 90: iteration 4 (4 s, 400 steps)
            dict(seed=0, returns=[NAN, 20, 60, 95, 95], greedy=[NAN, 20, 60, 95, 95]),
            # target 50: iteration 2 (2 s, 200 steps); target 90: iteration 5 (5 s, 500 steps)
            dict(seed=1, returns=[NAN, 55, 70, 80, 92], greedy=[NAN, 55, 70, 80, 92]),
            # never reaches either target within its 500-step budget
            dict(seed=2, returns=[NAN, 10, 20, 30, 40], greedy=[NAN, 10, 20, 30, 40]),
        ],
    )
    apex = dict(returns=RISING, greedy=RISING)
    write_experiment(
        root,
        "apex_bench_1",
        [dict(seed=s, secs_per_iter=0.5, **apex) for s in range(2)],  # 200 steps/s
        algo="apex",
    )
    write_experiment(
        root,
        "apex_bench_4",
        [dict(seed=s, num_env_runners=4, secs_per_iter=0.25, **apex) for s in range(2)],  # 400/s
        algo="apex",
    )
    hp = ["lr", "replay_buffer_config.capacity"]
    write_experiment(
        root,
        "apex_sweep",
        [
            dict(
                hp={"lr": 1e-3, "replay_buffer_config": {"capacity": 1000}},
                returns=[NAN, 30, 60, 80, 97],
            ),
            dict(hp={"lr": 1e-2, "replay_buffer_config": {"capacity": 5000}}, returns=[NAN, 5]),
            dict(
                hp={"lr": 3e-3, "replay_buffer_config": {"capacity": 2000}},
                returns=[NAN, 40, 70, 96],
            ),
            dict(
                hp={"lr": 2e-3, "replay_buffer_config": {"capacity": 3000}},
                returns=[NAN, 10],
                error=True,
            ),
        ],
        algo="apex",
        kind="sweep",
        hyperparameters=hp,
        git_dirty=True,  # run from a modified working tree
        scheduler={
            "type": "asha",
            "time_attr": keys.flat(keys.ENV_STEPS),
            "max_t": 500,
            "grace_period": 200,
            "reduction_factor": 2,
        },
    )
    return root


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory) -> Path:
    return write_suite(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def runs(suite_dir) -> pd.DataFrame:
    collection = collect.collect([suite_dir])
    assert collection.skipped == []
    return collection.runs


@pytest.fixture(autouse=True)
def fake_references(monkeypatch):
    """A stand-in for envs.policies (the real one simulates 200 episodes per variant)."""
    module = types.ModuleType("envs.policies")
    module.reference_returns = lambda variant, tm_seed=0, episodes=200, seed=0: {
        "random": 10.0,
        "heuristic": 60.0,
        "optimum": 100.0,
    }
    monkeypatch.setitem(sys.modules, "envs.policies", module)


# --- Collect ----------------------------------------------------------------------------------


def test_collect_one_row_per_iteration_with_hyperparameter_columns(runs):
    hp_cols = ["hp/lr", "hp/replay_buffer_config.capacity"]
    assert list(runs.columns) == (
        collect.ID_COLUMNS
        + hp_cols
        + collect.ITERATION_COLUMNS
        + collect.TRIAL_COLUMNS
        + collect.EXPERIMENT_COLUMNS
    )
    # 3 + 2 + 2 trials of 5 iterations, sweep trials of 5, 2, 4 and 2 iterations
    assert len(runs) == 7 * 5 + 5 + 2 + 4 + 2
    assert not runs.duplicated(["experiment", "trial_id", "training_iteration"]).any()

    sweep = runs[runs["experiment"] == "apex_sweep"]
    first = sweep[sweep["trial_id"] == "abc12_00000"].iloc[0]
    assert first["hp/lr"] == 1e-3 and first["hp/replay_buffer_config.capacity"] == 1000
    assert (first["kind"], first["algo"], first["env"], first["variant"]) == (
        "sweep",
        "apex",
        "cabs",
        "base",
    )
    assert first["command"] == "python sweeps/apex_sweep.py --num-samples 4"
    assert first["seed"] == 0 and first["num_env_runners"] == 1
    assert math.isnan(first["return_mean"])  # no episode finished in iteration 1

    row = runs[(runs["experiment"] == "apex_bench_4") & (runs["training_iteration"] == 2)].iloc[0]
    assert row["env_steps"] == 200
    assert row["train_time_s"] == 0.5  # the suite's clock: evaluation excluded
    assert row["time_total_s"] == 1.5  # Tune's clock: 0.5 s training + 1.0 s evaluation
    assert (row["return_mean"], row["return_min"], row["return_max"]) == (60, 50, 70)
    assert row["greedy_return"] == 60 and row["pct_of_optimum"] == 60.0
    assert row["env_steps_per_s"] == 400 and row["num_env_runners"] == 4
    assert row["metric_value"] == 60


def test_collect_records_whether_the_tree_was_modified(runs):
    dirty = runs.drop_duplicates("experiment").set_index("experiment")["git_dirty"]
    assert dirty.to_dict() == {
        "apex_bench_1": "false",
        "apex_bench_4": "false",
        "apex_sweep": "true",
        "dqn_bench": "false",
    }


def test_git_dirty_is_a_bool_in_a_checkout():
    from sweeps.record import git_dirty

    assert isinstance(git_dirty(), bool)


def test_collect_trial_status(runs):
    status = runs.drop_duplicates(["experiment", "trial_id"]).set_index("trial_id")
    sweep = status[status["experiment"] == "apex_sweep"]["trial_status"].to_dict()
    assert sweep == {
        "abc12_00000": collect.COMPLETED,  # reached max_t = 500 env steps
        "abc12_00001": collect.STOPPED_EARLY,
        "abc12_00002": collect.STOPPED_EARLY,
        "abc12_00003": collect.ERRORED,  # error.txt
    }
    assert set(status[status["kind"] == "benchmark"]["trial_status"]) == {collect.COMPLETED}


def test_collect_below_budget_in_interrupted_run_is_incomplete(tmp_path):
    exp = write_experiment(tmp_path, "dqn_cut", [dict(returns=[NAN, 1.0])])
    run = json.loads((exp / "run.json").read_text())
    (exp / "run.json").write_text(json.dumps({**run, "status": "interrupted", "ended_at": None}))
    assert set(collect.collect([exp]).runs["trial_status"]) == {collect.INCOMPLETE}


def test_collect_finds_experiments_below_a_parent_folder(suite_dir):
    experiments = collect.find_experiments([suite_dir])
    assert sorted(e.name for e in experiments) == [
        "apex_bench_1",
        "apex_bench_4",
        "apex_sweep",
        "dqn_bench",
    ]
    # naming an experiment twice (directly and through its parent) collects it once
    assert len(collect.find_experiments([suite_dir, suite_dir / "dqn_bench"])) == 4


def test_collect_skips_broken_pieces_with_one_warning(tmp_path, capsys):
    exp = write_experiment(
        tmp_path / "raw", "dqn_broken", [dict(returns=[NAN, 1, 2]), dict(returns=[NAN, 3])]
    )
    trial = sorted(p for p in exp.iterdir() if p.is_dir())[0]
    with (trial / "result.json").open("a") as f:
        f.write('[1, 2]\nnot json\n{"training_iteration": 4, "env_run')  # truncated last line
    (exp / "DQN_empty_00009").mkdir()
    no_params = exp / "DQN_no_params_00010"
    no_params.mkdir()
    (no_params / "result.json").write_text('{"training_iteration": 1}\n')

    collection = collect.collect([exp])
    assert len(collection.runs) == 3 + 2
    assert len(collection.skipped) == 3
    warning = collection.warning()
    assert "3 corrupt line(s)" in warning
    assert "DQN_empty_00009 (empty trial folder)" in warning
    assert "DQN_no_params_00010 (no params.json)" in warning

    out = tmp_path / "out" / "runs.csv"
    assert main(["collect", str(exp), "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: skipped 3 item(s)")
    assert len(pd.read_csv(out)) == 5


def test_runs_csv_is_deterministic_and_round_trips(runs, suite_dir, tmp_path):
    path = tmp_path / "runs.csv"
    collect.write_runs_csv(runs, path)
    again = tmp_path / "again.csv"
    collect.write_runs_csv(collect.collect([suite_dir]).runs, again)
    assert path.read_bytes() == again.read_bytes()
    pd.testing.assert_frame_equal(collect.read_runs_csv(path), runs)


# --- Tables -----------------------------------------------------------------------------------


def test_select_configurations_uses_every_benchmark_seed_and_the_best_sweep_trial(runs):
    selected = tables.select_configurations(runs)
    trials = selected.drop_duplicates(["experiment", "trial_id"])
    assert trials.groupby("config").size().to_dict() == {
        "apex · 1 runner": 2,
        "apex · 4 runners": 2,
        "apex · best of apex_sweep": 1,
        "dqn · 1 runner": 3,
    }
    best = trials[trials["kind"] == "sweep"].iloc[0]
    assert best["trial_id"] == "abc12_00000"  # final return 97 beats 96 (stopped early)


def test_time_to_target_counts_seeds_that_never_reach_it(runs):
    ttt = tables.time_to_target(tables.select_configurations(runs))
    dqn = ttt[(ttt["config"] == "dqn · 1 runner") & (ttt["signal"] == "return_mean")]
    at_50 = dqn[dqn["target"] == 50].set_index("seed")
    assert at_50["reached"].to_dict() == {0: True, 1: True, 2: False}
    assert at_50.loc[0, ["train_time_s", "env_steps"]].tolist() == [3.0, 300]
    assert at_50.loc[1, ["train_time_s", "env_steps"]].tolist() == [2.0, 200]
    assert math.isnan(at_50.loc[2, "train_time_s"])
    assert at_50.loc[2, "budget_env_steps"] == 500

    summary = tables.summarize_time_to_target(ttt).set_index(["config", "signal", "target"])
    s = summary.loc[("dqn · 1 runner", "return_mean", 50.0)]
    assert (s["seeds"], s["reached"]) == (3, 2)
    assert (s["time_median_s"], s["time_min_s"], s["time_max_s"]) == (2.5, 2.0, 3.0)
    assert s["steps_median"] == 250
    s = summary.loc[("dqn · 1 runner", "return_mean", 90.0)]
    assert (s["reached"], s["time_median_s"]) == (2, 4.5)
    # the sweep's best trial never ran greedy evaluation: not reached, still a row
    s = summary.loc[("apex · best of apex_sweep", "greedy_return", 50.0)]
    assert (s["seeds"], s["reached"]) == (1, 0) and math.isnan(s["time_median_s"])


def test_speedup_against_single_runner_dqn(runs):
    selected = tables.select_configurations(runs)
    summary = tables.summarize_time_to_target(tables.time_to_target(selected))
    speedup = tables.speedup_vs_baseline(summary)
    assert set(speedup["baseline"]) == {"dqn · 1 runner"}
    s = speedup[(speedup["signal"] == "return_mean") & (speedup["target"] == 50)]
    s = s.set_index("config")
    # Baseline all-seed median time to 50: 2 s, 3 s and one seed that missed after 5 s -> 3 s,
    # exact (the seed that missed sorts above the middle). Ape-X: 2 iterations x 0.5 s / 0.25 s.
    assert s.loc["apex · 1 runner", "speedup"] == pytest.approx(3.0 / 1.0)
    assert s.loc["apex · 4 runners", "speedup"] == pytest.approx(3.0 / 0.5)
    assert s.loc["apex · 4 runners", "speedup_bound"] == ""
    assert s.loc["apex · 4 runners", "steps_ratio"] == pytest.approx(300 / 200)
    assert s.loc["apex · 4 runners", "note"] == "reached 2/2, baseline 2/3"
    # The sweep's best trial never ran greedy evaluation: its median is only a lower bound (its
    # budget), so the speedup is an upper bound.
    g = speedup[(speedup["signal"] == "greedy_return") & (speedup["target"] == 50)]
    g = g.set_index("config").loc["apex · best of apex_sweep"]
    assert g["speedup_bound"] == "≤" and g["note"] == "reached 0/1, baseline 2/3"
    assert g["speedup"] == pytest.approx(3.0 / g["time_median_s"])


def test_censored_median_counts_missed_seeds_at_their_budget():
    # 1 of 3 reached: the median is a missed seed's budget, only a lower bound.
    assert tables.censored_median([4.0, 60.0, 60.0], [True, False, False]) == (60.0, True)
    # 2 of 3 reached below the missed seed's budget: exact.
    assert tables.censored_median([4.0, 60.0, 6.0], [True, False, True]) == (6.0, False)
    # A missed seed with a short budget sorts below the middle: its true time is unknown.
    assert tables.censored_median([4.0, 5.0, 9.0], [True, False, True]) == (5.0, True)
    # Even count: the upper middle must be known too.
    assert tables.censored_median([1.0, 2.0, 3.0, 10.0], [True, True, True, False]) == (2.5, False)
    assert tables.censored_median([1.0, 2.0, 10.0, 10.0], [True, True, False, False]) == (6.0, True)
    value, bound = tables.censored_median([], [])
    assert math.isnan(value) and not bound


def test_baseline_is_dqn_with_one_env_runner_then_local_sampling():
    def summary(*configs: tuple[str, str, int, str]) -> pd.DataFrame:
        return pd.DataFrame(
            [dict(algo=a, kind=k, num_env_runners=n, config=c) for a, k, n, c in configs]
        )

    one = ("dqn", "benchmark", 1, "dqn · 1 runner")
    local = ("dqn", "benchmark", 0, "dqn · 0 runners")
    sweep = ("dqn", "sweep", 1, "dqn · best of dqn_sweep")
    four = ("dqn", "benchmark", 4, "dqn · 4 runners")
    apex = ("apex", "benchmark", 1, "apex · 1 runner")
    assert tables.baseline_config(summary(local, four, sweep, one, apex)) == "dqn · 1 runner"
    assert tables.baseline_config(summary(local, four, sweep)) == "dqn · best of dqn_sweep"
    assert tables.baseline_config(summary(local, four)) == "dqn · 0 runners"
    assert tables.baseline_config(summary(four, apex)) is None


def test_speedup_is_a_bound_when_most_baseline_seeds_miss(tmp_path):
    """One lucky DQN seed out of three must not make DQN the fastest configuration."""
    fast = [NAN, 20, 95, 95, 95, 95]  # reaches 90 at iteration 2
    never = [NAN, 10, 20, 20, 20, 20]
    write_experiment(
        tmp_path,
        "dqn_bench",
        [dict(seed=0, returns=fast), dict(seed=1, returns=never), dict(seed=2, returns=never)],
        budget=600,
    )
    write_experiment(
        tmp_path,
        "apex_bench",
        [dict(seed=s, returns=[NAN, 20, 40, 95, 95, 95]) for s in range(3)],  # iteration 4
        algo="apex",
        budget=600,
    )
    runs = collect.collect([tmp_path]).runs
    summary = tables.summarize_time_to_target(
        tables.time_to_target(tables.select_configurations(runs))
    )
    speedup = tables.speedup_vs_baseline(summary)
    row = speedup[(speedup["signal"] == "return_mean") & (speedup["target"] == 90)]
    row = row.set_index("config").loc["apex · 1 runner"]
    # Baseline: 2 of 3 seeds ran 6 iterations (6 s) without reaching 90 -> median >= 6 s.
    assert row["baseline_time_median_s"] == 6.0 and row["baseline_time_lower_bound"]
    assert row["time_median_s"] == 4.0 and not row["time_lower_bound"]
    assert row["speedup"] == pytest.approx(1.5) and row["speedup_bound"] == "≥"
    assert row["note"] == "reached 3/3, baseline 1/3"
    own = speedup[(speedup["config"] == "dqn · 1 runner") & (speedup["signal"] == "return_mean")]
    assert own["speedup"].isna().all()  # both sides bounds: unknown, not 1.00x
    assert tables.bounded_ratio(6.0, True, 3.0, False) == (2.0, "≥")
    assert tables.bounded_ratio(6.0, False, 3.0, True) == (2.0, "≤")


def test_scaling_speedup_and_parallel_efficiency(runs):
    selected = tables.select_configurations(runs)
    throughput = tables.scaling_throughput(selected).set_index("num_env_runners")
    assert list(throughput["algo"]) == ["apex", "apex"]  # DQN ran at one runner count only
    assert throughput.loc[1, "steps_per_s_median"] == 200
    assert throughput.loc[4, "steps_per_s_median"] == 400
    assert throughput.loc[4, "speedup"] == pytest.approx(2.0)
    assert throughput.loc[4, "efficiency"] == pytest.approx(2.0 / 4)

    summary = tables.summarize_time_to_target(tables.time_to_target(selected))
    ttt = tables.scaling_time_to_target(summary)
    row = ttt[(ttt["signal"] == "return_mean") & (ttt["target"] == 90)]
    row = row.set_index("num_env_runners").loc[4]
    assert row["time_median_s"] == pytest.approx(0.75)  # iteration 3 x 0.25 s
    assert row["speedup"] == pytest.approx(1.5 / 0.75)
    assert row["efficiency"] == pytest.approx(2.0 / 4)


def test_parallel_efficiency_counts_zero_runners_as_one():
    summary = pd.DataFrame(
        {
            "env": "cabs",
            "variant": "base",
            "algo": "impala",
            "kind": "benchmark",
            "signal": "return_mean",
            "target": 50.0,
            "num_env_runners": [0, 2],
            "seeds": 3,
            "reached": 3,
            "time_all_median_s": [12.0, 4.0],
            "time_all_lower_bound": False,
        }
    )
    row = tables.scaling_time_to_target(summary).set_index("num_env_runners").loc[2]
    assert row["speedup"] == pytest.approx(3.0)
    assert row["efficiency"] == pytest.approx(3.0 / 2)
    assert tables.runners(0) == tables.runners(1) == 1.0


def test_asha_savings(runs):
    asha = tables.asha_savings(runs).set_index("experiment").loc["apex_sweep"]
    assert asha["trials"] == 4
    assert (asha["completed"], asha["stopped_early"], asha["errored"]) == (1, 2, 1)
    assert asha["spent_env_steps"] == 500 + 200 + 400 + 200
    assert asha["full_env_steps"] == 4 * 500
    assert asha["saving_pct"] == pytest.approx(100 * (1 - 1300 / 2000))
    assert (asha["best_trial"], asha["best_metric"]) == ("abc12_00000", 97)
    assert bool(asha["best_survived"])


def test_asha_best_trial_stopped_early_did_not_survive(tmp_path):
    exp = write_experiment(
        tmp_path,
        "dqn_sweep",
        [dict(returns=[NAN, 10, 20, 30, 40]), dict(returns=[NAN, 80])],
        kind="sweep",
        scheduler={"type": "asha", "time_attr": keys.flat(keys.ENV_STEPS), "max_t": 500},
    )
    asha = tables.asha_savings(collect.collect([exp]).runs).iloc[0]
    assert (asha["best_trial"], asha["best_status"]) == ("abc12_00001", collect.STOPPED_EARLY)
    assert not asha["best_survived"]
    assert asha["saving_pct"] == pytest.approx(100 * (1 - 700 / 1000))


# --- Report -----------------------------------------------------------------------------------


def _without_date(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(report.DATE_PREFIX)]


def test_report_contents_and_rerun_is_identical_but_for_the_date(suite_dir, tmp_path, capsys):
    out = tmp_path / "results" / "cabs"
    assert main(["report", str(suite_dir), "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    text = (out / "REPORT.md").read_text()
    assert (out / "runs.csv").is_file()

    assert "do not edit by hand" in text
    assert sum(line.startswith(report.DATE_PREFIX) for line in text.splitlines()) == 1
    for heading in [
        "### Final performance",
        "### Time to reward",
        "#### Training return",
        "#### Greedy evaluation return",
        "### Speedup against single-runner DQN",
        "### Scaling with env runners",
        "### Sweeps and ASHA savings",
        "### Commands",
        "### Machines",
        "### Package versions",
    ]:
        assert heading in text
    # all-seed median (the seed that missed counted at its 5 s budget), then reached seeds only
    ttt_row = "| dqn · 1 runner | 50.0 | 2/3 | 3.0 s | 300 | 2.5 s (2.0 s–3.0 s) | 250 (200–300) |"
    assert ttt_row in text
    assert "| apex · best of apex_sweep | 50.0 | 0/1 | ≥ 5.0 s | ≥ 500 | not reached within" in (
        text
    )
    assert (
        "| apex · best of apex_sweep | greedy evaluation return | 50.0 | ≥ 5.0 s | 3.0 s "
        "| ≤ 0.60× | ≤ 0.60× | reached 0/1, baseline 2/3 |"
    ) in text
    assert "| apex | 4 | 2 | 400 | 2.00× | 50.0% |" in text
    assert "| apex_sweep | asha | 4 | 1 | 2 | 1 | 1,300 | 2,000 | 35.0% | abc12_00000 |" in text
    assert "*heuristic (reference, tm_seed 0)*" in text
    assert report.PONG_GPU_COMMAND not in text  # a cab report
    assert "python sweeps/apex_sweep.py --num-samples 4" in text
    assert "| 2 | 0 | Fake CPU | Linux-x86_64 |" in text
    assert "| 2.60.0 | 2.13.0 | 3.11.7 |" in text
    assert "- `0123456789abcdef0123456789abcdef01234567`\n" in text
    # A run from a modified working tree is flagged wherever its commit is named.
    assert "- `0123456789abcdef0123456789abcdef01234567` + uncommitted changes" in text
    sweep_row = next(line for line in text.splitlines() if line.startswith("| apex_sweep | sweep"))
    assert sweep_row.endswith("| `0123456789ab` + uncommitted changes |")
    dqn_row = next(line for line in text.splitlines() if line.startswith("| dqn_bench |"))
    assert dqn_row.endswith("| `0123456789ab` |")

    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(links) == [
        "curves_cabs_base.png",
        "scaling_cabs_base.png",
        "sweep_apex_sweep.png",
    ]
    for link in links:
        assert (out / link).stat().st_size > 0
    pngs = {p.name: p.read_bytes() for p in out.glob("*.png")}

    assert main(["report", str(suite_dir), "--out", str(out)]) == 0
    assert _without_date((out / "REPORT.md").read_text()) == _without_date(text)
    assert {p.name: p.read_bytes() for p in out.glob("*.png")} == pngs

    # The report reads only the table: rendering from runs.csv gives the same report.
    csv_out = tmp_path / "from_csv"
    assert main(["report", str(out / "runs.csv"), "--out", str(csv_out)]) == 0
    from_csv = [line for line in _without_date((csv_out / "REPORT.md").read_text())]
    assert [x for x in from_csv if "Generated by" not in x] == [
        x for x in _without_date(text) if "Generated by" not in x
    ]


def test_report_without_reference_module_notes_it(suite_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "envs.policies", None)  # import fails
    out = tmp_path / "out"
    assert main(["report", str(suite_dir / "dqn_bench"), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    assert "reference rows omitted" in text and "(reference," not in text
    assert "No single-runner DQN" not in text  # the DQN benchmark is its own baseline


def test_report_pong_sweep_without_any_finished_episode(tmp_path):
    exp = write_experiment(
        tmp_path / "raw",
        "dqn_pong",
        [dict(returns=[NAN, NAN]), dict(returns=[NAN])],
        env="pong",
        variant=None,
        optimum=None,
        targets=(18, 20),
        kind="sweep",
    )
    out = tmp_path / "out"
    assert main(["report", str(exp), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    assert "## pong" in text and "(reference," not in text
    assert "left out of the comparisons: dqn_pong." in text
    assert "| dqn_pong | fifo | 2 | 0 | 2 | 0 | 300 | 1,000 | 70.0% | — | — | no |" in text
    # No GPU and the targets not reached: the report says so and gives the GPU-box command.
    assert "These runs had no GPU (2 CPUs)" in text and report.PONG_GPU_COMMAND in text


# --- CLI errors -------------------------------------------------------------------------------


def _assert_exit_2(argv: list[str], capsys, message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and message in err[0], err


@pytest.mark.parametrize("command", ["collect", "report"])
def test_cli_bad_input_exits_2_and_writes_nothing(command, suite_dir, tmp_path, capsys):
    out = tmp_path / "out"
    _assert_exit_2([command, str(tmp_path / "missing"), "--out", str(out)], capsys, "no such")
    (tmp_path / "plain").mkdir()
    _assert_exit_2([command, str(tmp_path / "plain"), "--out", str(out)], capsys, "not a Tune")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    _assert_exit_2([command, str(suite_dir), "--out", str(blocker / "sub")], capsys, "cannot be")
    # A folder of runs none of which has a result: one short line, however many were skipped.
    for i in range(40):
        write_experiment(tmp_path / "raw", f"dqn_empty_{i}", [dict(returns=[])])
    _assert_exit_2([command, str(tmp_path / "raw"), "--out", str(out)], capsys, "no valid trial")
    assert not out.exists()


def test_warning_names_the_first_few_skipped_items(suite_dir, tmp_path):
    skipped = [f"exp_{i} (no trial folders)" for i in range(12)]
    warning = collect.Collection(pd.DataFrame(), skipped).warning()
    assert warning.startswith("warning: skipped 12 item(s): exp_0 (no trial folders); ")
    assert warning.endswith(f"; and {12 - collect.WARNING_ITEMS} more") and "exp_11" not in warning


def test_help(capsys):
    for argv in (["--help"], ["collect", "--help"], ["report", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    assert "--out" in capsys.readouterr().out
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "report" in done.stdout

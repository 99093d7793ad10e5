"""Tests of ``analysis``: collect, tables, report and CLI, on small fake Tune experiments.

The fixtures below are *fixtures*: hand-written experiment folders in the layout the runner
produces (run.json + one folder per trial with params.json and result.json), with controlled
return curves so that every expected number can be computed by hand. No Ray cluster is started.
"""

from __future__ import annotations

import gzip
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

from analysis import (
    asha,
    collect,
    fmt,
    plots,
    report,
    run_folder,
    sections,
    stability,
    sweep_sections,
    tables,
)
from analysis.__main__ import main
from sweeps.harness import keys
from sweeps.workloads.pong import PONG_GPU_COMMAND

NAN = math.nan

# --- Fixture writer ---------------------------------------------------------------------------


def parse_markdown_table(text: str) -> list[dict[str, str]]:
    """The rows of a table written by ``analysis.fmt.markdown_table`` (header -> cell)."""
    lines = [line for line in text.strip().splitlines() if line.startswith("|")]

    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]

    header = cells(lines[0])
    return [dict(zip(header, cells(line), strict=True)) for line in lines[2:]]


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
    entropy: Sequence[float] | None = None,
    trained_per_step: float | None = None,
    window_games: int | None = None,
) -> Path:
    """One fake trial: iteration i (1-based) has env_steps = i * steps_per_iter and training
    wall-clock = i * secs_per_iter (+ i * eval_secs_per_iter of evaluation in time_total_s);
    ``entropy``: the learner's policy entropy at each iteration (none: a Q-learner's results);
    ``trained_per_step``: the learner's module steps trained per env step (none: not reported);
    ``window_games``: the games each training return is over (none: a run before it was kept)."""
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
        if entropy is not None:
            _put(r, keys.ENTROPY, entropy[i - 1])
        if trained_per_step is not None:
            _put(r, keys.MODULE_STEPS_TRAINED, i * steps_per_iter * trained_per_step)
        if window_games is not None:
            _put(r, keys.RETURN_WINDOW_GAMES, window_games)
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
    args: dict[str, Any] | None = None,
    cpu_model: str = "Fake CPU",
    speed: tuple[float, float] | None = None,
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
        "args": {"num_samples": len(trials), **(args or {})},
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
        "machine": {"cpus": 2, "gpus": 0, "cpu_model": cpu_model, "platform": "Linux-x86_64"},
        "started_at": "2025-01-01T00:00:00+00:00",
        "ended_at": "2025-01-01T01:00:00+00:00",
        "status": "finished",
    }
    if speed is not None:  # the machine's raw env rate at start and end
        run["machine"]["raw_env_steps_per_s_at_start"] = speed[0]
        run["machine"]["raw_env_steps_per_s_at_end"] = speed[1]
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
            # target 50: iteration 5 (5 s, 500 steps); never reaches 90 within its budget
            dict(seed=2, returns=[NAN, 10, 20, 30, 55], greedy=[NAN, 10, 20, 30, 55]),
        ],
    )
    apex = dict(returns=RISING, greedy=RISING)
    write_experiment(
        root,
        "apex_bench_1",
        [dict(seed=s, secs_per_iter=0.5, **apex) for s in range(3)],  # 200 steps/s
        algo="apex",
    )
    write_experiment(
        root,
        "apex_bench_4",
        [dict(seed=s, num_env_runners=4, secs_per_iter=0.25, **apex) for s in range(3)],  # 400/s
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
                greedy=[NAN, 30, 60, 80, 97],
            ),
            dict(
                hp={"lr": 1e-2, "replay_buffer_config": {"capacity": 5000}},
                returns=[NAN, 5],
                greedy=[NAN, 5],
            ),
            dict(
                hp={"lr": 3e-3, "replay_buffer_config": {"capacity": 2000}},
                returns=[NAN, 40, 70, 96],
                greedy=[NAN, 40, 70, 96],
            ),
            dict(
                hp={"lr": 2e-3, "replay_buffer_config": {"capacity": 3000}},
                returns=[NAN, 10],
                greedy=[NAN, 10],
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
    """A stand-in for envs.policies (the real one plays 100 episodes per policy and variant)."""
    module = types.ModuleType("envs.policies")
    module.reference_episode_returns = lambda config, episodes, seed: {
        "random": [10.0],
        "heuristic": [60.0],
        "optimum": [100.0],
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
    # 3 + 3 + 3 trials of 5 iterations, sweep trials of 5, 2, 4 and 2 iterations
    assert len(runs) == 9 * 5 + 5 + 2 + 4 + 2
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
    from sweeps.harness.record import git_dirty

    assert isinstance(git_dirty(), bool)


def test_collect_drop_leaves_out_replaced_runs_and_refuses_a_glob_that_matches_none(
    runs, tmp_path, capsys
):
    table = tmp_path / "all.csv.gz"
    collect.write_runs_csv(runs, table)
    names = sorted(runs["experiment"].unique())
    assert len(names) >= 2
    out = tmp_path / "kept.csv.gz"
    assert main(["collect", str(table), "--drop", names[0], "--out", str(out)]) == 0
    kept = collect.read_runs_csv(out)
    assert set(kept["experiment"]) == set(names[1:])
    assert len(kept) == (runs["experiment"] != names[0]).sum()
    assert "left out by --drop" in capsys.readouterr().out
    bad = tmp_path / "bad.csv.gz"
    assert main(["collect", str(table), "--drop", "no-such-*", "--out", str(bad)]) == 2
    assert not bad.exists()
    assert "matches no experiment" in capsys.readouterr().err


def test_collect_trial_status(runs):
    status = runs.drop_duplicates(["experiment", "trial_id"]).set_index("trial_id")
    sweep = status[status["experiment"] == "apex_sweep"]["trial_status"].to_dict()
    assert sweep == {
        "abc12_00000": run_folder.COMPLETED,  # reached max_t = 500 env steps
        "abc12_00001": run_folder.STOPPED_EARLY,
        "abc12_00002": run_folder.STOPPED_EARLY,
        "abc12_00003": run_folder.ERRORED,  # error.txt
    }
    assert set(status[status["kind"] == "benchmark"]["trial_status"]) == {run_folder.COMPLETED}


def test_collect_below_budget_in_interrupted_run_is_incomplete(tmp_path):
    exp = write_experiment(tmp_path, "dqn_cut", [dict(returns=[NAN, 1.0])])
    run = json.loads((exp / "run.json").read_text())
    (exp / "run.json").write_text(json.dumps({**run, "status": "interrupted", "ended_at": None}))
    assert set(collect.collect([exp]).runs["trial_status"]) == {run_folder.INCOMPLETE}


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


def test_iterations_reported_twice_count_once_from_their_last_report(tmp_path):
    """A trial restored from a checkpoint (in a folder written before the runner trimmed its
    result.json) reports the iterations after it again: one row each, the last report, and the
    collection (and so the report) says which trials."""
    exp = write_experiment(tmp_path / "raw", "dqn_restored", [dict(returns=[10, 20, 30, 40])])
    trial = sorted(p for p in exp.iterdir() if p.is_dir())[0]
    lines = (trial / "result.json").read_text().splitlines()
    again = [json.loads(line) for line in lines[2:]]  # iterations 3 and 4, after a restore
    for row in again:
        _put(row, keys.RETURN_MEAN, 95.0)
    (trial / "result.json").write_text("\n".join([*lines, *map(json.dumps, again)]) + "\n")

    collection = collect.collect([exp])
    runs = collection.runs
    assert list(runs["training_iteration"]) == [1, 2, 3, 4]
    assert list(runs["return_mean"]) == [10, 20, 95, 95]
    (note,) = collection.deduped
    assert "2 iteration(s) reported twice, last report kept" in note
    assert not collection.skipped
    # A table given beside the folder it came from: still one row per (trial, iteration).
    table = tmp_path / "runs.csv"
    collect.write_runs_csv(runs, table)
    assert len(collect.gather([str(exp), str(table)]).runs) == 4
    # ... and the folder's rows win: a final evaluation made after the table was written shows.
    (trial / "final_evaluation.json").write_text(json.dumps({"mean": 77.0, "episodes": 3}))
    for inputs in ([str(exp), str(table)], [str(table), str(exp)]):
        assert set(collect.gather(inputs).runs["final_eval_return"]) == {77.0}


def test_runs_csv_is_deterministic_and_round_trips(runs, suite_dir, tmp_path):
    path = tmp_path / "runs.csv"
    collect.write_runs_csv(runs, path)
    again = tmp_path / "again.csv"
    collect.write_runs_csv(collect.collect([suite_dir]).runs, again)
    assert path.read_bytes() == again.read_bytes()
    pd.testing.assert_frame_equal(collect.read_runs_csv(path), runs)


def test_a_csv_gz_table_is_gzipped_deterministic_and_read_like_a_csv(suite_dir, tmp_path, capsys):
    """`collect --out X.csv.gz` writes the table gzipped, byte for byte the same each time (no
    timestamp in the header); every command reads it as it reads a .csv."""
    table = tmp_path / "probe.csv.gz"
    assert main(["collect", str(suite_dir / "dqn_bench"), "--out", str(table)]) == 0
    assert table.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic, not CSV text
    again = tmp_path / "again.csv.gz"
    assert main(["collect", str(suite_dir / "dqn_bench"), "--out", str(again)]) == 0
    assert table.read_bytes() == again.read_bytes()
    plain = tmp_path / "probe.csv"
    assert main(["collect", str(table), "--out", str(plain)]) == 0
    assert gzip.decompress(table.read_bytes()) == plain.read_bytes()
    capsys.readouterr()
    assert main(["curves", str(table), "--at", "200,1M"]) == 0
    assert len(_table(capsys.readouterr().out)) == 3


def test_a_report_of_tables_alone_copies_no_rows_and_one_with_a_folder_copies_them_gzipped(
    suite_dir, tmp_path, capsys
):
    """Runs of record kept one .csv.gz per run: a report over them alone writes no copy of their
    rows (its command, which names them, regenerates it) and removes an earlier report's copy; a
    report that also read a run folder keeps what it read beside it, as runs.csv.gz."""
    table = tmp_path / "dqn.csv.gz"
    assert main(["collect", str(suite_dir / "dqn_bench"), "--out", str(table)]) == 0
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs.csv.gz").write_bytes(b"an earlier report's copy")
    assert main(["report", str(table), "--out", str(out)]) == 0
    assert "the rows: its input tables" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("runs.csv*")) == []
    assert f"report {table} --out" in (out / "REPORT.md").read_text()
    assert main(["report", str(table), str(suite_dir / "apex_bench_1"), "--out", str(out)]) == 0
    assert not (out / "runs.csv").exists()
    written = collect.read_runs_csv(out / "runs.csv.gz")
    assert set(written["experiment"]) == {
        *collect.read_runs_csv(table)["experiment"],
        "apex_bench_1",
    }
    # From that table alone, as the module's docstring shows: it is read, not written again.
    before = (out / "runs.csv.gz").read_bytes()
    assert main(["report", str(out / "runs.csv.gz"), "--out", str(out)]) == 0
    assert (out / "runs.csv.gz").read_bytes() == before


def test_a_report_that_fails_to_render_leaves_its_table_and_report_as_they_were(
    suite_dir, tmp_path, monkeypatch
):
    """The table and its report land together: a render that fails leaves the last ones in step,
    and nothing half-written beside them."""
    from analysis import report

    out = tmp_path / "out"
    assert main(["report", str(suite_dir / "dqn_bench"), "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def broken(*args, **kwargs):
        raise RuntimeError("a section failed")

    monkeypatch.setattr(report, "render_report", broken)
    with pytest.raises(RuntimeError):
        main(["report", str(suite_dir), "--out", str(out)])  # more runs: another table
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert after == before


def test_a_damaged_table_is_one_clear_error(tmp_path, capsys):
    broken = tmp_path / "cut.csv.gz"
    broken.write_bytes(gzip.compress(b"sweep,kind\n" * 1000)[:40])  # a copy cut short
    assert main(["curves", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "cut.csv.gz: not a readable runs table" in err and "Traceback" not in err


# --- Tables -----------------------------------------------------------------------------------


def test_select_configurations_uses_every_benchmark_seed_and_the_best_sweep_trial(runs):
    selected = tables.select_configurations(runs)
    trials = selected.drop_duplicates(["experiment", "trial_id"])
    assert trials.groupby("config").size().to_dict() == {
        "apex · 1 runner": 3,
        "apex · 4 runners": 3,
        "apex · best of apex_sweep": 1,
        "dqn · 1 runner": 3,
    }
    best = trials[trials["kind"] == "sweep"].iloc[0]
    assert best["trial_id"] == "abc12_00000"  # final return 97 beats 96 (stopped early)


def test_benchmarks_of_different_recipes_are_different_configurations(tmp_path):
    """Benchmark folders of one algorithm at one runner count pool their seeds only where the
    recorded hyperparameters agree; a recipe that changed is its own configuration, labelled by
    the values that differ, or by its first experiment where those would make a long label."""
    curve = dict(returns=RISING, greedy=RISING)
    for name, lr, seed in (("dqn_s0", 1e-3, 0), ("dqn_s1", 1e-3, 1), ("dqn_new", 1e-4, 0)):
        trial = dict(hp={"lr": lr}, seed=seed, **curve)
        write_experiment(tmp_path / "short", name, [trial], hyperparameters=["lr"])
    runs = collect.gather([str(tmp_path / "short")]).runs
    trials = tables.select_configurations(runs).drop_duplicates(tables.TRIAL_KEY)
    assert trials.groupby("config").size().to_dict() == {
        "dqn · 1 runner · lr 0.001": 2,
        "dqn · 1 runner · lr 0.0001": 1,
    }
    floor = {"entropy_target": [[-15, 0.6], [-5, 0.1]], "entropy_target_by": "return"}
    for seed, (name, extra) in enumerate((("b_late", floor), ("a_old", {}), ("c", {}))):
        hp = {"lr": 5e-4, "learner_config_dict": extra}
        write_experiment(
            tmp_path / "long",
            name,
            [dict(hp=hp, seed=seed, **curve)],
            hyperparameters=["lr", "learner_config_dict"],
        )
    trials = tables.select_configurations(
        collect.gather([str(tmp_path / "long")]).runs
    ).drop_duplicates(tables.TRIAL_KEY)
    assert dict(zip(trials["experiment"], trials["config"], strict=True)) == {
        "a_old": "dqn · 1 runner · recipe of a_old",
        "b_late": "dqn · 1 runner · recipe of b_late",
        "c": "dqn · 1 runner · recipe of a_old",
    }


def test_a_run_that_predates_a_search_parameter_pools_with_the_runs_that_draw_it(tmp_path):
    """A search parameter added to a space later (the generic IMPALA/APPO space's entropy floor)
    has no column value in the runs made before it: that is no difference of recipe, so the
    seeds of the defaults run either side of the change pool; a value that differs still does."""
    curve = dict(returns=RISING, greedy=RISING)
    for name, hp, seed in (
        ("old_s0", {"lr": 1e-3}, 0),
        ("new_s1", {"lr": 1e-3, "entropy_target": 0.0}, 1),
        ("new_s2", {"lr": 1e-3, "entropy_target": 0.0}, 2),
        ("floor_s0", {"lr": 1e-3, "entropy_target": 0.3}, 0),
    ):
        trial = dict(hp=hp, seed=seed, **curve)
        write_experiment(tmp_path / name[:3], name, [trial], hyperparameters=list(hp))
    pooled = collect.gather([str(tmp_path / "old"), str(tmp_path / "new")]).runs
    trials = tables.select_configurations(pooled).drop_duplicates(tables.TRIAL_KEY)
    assert set(trials["config"]) == {"dqn · 1 runner"}
    runs = collect.gather([str(tmp_path / "new"), str(tmp_path / "flo")]).runs
    trials = tables.select_configurations(runs).drop_duplicates(tables.TRIAL_KEY)
    assert trials.groupby("config").size().to_dict() == {
        "dqn · 1 runner · entropy_target 0": 2,
        "dqn · 1 runner · entropy_target 0.3": 1,
    }


def test_a_set_setting_outside_the_hyperparameters_is_a_recipe_of_its_own(tmp_path):
    """``--set learner_config_dict=...`` is not a recorded hyperparameter of the generic
    sweeps: two runs of one seed that differ only there are two recipes (before the overrides
    column the later one replaced the earlier as "the same seed run again")."""
    curve = dict(returns=RISING, greedy=RISING)
    settings = {
        "plain": [["lr", 0.001]],  # a hyperparameter: its own column says it
        "scaled": [["lr", 0.001], ["learner_config_dict", {"reward_scale": 0.1}]],
    }
    for name, given in settings.items():
        trial = dict(hp={"lr": 1e-3}, seed=0, **curve)
        write_experiment(tmp_path, name, [trial], hyperparameters=["lr"], args={"set": given})
    runs = collect.gather([str(tmp_path)]).runs
    assert set(runs["overrides"]) == {"", 'learner_config_dict={"reward_scale": 0.1}'}
    # A setting whose every key inside has a hyperparameter column of its own is not repeated
    scaled = [["learner_config_dict", {"reward_scale": 0.1}]]
    hp = ["learner_config_dict.reward_scale", "lr"]
    assert run_folder.overrides({"set": scaled}, hp) == ""
    assert run_folder.overrides({"set": scaled}, ["lr"]) == settings["scaled"][1][0] + (
        '={"reward_scale": 0.1}'
    )
    trials = tables.select_configurations(runs).drop_duplicates(tables.TRIAL_KEY)
    assert dict(zip(trials["experiment"], trials["config"], strict=True)) == {
        "plain": "dqn · 1 runner · --set —",
        "scaled": 'dqn · 1 runner · --set learner_config_dict={"reward_scale": 0.1}',
    }


def test_time_to_target_counts_seeds_that_never_reach_it(runs):
    ttt = tables.time_to_target(tables.select_configurations(runs))
    dqn = ttt[(ttt["config"] == "dqn · 1 runner") & (ttt["signal"] == "return_mean")]
    at_90 = dqn[dqn["target"] == 90].set_index("seed")
    assert at_90["reached"].to_dict() == {0: True, 1: True, 2: False}
    assert at_90.loc[0, ["train_time_s", "env_steps"]].tolist() == [4.0, 400]
    assert at_90.loc[1, ["train_time_s", "env_steps"]].tolist() == [5.0, 500]
    assert math.isnan(at_90.loc[2, "train_time_s"])
    assert at_90.loc[2, "budget_env_steps"] == 500

    summary = tables.summarize_time_to_target(ttt).set_index(["config", "signal", "target"])
    s = summary.loc[("dqn · 1 runner", "return_mean", 50.0)]
    assert (s["seeds"], s["reached"], s["seed_list"]) == (3, 3, (0, 1, 2))
    assert (s["time_all_median_s"], s["time_min_s"], s["time_max_s"]) == (3.0, 2.0, 5.0)
    assert not s["time_all_lower_bound"] and s["steps_all_median"] == 300
    s = summary.loc[("dqn · 1 runner", "return_mean", 90.0)]
    assert (s["reached"], s["time_min_s"], s["time_max_s"]) == (2, 4.0, 5.0)
    # all seeds: 4 s, 5 s, and the seed that missed (at its 5 s budget, so > 5 s): 5 s, exact
    assert (s["time_all_median_s"], s["time_all_lower_bound"]) == (5.0, False)


def test_speedup_against_single_runner_dqn(runs):
    selected = tables.select_configurations(runs)
    summary = tables.summarize_time_to_target(tables.time_to_target(selected))
    speedup = tables.speedup_vs_baseline(summary)
    assert set(speedup["baseline"]) == {"dqn · 1 runner"}
    s = speedup[(speedup["signal"] == "return_mean") & (speedup["target"] == 50)]
    s = s.set_index("config")
    # Every seed of both reached 50. Baseline median: 2 s, 3 s, 5 s -> 3 s. Ape-X: 2
    # iterations x 0.5 s (1 runner) / 0.25 s (4 runners).
    assert s.loc["apex · 1 runner", "speedup"] == pytest.approx(3.0 / 1.0)
    assert s.loc["apex · 4 runners", "speedup"] == pytest.approx(3.0 / 0.5)
    assert s.loc["apex · 4 runners", "steps_ratio"] == pytest.approx(300 / 200)
    assert s.loc["apex · 4 runners", "why"] == ""
    # The sweep's best trial (one seed, picked from four trials): not the baseline's seeds.
    assert math.isnan(s.loc["apex · best of apex_sweep", "speedup"])
    assert s.loc["apex · best of apex_sweep", "why"] == "different seeds"
    # At 90 one baseline seed missed: no speedup at all, not a bound.
    s90 = speedup[(speedup["signal"] == "return_mean") & (speedup["target"] == 90)]
    assert s90["speedup"].isna().all()
    assert set(s90["why"]) == {"dqn · 1 runner reached 2/3"}


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


def test_baseline_is_dqn_with_exactly_one_env_runner():
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
    assert tables.baseline_config(summary(local, four)) is None  # 0 runners is not 1
    assert tables.baseline_config(summary(four, apex)) is None


def test_no_speedup_when_a_baseline_seed_missed(tmp_path):
    """One lucky DQN seed out of three must not make DQN look fast, nor a missed seed's budget
    stand in for its time: no ratio at all."""
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
    assert math.isnan(row["speedup"]) and math.isnan(row["steps_ratio"])
    assert row["why"] == "dqn · 1 runner reached 1/3"
    assert (row["reached"], row["baseline_reached"]) == (3, 1)


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


def _scaling_summary(counts, times, reached=(3, 3, 3)) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "env": "cabs",
            "variant": "base",
            "algo": "impala",
            "kind": "benchmark",
            "config": [f"impala · {n} runners" for n in counts],
            "signal": "return_mean",
            "target": 50.0,
            "num_env_runners": counts,
            "seeds": 3,
            "reached": list(reached),
            "seed_list": [(0, 1, 2)] * len(counts),
            "time_all_median_s": times,
            "time_all_lower_bound": [r < 2 for r in reached],
            "steps_all_median": [100.0] * len(counts),
        }
    )


def test_zero_remote_runners_is_its_own_row_not_one_runner():
    rows = tables.scaling_time_to_target(_scaling_summary([0, 2, 4], [12.0, 6.0, 4.0]))
    rows = rows.set_index("num_env_runners")
    # 0 runners: its time, no speedup or efficiency (it is not n = 1)
    assert rows.loc[0, "time_median_s"] == 12.0
    assert math.isnan(rows.loc[0, "speedup"]) and math.isnan(rows.loc[0, "efficiency"])
    # from the fewest remote runners (2)
    assert rows.loc[2, "speedup"] == pytest.approx(1.0)
    assert rows.loc[4, "speedup"] == pytest.approx(6.0 / 4.0)
    assert rows.loc[4, "efficiency"] == pytest.approx((6.0 / 4.0) / 2)


def test_scaling_speedup_only_where_both_reached_on_every_seed():
    """The committed report once showed '≥ 8.03× speedup, ≥ 803.1% efficiency' from a censored
    median: a configuration that missed on some seed gets no ratio."""
    rows = tables.scaling_time_to_target(
        _scaling_summary([1, 2, 4], [60.0, 7.6, 5.0], reached=(1, 3, 3))
    ).set_index("num_env_runners")
    assert rows[["speedup", "efficiency"]].isna().all().all()
    assert set(rows["why"].iloc[1:]) == {"impala · 1 runners reached 1/3"}


def test_ideal_scaling_is_a_real_line():
    frame = pd.DataFrame({"algo": ["apex"] * 3, "num_env_runners": [1, 2, 8]})
    assert plots.ideal_speedup(frame) == ((1.0, 8.0), (1.0, 8.0))
    # one remote count per algorithm (0 -> 1 on a 2-core box): no line to draw at all
    assert (
        plots.ideal_speedup(pd.DataFrame({"algo": ["a", "b"], "num_env_runners": [1, 1]})) is None
    )


def test_asha_savings(runs):
    row = asha.asha_savings(runs).set_index("experiment").loc["apex_sweep"]
    assert row["trials"] == 4
    assert (row["completed"], row["stopped_early"], row["errored"]) == (1, 2, 1)
    assert row["spent_env_steps"] == 500 + 200 + 400 + 200
    assert row["full_env_steps"] == 4 * 500
    assert row["saving_pct"] == pytest.approx(100 * (1 - 1300 / 2000))
    assert (row["best_trial"], row["best_metric"]) == ("abc12_00000", 97)
    assert bool(row["best_survived"])


def test_asha_best_trial_stopped_early_did_not_survive(tmp_path):
    exp = write_experiment(
        tmp_path,
        "dqn_sweep",
        [dict(returns=[NAN, 10, 20, 30, 40]), dict(returns=[NAN, 80])],
        kind="sweep",
        scheduler={"type": "asha", "time_attr": keys.flat(keys.ENV_STEPS), "max_t": 500},
    )
    row = asha.asha_savings(collect.collect([exp]).runs).iloc[0]
    assert (row["best_trial"], row["best_status"]) == ("abc12_00001", run_folder.STOPPED_EARLY)
    assert not row["best_survived"]
    assert row["saving_pct"] == pytest.approx(100 * (1 - 700 / 1000))


def write_asha_pair(root: Path, full_hp_lr: Sequence[float] = (1e-3, 1e-2, 3e-3)) -> Path:
    """An ASHA sweep of 3 trials and its FIFO re-run to the full 500-step budget
    (``--configs-from``); 100 env steps per iteration, returns in % of an optimum of 100."""
    asha_trials = [
        dict(hp={"lr": 1e-3}, returns=[NAN, 30, 60, 80, 92]),  # 500 steps, completed: ASHA's best
        dict(hp={"lr": 1e-2}, returns=[NAN, 20]),  # pruned at 200 steps
        dict(hp={"lr": 3e-3}, returns=[NAN, 50, 70]),  # pruned at 300 steps
    ]
    full_trials = [
        dict(hp={"lr": full_hp_lr[0]}, returns=[NAN, 30, 60, 80, 92]),
        dict(hp={"lr": full_hp_lr[1]}, returns=[NAN, 20, 40, 60, 70]),
        dict(hp={"lr": full_hp_lr[2]}, returns=[NAN, 50, 70, 90, 95]),  # the full-budget best
    ]
    for trial in asha_trials + full_trials:
        trial["greedy"] = trial["returns"]
    asha_scheduler = {"type": "asha", "time_attr": keys.flat(keys.ENV_STEPS), "max_t": 500}
    common = dict(algo="apex", kind="sweep", hyperparameters=["lr"])
    write_experiment(root, "apex_asha", asha_trials, scheduler=asha_scheduler, **common)
    args = {"configs_from": str(root.resolve() / "apex_asha"), "scheduler": "fifo"}
    # Tune's trial ids are random: the re-run's trials come in another order of ids.
    write_experiment(root, "apex_full", full_trials[::-1], args=args, **common)
    return root


def test_asha_check_against_the_same_configurations_at_full_budget(tmp_path):
    runs = collect.collect([write_asha_pair(tmp_path)]).runs
    assert set(runs.loc[runs["experiment"] == "apex_full", "configs_from"]) == {"apex_asha"}
    check = asha.asha_check(runs)
    assert len(check) == 1
    row = check.iloc[0]
    assert (row["asha"], row["full"], row["trials_asha"], row["pruned"]) == (
        "apex_asha",
        "apex_full",
        3,
        2,
    )
    assert bool(row["same_configs"])
    assert (row["best_trial_asha"], row["best_metric_asha"], row["best_pct_asha"]) == (
        "abc12_00000",
        92,
        92,
    )
    assert (row["best_trial_full"], row["best_metric_full"]) == ("abc12_00000", 95)
    assert row["best_ratio"] == pytest.approx(92 / 95)
    assert (row["env_steps_asha"], row["env_steps_full"]) == (500 + 200 + 300, 3 * 500)
    assert row["spent_ratio"] == pytest.approx(1000 / 1500)
    assert (row["full_best_under_asha"], row["full_best_under_asha_status"]) == (
        "abc12_00002",
        run_folder.STOPPED_EARLY,
    )
    assert row["full_best_under_asha_env_steps"] == 300
    assert bool(row["best_goal_met"]) and not bool(row["spent_goal_met"])

    lines = sweep_sections.asha_check_section(runs, check)
    text = "\n".join(lines)
    table = _table(text)
    assert table == [
        {
            "ASHA sweep": "apex_asha",
            "full-budget sweep": "apex_full",
            "trials": "3 (2 pruned by ASHA)",
            "same configurations": "yes",
            "ASHA's best": "92.0 = 92.0% of optimum (trial abc12_00000)",
            "full budget's best": "95.0 = 95.0% of optimum (trial abc12_00000)",
            "ASHA's / full budget's best": "96.8%",
            "env steps, ASHA": "1,000",
            "env steps, full budget": "1,500",
            "ASHA's / full budget's env steps": "66.7%",
            "full budget's best configuration under ASHA": (
                "trial abc12_00002: stopped early at 300 env steps"
            ),
        }
    ]
    assert "(goal ≥ 95%: met) with 66.7% of its env steps (goal ≤ 40%: not met)" in text

    # Each configuration at full budget, best first, beside its trial under ASHA.
    pairs = asha.asha_pairs(runs, "apex_asha", "apex_full")
    assert list(pairs["full_trial"]) == ["abc12_00000", "abc12_00002", "abc12_00001"]
    assert list(pairs["full_metric"]) == [95, 92, 70]
    assert list(pairs["asha_trial"]) == ["abc12_00002", "abc12_00000", "abc12_00001"]
    assert list(pairs["asha_env_steps"]) == [300, 500, 200]
    assert list(pairs["asha_metric"]) == [70, 92, 20]
    kept = _table(_section(text, "#### What ASHA kept and cut: apex_asha against apex_full"))
    assert [row["under ASHA"] for row in kept] == [
        "stopped early",
        "ran to its budget",
        "stopped early",
    ]


def test_asha_check_says_when_the_configurations_differ(tmp_path):
    runs = collect.collect([write_asha_pair(tmp_path, full_hp_lr=(1e-3, 1e-2, 5e-3))]).runs
    row = asha.asha_check(runs).iloc[0]
    assert not bool(row["same_configs"])
    assert "configurations differ" in "\n".join(
        sweep_sections.asha_check_section(runs, asha.asha_check(runs))
    )


def test_report_shows_the_asha_check(tmp_path):
    write_asha_pair(tmp_path / "raw")
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    check = _section(text, "### ASHA against the same configurations at full budget")
    assert _table(check)[0]["ASHA's / full budget's env steps"] == "66.7%"
    # The table is rebuilt from runs.csv alone.
    again = tmp_path / "again"
    assert main(["report", str(out / "runs.csv"), "--out", str(again)]) == 0
    rebuilt = (again / "REPORT.md").read_text()
    assert _section(rebuilt, "### ASHA against the same configurations at full budget") == check


# --- Report -----------------------------------------------------------------------------------


def _without_date(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(report.DATE_PREFIX)]


def _section(text: str, heading: str) -> str:
    """The text under a Markdown heading, up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n") + len(heading) + 1
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", text[start:], re.M)]
    return text[start : start + ends[0]] if ends else text[start:]


def _table(text: str) -> list[dict[str, str]]:
    """The first Markdown table in ``text``."""
    block = re.search(r"((?:^\|.*\|\n)+)", text, re.M)
    return parse_markdown_table(block.group(1)) if block else []


def test_report_contents_and_rerun_is_identical_but_for_the_date(suite_dir, tmp_path, capsys):
    out = tmp_path / "results" / "cabs"
    assert main(["report", str(suite_dir), "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    text = (out / "REPORT.md").read_text()
    assert (out / "runs.csv").is_file()

    assert "do not edit by hand" in text
    assert sum(line.startswith(report.DATE_PREFIX) for line in text.splitlines()) == 1
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings.index("## Summary") < headings.index("## cabs · base: detail")
    for heading in [
        "### cabs · base",
        "### Final performance",
        "### Time to target: greedy evaluation return",
        "### Stability",
        "### Speedup against single-runner DQN (greedy evaluation return)",
        "### Scaling with env runners",
        "### Sweeps and ASHA savings",
        "### Commands",
        "### Machines",
        "### Package versions",
        "## Appendix: secondary metrics",
        "### cabs · base: training return",  # the secondary metric, in the appendix only
    ]:
        assert heading in headings
    summary_text = _section(text, "### cabs · base")
    assert "target **90 = 90% of optimum**" in summary_text
    assert "**apex · 4 runners reaches 90 = 90% of optimum fastest**: median 0.8 s" in summary_text
    assert (
        "the next algorithm's best, dqn · 1 runner (the single-runner DQN baseline; median 5.0 s, "
        "2/3 seeds), is slower (log-rank p = 0.025)" in summary_text
    )
    # all-seed median (the seed that missed counted at its budget), the Kaplan–Meier median with
    # its interval (unbounded above: one seed of three missed), min–max of those that reached
    row = (
        "| dqn · 1 runner | 90 = 90% of optimum | 2/3 | 5.0 s | 5.0 s [4.0 s, ∞) | 4.0 s–5.0 s "
        "| 500 | 500 [400, ∞) | 400–500 |"
    )
    assert row in text
    assert "| dqn · 1 runner | 50 = 50% of optimum | 3/3 | 3/3 | 1.00× | 1.00× |" in text
    speedup = "| apex · 4 runners | 50 = 50% of optimum | 3/3 | 3/3 | 6.00× [4.00×, 10.00×] |"
    assert speedup + " 1.50× [1.00×, 2.50×] |" in text  # bootstrap intervals over the 3 seeds
    assert "No speedup at 90 = 90% of optimum: the baseline reached it on 2/3 seeds." in text
    assert "apex · best of apex_sweep (different seeds)" in text
    assert "| apex | 4 | 3 | 400 | 2.00× | 50.0% |" in text
    assert "| apex_sweep | asha | 4 | 1 | 2 | 1 | 1,300 | 2,000 | 35.0% | abc12_00000 |" in text
    assert "*heuristic (reference, tm_seed 0)*" in text
    assert PONG_GPU_COMMAND not in text  # a cab report
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
    assert "suite/" not in text.split("## Reproducibility")[0]  # metric names in words

    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(links) == [
        "curves_cabs_base.png",
        "curves_cabs_base_training_return.png",
        "km_cabs_base.png",
        "scaling_cabs_base.png",
        "summary_cabs_base.png",
        "sweep_apex_sweep.png",
    ]
    for link in links:
        assert (out / link).stat().st_size > 0
    stale = out / "curves_cabs_gone.png"  # a plot of an earlier report that this one lacks
    stale.write_bytes(b"x")
    (out / "mine.png").write_bytes(b"x")  # not the report's: kept
    pngs = {p.name: p.read_bytes() for p in out.glob("*.png") if p != stale}

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


def test_largest_fall_and_sudden_entropy_collapses():
    assert stability.largest_fall(pd.Series([NAN, -20, -5, 10, -18, 5, 18])) == 28.0
    assert stability.largest_fall(pd.Series([-20.0, -10, 0])) == 0.0
    # A drop of >= 0.4 nats within 3 iterations to below 0.15: one collapse; the entropy stays
    # low (no second count), climbs back above 0.15 and collapses again: a second one.
    sudden = [1.2, 1.1, 0.7, 0.05, 0.03, 0.04, 0.6, 0.6, 0.1, 0.5]
    assert stability.sudden_collapses(pd.Series(sudden)) == 2
    # A slow decline to the same low entropy is no collapse; nor a quick drop that stays above.
    assert stability.sudden_collapses(pd.Series([1.2 - 0.1 * i for i in range(12)])) == 0
    assert stability.sudden_collapses(pd.Series([1.2, 1.1, 0.3, 0.25])) == 0
    assert stability.sudden_collapses(pd.Series([NAN, NAN])) == 0


def test_the_samples_each_learner_trained_on_are_collected_per_iteration(tmp_path):
    """How many times each sample was trained on (APPO replays its batches as often as the
    learner's speed against the runners' allows): the learners' module steps trained over the
    env steps; NaN where a learner reported none, and in a table collected before the column."""
    root = tmp_path / "raw"
    write_experiment(root, "appo_bench", [dict(seed=0, returns=[NAN, 1, 2], trained_per_step=3.25)],
                     algo="appo")  # fmt: skip
    write_experiment(root, "dqn_bench", [dict(seed=0, returns=[NAN, 1, 2])])
    runs = collect.collect([root]).runs
    appo = runs[runs["algo"] == "appo"]
    assert (appo["steps_trained"] / appo["env_steps"]).tolist() == [3.25, 3.25, 3.25]
    assert runs.loc[runs["algo"] == "dqn", "steps_trained"].isna().all()
    old_table = tmp_path / "old.csv"
    runs.drop(columns=["steps_trained"]).to_csv(old_table, index=False)
    assert collect.read_runs_csv(old_table)["steps_trained"].isna().all()


def test_the_report_shows_how_steadily_each_configuration_learned(tmp_path):
    """Stability: the largest fall of the training return per seed and, where the learner
    reports its policy's entropy, the lowest one and the sudden collapses (a Q-learner: dashes).
    A table collected before the entropy column existed still reads (entropy NaN)."""
    root = tmp_path / "raw"
    impala = [
        dict(seed=0, returns=[NAN, 10, 60, 20, 95], entropy=[1.7, 1.2, 1.0, 0.05, 0.4]),
        dict(seed=1, returns=[NAN, 10, 60, 70, 95], entropy=[1.7, 1.5, 1.3, 1.2, 1.1]),
    ]
    write_experiment(root, "impala_bench", impala, algo="impala")
    dqn = [dict(seed=s, returns=[NAN, 20, 60, 95, 90]) for s in range(2)]
    write_experiment(root, "dqn_bench", dqn)
    runs = collect.collect([root]).runs
    impala_rows = runs[runs["algo"] == "impala"].sort_values(["seed", "training_iteration"])
    assert impala_rows["entropy"].tolist() == [*impala[0]["entropy"], *impala[1]["entropy"]]
    assert runs.loc[runs["algo"] == "dqn", "entropy"].isna().all()

    old_table = tmp_path / "old.csv"  # written before the entropy column
    runs.drop(columns=["entropy"]).to_csv(old_table, index=False)
    assert collect.read_runs_csv(old_table)["entropy"].isna().all()

    out = tmp_path / "report"
    assert main(["report", str(root), "--out", str(out)]) == 0
    rows = _table(_section((out / "REPORT.md").read_text(), "### Stability"))
    by_config = {r[stability.CONFIG]: r for r in rows}
    assert by_config["impala · 1 runner"] == {
        stability.CONFIG: "impala · 1 runner",
        "seeds": "2",
        stability.FALL: "20.0 (0.0–40.0)",
        stability.LOWEST: "0.58 (0.05–1.1)",
        stability.COLLAPSES: "1 (1/2)",
    }
    assert by_config["dqn · 1 runner"][stability.FALL] == "5.0"
    assert by_config["dqn · 1 runner"][stability.LOWEST] == "—"
    assert by_config["dqn · 1 runner"][stability.COLLAPSES] == "—"
    # Where no learner reported an entropy (Q-learners only), the section shows the falls alone.
    assert main(["report", str(root / "dqn_bench"), "--out", str(tmp_path / "dqn")]) == 0
    (row,) = _table(_section((tmp_path / "dqn" / "REPORT.md").read_text(), "### Stability"))
    assert row == {stability.CONFIG: "dqn · 1 runner", "seeds": "2", stability.FALL: "5.0"}


def test_a_training_that_ends_below_the_random_policy_is_said_first(tmp_path):
    """A seed whose training return was above the random policy's and ends below it (its last
    three results) collapsed: the summary says so in its first lines, Stability counts it."""
    assert stability.ended_below(pd.Series([NAN, -300, -100, -700, -800, -900]), -500.0)
    assert not stability.ended_below(pd.Series([-600.0, -550, -700]), -500.0)  # never above
    assert not stability.ended_below(pd.Series([-300.0, -100, -900, -90, -80]), -500.0)  # back
    assert not stability.ended_below(pd.Series([-100.0, -900]), NAN)  # no random policy known
    # A best that comes first, a hair above random (a run's first return is a random policy's,
    # give or take), then a dip by about the run's noise: no collapse, as no learning came first
    assert not stability.ended_below(pd.Series([-190.0, -221, -222]), -191.0)
    assert stability.ended_below(pd.Series([-100.0, -900, -950, -1000]), -500.0)  # unlike this
    # A return that only wanders about the random policy's (MinAtar Breakout's first
    # iterations: 0.36-0.5 against a random 0.4) is no collapse: it fell by less than its own
    # step-to-step noise
    wander = [0.36, 0.36, 0.46, 0.5, 0.38, 0.37, 0.39]
    assert not stability.ended_below(pd.Series(wander), 0.4)
    assert stability.ended_below(pd.Series([*wander, 0.1, 0.05, 0.0]), 0.4)  # ... unlike a fall
    fell = [NAN, -300.0, -100.0, -700.0, -800.0, -900.0]
    held = [NAN, -300.0, -100.0, -90.0, -80.0, -70.0]
    trials = [dict(seed=0, returns=fell, greedy=fell), dict(seed=1, returns=held, greedy=held)]
    root = tmp_path / "raw"
    exp = write_experiment(
        root, "appo_bench", trials, algo="appo", env="Acrobot-v1", variant="{}",
        targets=(-100.0,), optimum=None,
    )  # fmt: skip
    run = json.loads((exp / "run.json").read_text())
    run["references"] = {"random": {"mean": -500.0, "episodes": 100}}
    (exp / "run.json").write_text(json.dumps(run))
    assert main(["report", str(root), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "REPORT.md").read_text()
    summary = text.split("## Summary")[1].split(": detail")[0]
    assert (
        "**Collapsed**: appo · 1 runner (1/2 seeds): the training return ended below the "
        "random policy's -500.0 after having been above it"
    ) in summary
    (row,) = _table(_section(text, "### Stability"))
    assert row[stability.BELOW_RANDOM] == "1/2"


def test_summary_tables_match_the_detail_tables(suite_dir, tmp_path):
    """Every cell of a summary row is the same string as in the detail tables below it."""
    out = tmp_path / "out"
    assert main(["report", str(suite_dir), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    for w in ("cabs · base",):
        rows = _table(_section(text, f"### {w}"))
        detail = _section(text, f"## {w}: detail")
        target = re.search(r"target \*\*([^*]+)\*\*", _section(text, f"### {w}")).group(1)
        ttt = _table(_section(detail, "### Time to target: greedy evaluation return"))
        final = {r["configuration"]: r for r in _table(_section(detail, "### Final performance"))}
        speedup = _table(_section(detail, "### Speedup against single-runner DQN (greedy "
                                          "evaluation return)"))  # fmt: skip
        assert rows, "the summary has a table"
        for row in rows:
            config = row[sections.CONFIG]
            (match,) = [r for r in ttt if r[sections.CONFIG] == config and r["target"] == target]
            for column in (sections.REACHED, sections.TIME, sections.TIME_RANGE, sections.STEPS):
                assert row[column] == match[column], (config, column)
            assert row["final % of optimum"] == final[config][sections.PCT]
            assert row[sections.STEPS_PER_S] == final[config][sections.STEPS_PER_S]
            shown = [r for r in speedup if r[sections.CONFIG] == config and r["target"] == target]
            speed = next(v for k, v in row.items() if k.startswith(sections.SPEEDUP))
            assert speed == (shown[0][sections.SPEEDUP] if shown else "—")
        # one row per algorithm, each the algorithm's best; every detail configuration of an
        # algorithm is in the summary or slower / reached on fewer seeds
        assert sorted(r[sections.CONFIG].split(" · ")[0] for r in rows) == ["apex", "dqn"]


def test_rows_that_reached_nothing_fold_into_one_visible_line(tmp_path):
    write_experiment(
        tmp_path / "raw",
        "dqn_bench",
        [dict(seed=s, returns=[NAN, 95], greedy=[NAN, 95]) for s in range(2)],
    )
    write_experiment(
        tmp_path / "raw",
        "impala_bench",
        [dict(seed=s, returns=[NAN, 10, 20], greedy=[NAN, 10, 20]) for s in range(2)],
        algo="impala",
    )
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    ttt = _section(text, "### Time to target: greedy evaluation return")
    assert "| impala" not in ttt
    assert (
        "Reached no target within budget: impala · 1 runner (0/2, ran ≤ 3.0 s, ≤ 300 env steps)."
        in ttt
    )
    summary_text = _section(text, "### cabs · base")
    assert [r[sections.CONFIG] for r in _table(summary_text)] == ["dqn · 1 runner"]
    assert (
        "Not reached within budget: impala · 1 runner (0/2 seeds; final % of optimum 20.0%)."
        in summary_text
    )
    # Two seeds each: reached on both against on neither is not separated (log-rank p = 0.083).
    assert (
        "**dqn · 1 runner and impala · 1 runner can't be told apart at 2 seeds** on time to 90"
        in summary_text
    )
    assert "impala · 1 runner (median ≥ 3.0 s, 0/2 seeds); log-rank p = 0.083" in summary_text
    assert "(it is the single-runner DQN baseline)" in summary_text


def test_primary_signal_is_greedy_only_where_every_configuration_evaluated():
    frame = pd.DataFrame(
        {"config": ["a", "a", "b"], "greedy_return": [NAN, 1.0, 2.0], "return_mean": 0.0}
    )
    assert tables.primary_signal(frame) == "greedy_return"
    frame.loc[2, "greedy_return"] = NAN  # b never evaluated (Pong's Ape-X)
    assert tables.primary_signal(frame) == "return_mean"


def test_target_labels_and_one_colour_per_configuration(runs):
    assert fmt.target_label(2818.0, 2966.357) == "2,818 = 95% of optimum"
    assert fmt.target_label(2630.7, 2769.14) == "2,630.7 = 95% of optimum"
    assert fmt.target_label(20.0, None) == "20"
    configs = tables.configurations(tables.select_configurations(runs))
    colours = plots.palette(configs)
    assert set(colours.configs) == set(configs["config"])
    assert len(set(colours.configs.values())) == len(colours.configs)  # one colour each
    # the same configuration gets the same colour in another report's palette
    assert (
        plots.palette(configs[configs["algo"] == "apex"]).configs["apex · 1 runner"]
        == (colours.configs["apex · 1 runner"])
    )


def test_report_without_reference_module_notes_it(suite_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "envs.policies", None)  # import fails
    out = tmp_path / "out"
    assert main(["report", str(suite_dir / "dqn_bench"), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    assert "reference rows omitted" in text and "(reference," not in text
    assert "No single-runner DQN" not in text  # the DQN benchmark is its own baseline


def test_a_signal_no_run_recorded_is_said_unmeasured_not_unreached(tmp_path):
    """Pong's runs of record evaluate no greedy policy in training: the appendix's greedy
    evaluation return is not a target every configuration missed."""
    write_experiment(
        tmp_path / "raw",
        "dqn_pong",
        [dict(seed=s, returns=[NAN, -20.0, 19.0]) for s in range(2)],
        env="pong",
        variant=None,
        optimum=None,
        targets=(18,),
    )
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    appendix = _section((out / "REPORT.md").read_text(), "### pong: greedy evaluation return")
    assert "Not measured in training: no run recorded the greedy evaluation return." in appendix
    assert "reached a target" not in appendix and "Reached no target" not in appendix


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
    assert "These runs had no GPU (2 CPUs)" in text and PONG_GPU_COMMAND in text


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


def test_the_load_beside_a_run_is_reported_when_recorded() -> None:
    from analysis.run_folder import _load
    from sweeps.harness.record import Machine, load_average

    assert _load(Machine(load_at_start=1.14, load_at_end=2.56)) == "1.1 -> 2.6"
    assert _load(Machine(load_at_start=0.5)) == "0.5 -> ?"
    assert _load(Machine()) == ""
    assert load_average() is None or load_average() >= 0


def _reaching_90_at(iterations: Sequence[int]) -> list[dict[str, Any]]:
    """One trial per seed whose greedy return reaches 90 at the given iteration."""
    trials = []
    for seed, at in enumerate(iterations):
        curve = [NAN] + [60.0] * (at - 2) + [95.0] * (6 - at)
        trials.append(dict(seed=seed, returns=curve, greedy=curve))
    return trials


def test_the_verdict_names_no_winner_the_seeds_cannot_separate(tmp_path):
    """Two algorithms whose seeds overlap (2, 3, 3 s against 2, 4, 5 s to the target): the
    summary says they can't be told apart at 3 seeds, with the ratio's interval holding 1, and
    names no fastest."""
    write_experiment(tmp_path / "raw", "dqn_bench", _reaching_90_at([2, 4, 5]))
    write_experiment(tmp_path / "raw", "apex_bench", _reaching_90_at([2, 3, 3]), algo="apex")
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    text = _section((out / "REPORT.md").read_text(), "### cabs · base")
    assert "fastest" not in text.split("| --- |")[-1]  # not in the verdict
    verdict = next(line for line in text.splitlines() if "can't be told apart" in line)
    assert verdict.startswith(
        "**apex · 1 runner and dqn · 1 runner can't be told apart at 3 seeds** on time to 90"
    )
    low, high = re.search(r"\[([\d.]+)×, ([\d.]+)×\] as fast", verdict).groups()
    assert float(low) <= 1.0 <= float(high)
    assert (out / "km_cabs_base.png").stat().st_size > 0


def test_the_summary_says_when_the_compared_runs_ran_on_different_cpus(tmp_path):
    """Runs on two CPU models: one sentence under the verdict names them (times compare only
    roughly); runs on one model: none."""
    write_experiment(tmp_path / "raw", "dqn_bench", _reaching_90_at([2, 4, 5]), cpu_model="CPU A")
    write_experiment(
        tmp_path / "raw", "apex_bench", _reaching_90_at([2, 3]), algo="apex", cpu_model="CPU B"
    )
    seed_2 = [{**_reaching_90_at([3])[0], "seed": 2}]  # a third seed, run on its own
    write_experiment(tmp_path / "raw", "apex_bench_b", seed_2, algo="apex", cpu_model="CPU B")
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    text = _section((out / "REPORT.md").read_text(), "### cabs · base")
    assert "ran on 2 CPU models (CPU A: 1 run; CPU B: 2 runs;" in text
    assert "compare across machines only roughly" in text

    write_experiment(tmp_path / "one", "dqn_bench", _reaching_90_at([2, 4, 5]))
    write_experiment(tmp_path / "one", "apex_bench", _reaching_90_at([2, 3, 3]), algo="apex")
    assert main(["report", str(tmp_path / "one"), "--out", str(tmp_path / "out1")]) == 0
    assert "CPU models" not in (tmp_path / "out1" / "REPORT.md").read_text()


def test_the_summary_says_when_the_machine_ran_slower_for_some_runs(tmp_path):
    """The raw env rates the runs recorded at their starts and ends, 3.1x apart: one sentence
    under the verdict names the fastest and the slowest, and the runs table shows each run's;
    1.4x apart (a noisy measurement): no sentence; a run from before the measurement: a dash."""
    raw, out = tmp_path / "raw", tmp_path / "out"
    write_experiment(raw, "dqn_bench", _reaching_90_at([2, 4, 5]), speed=(4458.0, 4400.0))
    slower = (4300.0, 1421.0)  # the host slowed down during the run
    write_experiment(raw, "apex_bench", _reaching_90_at([2, 3]), algo="apex", speed=slower)
    seed_2 = [{**_reaching_90_at([3])[0], "seed": 2}]
    write_experiment(raw, "apex_bench_b", seed_2, algo="apex")  # run before it was measured
    assert main(["report", str(raw), "--out", str(out)]) == 0
    report = (out / "REPORT.md").read_text()
    text = _section(report, "### cabs · base")
    assert (
        "**The machine's speed varied** between the runs compared here: its raw env rate, "
        "measured at each run's start and end, went from 4,458 env steps/s (`dqn_bench`) down "
        "to 1,421 (`apex_bench`), 3.1× slower"
    ) in text
    assert "1 run(s) compared predate the measurement." in text
    runs = _section(report, "### Runs")
    assert "| 4,300 -> 1,421 |" in runs and "| 4,458 -> 4,400 |" in runs
    assert re.search(r"\| apex_bench_b \|.*\| — \| `0123456789ab` \|", runs)

    steady = tmp_path / "steady"
    write_experiment(steady, "dqn_bench", _reaching_90_at([2, 4, 5]), speed=(4458.0, 3200.0))
    write_experiment(steady, "apex_bench", _reaching_90_at([2, 3, 3]), algo="apex")
    assert main(["report", str(steady), "--out", str(tmp_path / "out1")]) == 0
    assert "speed varied" not in (tmp_path / "out1" / "REPORT.md").read_text()


def test_the_verdict_names_a_winner_the_seeds_separate(tmp_path):
    """Clearly separated seeds (all at 2 s against 4-5 s, 5 seeds each): a fastest, with the
    ratio's interval above 1."""
    write_experiment(tmp_path / "raw", "dqn_bench", _reaching_90_at([4, 5, 5, 4, 5]))
    write_experiment(tmp_path / "raw", "apex_bench", _reaching_90_at([2, 2, 2, 2, 2]), algo="apex")
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "raw"), "--out", str(out)]) == 0
    text = _section((out / "REPORT.md").read_text(), "### cabs · base")
    verdict = next(line for line in text.splitlines() if line.startswith("**"))
    assert verdict.startswith("**apex · 1 runner reaches 90 = 90% of optimum fastest**")
    low = float(re.search(r"\[([\d.]+)×, [\d.]+×\] as fast", verdict).group(1))
    assert low > 1.0
    assert "IQM" in _section((out / "REPORT.md").read_text(), "### Final performance")


def test_curves_compares_runs_at_the_same_env_steps(suite_dir, capsys):
    """`python -m analysis curves`: per trial, the training return last reported at or before
    each env-step count (a dash before the first game or past the trial's end), and when each
    target was first reached."""
    assert main(["curves", str(suite_dir / "dqn_bench"), "--at", "200,0.4k,1M"]) == 0
    rows = _table(capsys.readouterr().out)
    assert [r["trial"] for r in rows] == ["abc12_00000", "abc12_00001", "abc12_00002"]
    first = rows[0]  # returns NaN, 20, 60, 95, 95 at 100, 200, ... env steps
    assert (first["200"], first["400"], first["1M"]) == ("20.0", "95.0", "—")
    assert first["to 50.0"] == "3.0 s / 300" and rows[2]["to 90.0"] == "not reached"


def test_curves_writes_a_generated_page_with_each_runs_command(suite_dir, tmp_path, capsys):
    out = tmp_path / "CURVES.md"
    argv = ["curves", str(suite_dir / "dqn_bench"), "--at", "200,1M", "--out", str(out)]
    assert main(argv) == 0
    text = out.read_text()
    assert text.startswith("<!-- Generated by `python -m analysis curves`")
    assert f"python -m analysis curves {suite_dir / 'dqn_bench'} --at 200,1M --out {out}" in text
    assert [r["trial"] for r in _table(text)] == ["abc12_00000", "abc12_00001", "abc12_00002"]
    assert "## Commands" in text and "- dqn_bench, commit " in text


def test_curves_refuses_bad_env_steps(suite_dir, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["curves", str(suite_dir), "--at", "1M,lots"])
    assert exit_info.value.code == 2
    assert "expected env steps like 0.5M,1M,250k" in capsys.readouterr().err


def test_report_says_which_games_count_in_apex_training_return():
    from analysis.sections import _apex_return_note

    assert _apex_return_note(pd.DataFrame({"algo": ["dqn", "appo"]})) == ""
    note = _apex_return_note(pd.DataFrame({"algo": ["dqn", "apex"]}))
    assert "training_return_max_epsilon" in note and "rllib_episode_return_mean" in note


def test_a_recorded_collapse_stays_one_after_the_wild_swings_that_follow_it():
    """IMPALA on LunarLander, seed 0 (a before-run of record): its training return climbed from
    the random policy's −191 to −148, fell to −1,024 within 20 results and swung between about
    −600 and −1,000 to its end. Those swings made the run's step-to-step noise (70) larger than
    its lead over random at its best (43): judged by the whole run's noise, the best no longer
    counted as above random, and the run was not flagged. The best is judged by the noise up to
    it (12.5)."""
    from sweeps.harness import collapse

    root = Path(__file__).resolve().parents[1]
    table = root / "results/gym/before/family-before-impala-s0-lunarlander-v3.csv.gz"
    runs = collect.read_runs_csv(table).sort_values("training_iteration")
    returns = runs["return_mean"].dropna().astype(float).tolist()
    random = float(runs["random_return"].iloc[0])
    assert max(returns) - random < collapse.noise(returns)  # the whole run's noise: too big
    assert stability.ended_below(runs["return_mean"], random)
    assert collapse.ended_below(returns[:40], random)  # and live, once it had fallen

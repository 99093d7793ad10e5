"""The benchmark orchestrator (``python -m sweeps.benchmark``): what it runs, in which order, what
it reuses, and that bad input is refused before anything runs. ``subprocess.call`` and the
sweeps' calls (``recovery.call_to_its_end``) are replaced by a recorder, so no test here starts
Ray; the sweeps it launches are tested in test_sweeps.py."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweeps import benchmark
from sweeps.harness.record import jsonable
from sweeps.harness.runner import parse
from tests import stopping_child


class Calls(list):
    """The commands run, in order; ``exit_codes`` maps a run's name to the code it exits with."""

    def __init__(self) -> None:
        super().__init__()
        self.exit_codes: dict[str, int] = {}


@pytest.fixture
def calls(monkeypatch):
    """Record every subprocess; a sweep 'run' writes its run.json as the runner does (its parsed
    arguments) and exits with the code in ``exit_codes`` for its name (default 0)."""
    recorded = Calls()
    exit_codes = recorded.exit_codes

    def fake_call(cmd: list[str]) -> int:
        recorded.append(cmd)
        if "--benchmark-seeds" in cmd:
            sweep = cmd[2].removeprefix("sweeps.")
            args, config = parse(importlib.import_module(cmd[2]).SWEEP, cmd[3:])
            folder = Path(args.storage_path) / args.name
            folder.mkdir(parents=True)
            rc = exit_codes.get(args.name, 0)
            record = {
                "sweep": sweep,
                "status": "failed" if rc else "finished",
                "args": {k: v for k, v in args.as_dict().items() if k != "argv"},
                "base_config": jsonable(config.to_dict()),  # the tuned defaults it ran
            }
            (folder / "run.json").write_text(json.dumps(record))
            return rc
        return 0  # the report

    monkeypatch.setattr(benchmark.subprocess, "call", fake_call)
    monkeypatch.setattr(benchmark.recovery, "call_to_its_end", fake_call)
    return recorded


def _flag(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def _folder(cmd: list[str]) -> Path:
    return Path(_flag(cmd, "--storage-path")) / _flag(cmd, "--name")


def test_runs_every_algorithm_and_runner_count_then_one_report(calls, tmp_path, capsys):
    storage, out = tmp_path / "runs", tmp_path / "results"
    rc = benchmark.main(
        [
            "--algos", "dqn,apex",
            "--num-env-runners", "1,0",
            "--benchmark-seeds", "2",
            "--stop-train-time-s", "30",
            "--storage-path", str(storage),
            "--name", "bench",
            "--out", str(out),
        ]
    )  # fmt: skip
    assert rc == 0
    *runs, report = calls
    assert [_folder(c) for c in runs] == [
        storage / "bench" / f"bench-{name}" for name in ("dqn-r0", "dqn-r1", "apex-r0", "apex-r1")
    ]
    for cmd in runs:
        algo = _flag(cmd, "--name").split("-")[1]
        assert cmd[:3] == [sys.executable, "-m", f"sweeps.{algo}_cabs"]
        assert _flag(cmd, "--benchmark-seeds") == "2"
        assert _flag(cmd, "--stop-train-time-s") == "30.0"
        assert _flag(cmd, "--max-concurrent-trials") == "1"  # fair timing
        assert _flag(cmd, "--variant") == "base"
        # stops at 95% of the exact optimum (the env's highest target)
        assert float(_flag(cmd, "--stop-reward")) == pytest.approx(0.95 * 2966.357, abs=0.1)
    assert report[1:4] == ["-m", "analysis", "report"]
    assert report[4:-2] == [str(_folder(c)) for c in runs]
    assert report[-2:] == ["--out", str(out)]
    progress = [line for line in capsys.readouterr().out.splitlines() if "done in" in line]
    assert [line.split(":")[0] for line in progress] == [
        f"[benchmark] ({k}/4) {_flag(c, '--name')}" for k, c in enumerate(runs, start=1)
    ]


def test_default_is_a_new_folder_under_runs_never_results(calls, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert benchmark.main(["--algos", "impala"]) == 0
    (run,), report = calls[:-1], calls[-1]
    folder = _folder(run).parent
    assert folder.parent == Path("runs/benchmark")
    assert re.fullmatch(r"cabs-base-\d{8}-\d{6}", folder.name)
    assert _flag(run, "--name") == f"{folder.name}-impala"  # the sweep's own runner count
    assert "--num-env-runners" not in run
    assert report[-2:] == ["--out", str(folder)]  # the report beside its runs
    assert not (tmp_path / "results").exists()
    assert f"report: {folder}" in capsys.readouterr().out


def test_same_arguments_reuse_the_runs_and_failures_stay_failures(calls, tmp_path, capsys):
    argv = [
        "--variant", "requests",
        "--algos", "impala,appo",
        "--storage-path", str(tmp_path / "runs"),
        "--name", "bench",
        "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    calls.exit_codes["bench-appo"] = 1
    assert benchmark.main(argv) == 1  # a configuration failed; the report has what ran
    first = capsys.readouterr()
    assert "failed configurations: bench-appo (exit 1)" in first.err
    calls.clear()

    assert benchmark.main(argv) == 1  # nothing runs again; the failed run is still a failure
    (report,) = calls
    folder = tmp_path / "runs" / "bench"
    assert report[4:-2] == [str(folder / "bench-impala"), str(folder / "bench-appo")]
    captured = capsys.readouterr()
    assert "(1/2) bench-impala: reusing its results (same arguments, finished)" in captured.out
    assert "failed configurations: bench-appo (failed, reused)" in captured.err


def test_help_shows_how_to_run_and_each_default_once(capsys):
    with pytest.raises(SystemExit) as exit_info:
        benchmark.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "How to run" in text and "Where results go" in text
    options = text.split("options:")[1]
    assert "(default: None)" not in options
    assert options.count("(default: 120.0)") == 1  # --stop-train-time-s
    assert "--seeds" not in options.replace("--benchmark-seeds", "")  # old spellings hidden
    assert "--tag" not in options and "--time-budget-s" not in options


REFUSED_REUSE = {
    "different budget": (
        ["--stop-train-time-s", "60"],
        lambda folder: None,
        "bench/bench-dqn was run with --stop-train-time-s 120.0, not 60.0; choose another",
    ),
    "different seeds": (["--benchmark-seeds", "5"], lambda f: None, "--benchmark-seeds 3, not 5"),
    "other tuned defaults": (
        [],
        lambda folder: _edit_config(folder, lr=0.123),
        "bench/bench-dqn was run with other tuned defaults of dqn_cabs (lr: 0.123 then, ",
    ),
    "no run record": (
        [],
        lambda folder: (folder / "run.json").unlink(),
        "bench/bench-dqn exists but holds no readable run record",
    ),
    "unfinished": (
        [],
        lambda folder: _set_status(folder, "interrupted"),
        "did not finish (status interrupted); continue it with python sweeps/dqn_cabs.py --resume",
    ),
}


def _edit_config(folder: Path, **settings: object) -> None:
    record = json.loads((folder / "run.json").read_text())
    record["base_config"].update(settings)  # as if the sweep file's tuned defaults had changed
    (folder / "run.json").write_text(json.dumps(record))


def _set_status(folder: Path, status: str) -> None:
    record = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**record, "status": status}))


def test_a_function_at_another_address_is_no_change_of_the_tuned_defaults(calls, tmp_path):
    """A setting that holds a function (the periodic evaluation, a ``functools.partial``) is
    written with its address, which differs in every process: the same command reuses."""
    argv = ["--algos", "dqn", "--storage-path", str(tmp_path), "--name", "bench"]
    assert benchmark.main(argv) == 0
    folder = tmp_path / "bench" / "bench-dqn"
    value = json.loads((folder / "run.json").read_text())["base_config"]["custom_eval_function"]
    assert " at 0x" in value and not value.startswith("<")
    _edit_config(folder, custom_eval_function=re.sub(r"0x[0-9a-f]+", "0x1", value))
    calls.clear()
    assert benchmark.main(argv) == 0
    assert [c for c in calls if "--benchmark-seeds" in c] == []


@pytest.mark.parametrize("extra, damage, message", REFUSED_REUSE.values(), ids=REFUSED_REUSE)
def test_a_folder_that_does_not_match_is_refused_before_anything_runs(
    extra, damage, message, calls, tmp_path, capsys
):
    argv = [
        "--algos", "dqn",
        "--storage-path", str(tmp_path / "runs"),
        "--name", "bench",
        "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    assert benchmark.main(argv) == 0
    damage(tmp_path / "runs" / "bench" / "bench-dqn")
    calls.clear()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        benchmark.main([*argv, "--algos", "apex,dqn", *extra])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert calls == []  # not even apex, which comes first


def test_another_sweeps_folder_is_refused(calls, tmp_path, capsys):
    folder = tmp_path / "runs" / "bench" / "bench-dqn"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"sweep": "dqn_pong", "args": {}}))
    argv = ["--algos", "dqn", "--storage-path", str(tmp_path / "runs"), "--name", "bench"]
    with pytest.raises(SystemExit):
        benchmark.main(argv)
    assert "holds a run of dqn_pong, not dqn_cabs" in capsys.readouterr().err
    assert calls == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--benchmark-seeds", "0"], "--benchmark-seeds: must be >= 1"),
        (["--algos", "dqn,ppo"], "unknown algorithm(s) ['ppo']"),
        (["--num-env-runners", "1,-2"], "expected non-negative integers"),
        (["--stop-train-time-s", "0"], "--stop-train-time-s: must be a positive number"),
        (["--time-budget-s", "60"], "--time-budget-s: in the sweeps this is a whole sweep's"),
        (["--env", "mujoco"], "--env mujoco: no such Gymnasium env"),
        (["--seed", "x"], "expected an integer"),
        (["--set", "lr"], "expected KEY=VALUE"),
        (["--stop-train-time"], "unrecognized arguments: --stop-train-time"),  # no abbreviations
        (["--name", "a/b"], "--name must be a plain folder name"),
        (["--out", "README.md/report"], "--out: README.md/report: cannot be created"),
        (["--storage-path", "README.md/runs"], "--storage-path: README.md/runs: cannot be"),
        (["--storage-path", "/proc/x"], "--storage-path: /proc/x: cannot be created"),
        (["--storage-path", "s3://bucket/runs"], "needs a local or mounted folder"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_runs_nothing(argv, message, calls, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # README.md is a file, not a folder
    with pytest.raises(SystemExit) as exit_info:
        benchmark.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert calls == []


def test_set_goes_to_every_algorithm_s_sweep_and_the_same_command_reuses_its_runs(calls, tmp_path):
    sets = ["--set", "lr=0.002", "--set", "gamma=0.9"]
    argv = ["--algos", "dqn,apex", "--benchmark-seeds", "1", *sets]
    argv += ["--storage-path", str(tmp_path), "--name", "s"]
    assert benchmark.main(argv) == 0
    runs = [c for c in calls if "--benchmark-seeds" in c]
    assert len(runs) == 2
    for run in runs:
        i = run.index("--set")
        assert run[i : i + 4] == sets
    calls.clear()
    assert benchmark.main(argv) == 0  # the same settings: reused
    assert [c for c in calls if "--benchmark-seeds" in c] == []


def test_pong_runs_end_with_an_evaluation_of_the_final_policies(calls, tmp_path):
    storage = tmp_path / "runs"
    argv = ["--env", "pong", "--algos", "appo", "--benchmark-seeds", "1"]
    argv += ["--storage-path", str(storage), "--name", "p"]
    assert benchmark.main(argv) == 0
    run, evaluation, report = calls
    assert float(_flag(run, "--stop-reward")) == 18.0
    folder = str(_folder(run))
    assert evaluation[1:] == ["-m", "sweeps.evaluate", folder, "--episodes", "10", "--sampled"]
    assert report[1:4] == ["-m", "analysis", "report"]
    calls.clear()
    assert benchmark.main([*argv[:-1], "p0", "--final-episodes", "0"]) == 0
    assert [c[2] for c in calls] == ["sweeps.appo_pong", "analysis"]
    calls.clear()
    cabs = ["--algos", "apex", "--benchmark-seeds", "1", "--storage-path", str(storage)]
    assert benchmark.main([*cabs, "--name", "c"]) == 0
    assert "sweeps.evaluate" not in [c[2] for c in calls]


def test_a_reused_run_stopped_in_its_final_games_plays_them(calls, tmp_path, capsys):
    """The benchmark named again after it was stopped during a run's final games (the sweep had
    finished): the games are played then; a run that has them is only reused."""
    argv = ["--env", "pong", "--algos", "appo", "--benchmark-seeds", "1"]
    argv += ["--storage-path", str(tmp_path / "runs"), "--name", "p"]
    assert benchmark.main(argv) == 0
    folder = _folder(calls[0])
    trial = folder / "APPO_x_00000"
    trial.mkdir()
    (trial / "params.json").write_text("{}")  # no final_evaluation.json: stopped before it
    calls.clear()
    assert benchmark.main(argv) == 0
    evaluation, report = calls
    assert evaluation[1:] == ["-m", "sweeps.evaluate", str(folder), "--episodes", "10", "--sampled"]
    assert "its final games, not played before it was stopped" in capsys.readouterr().out
    (trial / "final_evaluation.json").write_text("{}")
    calls.clear()
    assert benchmark.main(argv) == 0
    assert [c[2] for c in calls] == ["analysis"]


def test_a_sweep_stopped_by_ctrl_c_stops_the_benchmark_with_how_to_go_on(calls, tmp_path, capsys):
    argv = ["--env", "cabs", "--algos", "dqn,apex", "--num-env-runners", "1"]
    argv += ["--storage-path", str(tmp_path), "--name", "b", "--stop-train-time-s", "5"]
    calls.exit_codes["b-dqn-r1"] = benchmark.INTERRUPTED_RC
    assert benchmark.main(argv) == benchmark.INTERRUPTED_RC
    assert len(calls) == 1  # no second configuration, no report
    err = capsys.readouterr().err
    assert f"--resume {tmp_path / 'b' / 'b-dqn-r1'}" in err


def test_a_ctrl_c_lets_the_sweep_finish_its_clean_stop(tmp_path):
    """Ctrl-C reaches the benchmark and its sweep (one process group). subprocess.call killed
    the sweep 0.25 s later, before its last save; the benchmark now waits for it."""
    saved = tmp_path / "saved"
    parent = (
        "import sys; from sweeps.harness.recovery import call_to_its_end; "
        f"sys.exit(call_to_its_end({[*stopping_child.COMMAND, str(saved)]!r}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{saved}.started").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at a terminal
        assert proc.wait(30) == 130
        assert saved.read_text() == "saved"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

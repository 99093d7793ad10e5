"""The benchmark orchestrator (``python -m sweeps.benchmark``): what it runs, in which order, what
it reuses, and that bad input is refused before anything runs. ``subprocess.call`` is replaced by a
recorder, so no test here starts Ray; the sweeps it launches are tested in test_sweeps.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sweeps import benchmark


class Calls(list):
    """The commands run, in order; ``exit_codes`` maps a run's name to the code it exits with."""

    def __init__(self) -> None:
        super().__init__()
        self.exit_codes: dict[str, int] = {}


@pytest.fixture
def calls(monkeypatch):
    """Record every subprocess; a sweep 'run' writes its run.json (as the runner does) and exits
    with the code in ``exit_codes`` for its name (default 0)."""
    recorded = Calls()
    exit_codes = recorded.exit_codes

    def fake_call(cmd: list[str]) -> int:
        recorded.append(cmd)
        if "--benchmark-seeds" in cmd:
            name = cmd[cmd.index("--name") + 1]
            folder = Path(cmd[cmd.index("--storage-path") + 1]) / name
            folder.mkdir(parents=True)
            (folder / "run.json").write_text(json.dumps({"status": "finished"}))
            return exit_codes.get(name, 0)
        return 0  # the report

    monkeypatch.setattr(benchmark.subprocess, "call", fake_call)
    return recorded


def _flag(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_runs_every_algorithm_and_runner_count_then_one_report(calls, tmp_path, capsys):
    storage, out = tmp_path / "runs", tmp_path / "results"
    rc = benchmark.main(
        [
            "--algos", "dqn,apex",
            "--num-env-runners", "1,0",
            "--seeds", "2",
            "--time-budget-s", "30",
            "--storage-path", str(storage),
            "--out", str(out),
        ]
    )  # fmt: skip
    assert rc == 0
    *runs, report = calls
    assert [_flag(c, "--name") for c in runs] == [
        "bench-cabs-base-dqn-r0",
        "bench-cabs-base-dqn-r1",
        "bench-cabs-base-apex-r0",
        "bench-cabs-base-apex-r1",
    ]
    for cmd in runs:
        algo = _flag(cmd, "--name").split("-")[3]
        assert cmd[:3] == [sys.executable, "-m", f"sweeps.{algo}_cabs"]
        assert _flag(cmd, "--benchmark-seeds") == "2"
        assert _flag(cmd, "--stop-train-time-s") == "30.0"
        assert _flag(cmd, "--max-concurrent-trials") == "1"  # fair timing
        assert _flag(cmd, "--variant") == "base"
        # stops at 95% of the exact optimum (the env's highest target)
        assert float(_flag(cmd, "--stop-reward")) == pytest.approx(0.95 * 2966.357, abs=0.1)
    assert report[1:4] == ["-m", "analysis", "report"]
    assert report[4:-2] == [str(storage / _flag(c, "--name")) for c in runs]
    assert report[-2:] == ["--out", str(out)]
    progress = [line for line in capsys.readouterr().out.splitlines() if "done in" in line]
    assert [line.split(":")[0] for line in progress] == [
        f"[benchmark] ({k}/4) {_flag(c, '--name')}" for k, c in enumerate(runs, start=1)
    ]


def test_existing_folders_are_reused_and_failures_reported(calls, tmp_path, capsys):
    storage = tmp_path / "runs"
    (storage / "bench-cabs-requests-impala").mkdir(parents=True)
    calls.exit_codes["bench-cabs-requests-appo"] = 1
    rc = benchmark.main(
        [
            "--variant", "requests",
            "--algos", "impala,appo",
            "--storage-path", str(storage),
            "--out", str(tmp_path / "out"),
        ]
    )  # fmt: skip
    assert rc == 1  # a configuration failed; the report is still written with what ran
    *runs, report = calls
    assert [_flag(c, "--name") for c in runs] == ["bench-cabs-requests-appo"]
    assert "--num-env-runners" not in runs[0]  # the sweep's own default
    assert report[4:-2] == [
        str(storage / "bench-cabs-requests-impala"),
        str(storage / "bench-cabs-requests-appo"),
    ]
    captured = capsys.readouterr()
    assert "bench-cabs-requests-impala: folder exists, reusing its results" in captured.out
    assert "failed configurations: bench-cabs-requests-appo (exit 1)" in captured.err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "0"], "--seeds: must be >= 1"),
        (["--algos", "dqn,ppo"], "unknown algorithm(s) ['ppo']"),
        (["--num-env-runners", "1,-2"], "expected non-negative integers"),
        (["--time-budget-s", "0"], "--time-budget-s: must be a positive number"),
        (["--env", "mujoco"], "invalid choice: 'mujoco'"),
        (["--seed", "x"], "expected an integer"),
        (["--time-budget"], "unrecognized arguments: --time-budget"),  # no abbreviations
        (["--out", "README.md/report"], "--out: README.md/report: cannot be created"),
        (["--storage-path", "README.md/runs"], "--storage-path: README.md/runs: cannot be"),
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

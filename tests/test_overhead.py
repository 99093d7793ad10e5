"""``python -m analysis overhead``: a sweep's wall-clock split into its pieces, from its files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from analysis import overhead
from analysis.__main__ import main
from sweeps.harness.record import RunRecord

T0 = 1_700_000_000  # the sweep's start, unix seconds


def _row(iteration: int, ts: float, dt: float, total: float, train: float, ev: float) -> dict:
    return {
        "training_iteration": iteration,
        "timestamp": ts,
        "time_this_iter_s": dt,
        "time_total_s": total,
        "suite": {"train_time_s": train, "eval_time_s": ev},
    }


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat()


def _sweep(tmp_path: Path) -> Path:
    """Start at T0; trial a iterates 10-12 and 13-15 (a 1-s checkpoint between); trial b
    20-26 in one iteration; the sweep ends at 40."""
    folder = tmp_path / "mainjob"
    folder.mkdir()
    record = RunRecord(
        sweep="apex_cabs",
        started_at=_iso(T0),
        ended_at=_iso(T0 + 40),
        status="finished",
        command="python sweeps/apex_cabs.py",
    )
    record.write(str(folder / "run.json"))
    trials = {
        "a": [_row(1, T0 + 12, 2, 2, 1.5, 0.5), _row(2, T0 + 15, 2, 4, 3.0, 1.0)],
        "b": [_row(1, T0 + 26, 6, 6, 5.0, 0.5)],
    }
    for name, rows in trials.items():
        (folder / name).mkdir()
        (folder / name / "result.json").write_text("\n".join(map(json.dumps, rows)) + "\n")
    return folder


def test_pieces_add_up_to_the_wall_clock(tmp_path):
    b = overhead.breakdown(_sweep(tmp_path))
    assert (b.wall_s, b.trials, b.trial_clock_s) == (40.0, 2, 10.0)
    assert b.pieces == {
        "before": 10.0,  # to trial a's first iteration start
        "train": 8.0,
        "eval": 1.5,
        "iter_other": 0.5,
        "within": 1.0,  # a's span 5 s, 4 s iterating
        "between": 5.0,  # a ended at 15, b began at 20
        "after": 14.0,  # b ended at 26, the sweep at 40
    }
    assert sum(b.pieces.values()) == pytest.approx(b.wall_s)
    assert b.ratio == pytest.approx(4.0) and not b.overlapping


def test_command_writes_overhead_md(tmp_path, capsys):
    folder = _sweep(tmp_path)
    assert main(["overhead", str(folder), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "OVERHEAD.md").read_text()
    assert "| between trials (tear-down, start-up) | 5 s (12%) |" in text
    assert "| wall-clock / the trials' clocks | 4.00x |" in text
    assert "mainjob: wall-clock 40 s = 4.00x its trials' clocks" in capsys.readouterr().out


def test_not_a_sweep_folder_is_one_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["overhead", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "not a sweep folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_resumed_sweeps_pause_is_no_ones(tmp_path):
    folder = _sweep(tmp_path)
    record = RunRecord.read(str(folder / "run.json"))
    # Cut after trial a (at 16), resumed at 19: three seconds of pause between the trials.
    record.resumes = [{"at": _iso(T0 + 19), "previous_ended_at": _iso(T0 + 16)}]
    record.write(str(folder / "run.json"))
    b = overhead.breakdown(folder)
    assert b.wall_s == 37.0 and b.pieces["between"] == 2.0
    assert sum(b.pieces.values()) == pytest.approx(b.wall_s)

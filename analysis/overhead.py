"""``python -m analysis overhead``: where a sweep's wall-clock goes, from its own files.

    python -m analysis overhead runs/mainjob-s3 runs/mainjob-s3-1core --out results/cabs

Each input is a sweep folder (``run.json`` and one folder per trial, as Tune wrote them). Its
wall-clock (``run.json``: ``started_at`` to ``ended_at``) splits into:

- **before the first trial**: the machine's speed, Ray's start, the plan, the first trial's
  build (up to its first iteration's start);
- **in the trials' iterations** (Tune's ``time_total_s``, the sum of ``train()`` calls): training
  (the suite's ``train_time_s``), periodic greedy evaluation (``eval_time_s``) and the rest of
  the iteration (the confirmation of a target, result bookkeeping);
- **within trials, between iterations**: checkpoints, Tune's loop and callbacks (a trial's span,
  its first iteration's start to its last iteration's end, less its iterations);
- **between trials**: one trial's tear-down and the next one's start-up (its trial actor, env
  runners, replay shards built), the gaps where no trial iterated;
- **after the last trial**: stopping, the machine's speed at the end (the run record's end; the
  held-out re-evaluation of the best trials and the summary follow it).

A resumed sweep's pauses between its runs are taken out (each resume records where the run
before it ended).

Tune's ``timestamp`` has a resolution of one second, so a trial's span is good to about a second
and the pieces to about a second per trial; trials that overlap (``--max-concurrent-trials``
above 1) are said to, and their gaps are the times when none iterated. The share that is not
training is the sweep's overhead; the ratio of the wall-clock to the trials' own clocks (the sum
of their ``time_total_s``) is the figure issue 61 sets a goal for. Writes ``OVERHEAD.md``
(generated; do not edit it by hand).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.fmt import markdown_table
from sweeps.harness import keys
from sweeps.harness.errors import UsageError
from sweeps.harness.files import atomic_write_text, check_writable, json_lines
from sweeps.harness.record import RECORD_FILE, RunRecord

OVERHEAD_MD = "OVERHEAD.md"
PIECES = (
    ("before", "before the first trial (speed, Ray, plan, the first build)"),
    ("train", "iterations: training"),
    ("eval", "iterations: periodic greedy evaluation"),
    ("iter_other", "iterations: the rest (target checks, bookkeeping)"),
    ("within", "within trials, between iterations (checkpoints, Tune's loop)"),
    ("between", "between trials (tear-down, start-up)"),
    ("after", "after the last trial (stopping, the machine's speed at the end)"),
)


@dataclass
class Breakdown:
    """One sweep's wall-clock in pieces (seconds), with what it is."""

    name: str
    wall_s: float
    trials: int
    trial_clock_s: float  # the sum of the trials' time_total_s
    pieces: dict[str, float] = field(default_factory=dict)
    overlapping: bool = False
    record: RunRecord | None = None
    pause_unknown: bool = False  # resumed before resumes recorded where the run before ended

    @property
    def ratio(self) -> float:
        """The wall-clock over the trials' own clocks."""
        return self.wall_s / self.trial_clock_s if self.trial_clock_s > 0 else float("nan")


def _rows(trial: Path) -> list[dict[str, Any]]:
    """A trial's result rows (one per iteration, the last of each); a half-written line is
    skipped."""
    rows: dict[int, dict[str, Any]] = {}
    try:
        text = (trial / "result.json").read_text(errors="replace")
    except OSError:
        return []
    for row in json_lines(text)[0]:
        if "training_iteration" in row and "timestamp" in row:
            rows[int(row["training_iteration"])] = row
    return [rows[i] for i in sorted(rows)]


def _seconds(iso: str | None) -> float | None:
    return None if not iso else dt.datetime.fromisoformat(iso).timestamp()


def breakdown(folder: Path) -> Breakdown:
    """The pieces of one sweep folder's wall-clock; a UsageError where it is not a finished
    sweep folder."""
    try:
        record = RunRecord.read(folder / RECORD_FILE)
    except (OSError, ValueError) as e:
        raise UsageError(f"{folder}: not a sweep folder ({RECORD_FILE}: {e})") from None
    start, end = _seconds(record.started_at), _seconds(record.ended_at)
    if start is None or end is None:
        raise UsageError(f"{folder}: the sweep has not ended ({RECORD_FILE} has no ended_at)")
    spans = []
    iterating = train = evaluation = 0.0
    for trial in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "result.json").exists()):
        rows = _rows(trial)
        if not rows:
            continue
        first, last = rows[0], rows[-1]
        begun = float(first["timestamp"]) - float(first.get("time_this_iter_s") or 0.0)
        spans.append((begun, float(last["timestamp"])))
        iterating += float(last.get("time_total_s") or 0.0)
        train += float(keys.get(last, keys.TRAIN_TIME_S) or 0.0)
        evaluation += float(keys.get(last, keys.EVAL_TIME_S) or 0.0)
    if not spans:
        raise UsageError(f"{folder}: no trial reported a result")
    spans.sort()
    covered, gaps, overlapping, reach = 0.0, 0.0, False, spans[0][0]
    for begun, ended in spans:
        if begun < reach:  # overlaps the trials before it
            overlapping = True
        else:
            gaps += begun - reach
        covered += ended - begun
        reach = max(reach, ended)
    pieces = {
        "before": max(spans[0][0] - start, 0.0),
        "train": train,
        "eval": evaluation,
        "iter_other": max(iterating - train - evaluation, 0.0),
        "within": max(covered - iterating, 0.0),
        "between": gaps,
        "after": max(end - reach, 0.0),
    }
    # A resumed sweep: the pauses between its runs are no one's (each resume records where the
    # run before it ended); taken out of the piece they fall in.
    wall, unknown = end - start, False
    for resume in record.resumes or []:
        ended, again = _seconds(resume.get("previous_ended_at")), _seconds(resume.get("at"))
        if ended is None or again is None:
            unknown = True
            continue
        pause = max(again - ended, 0.0)
        wall -= pause
        middle = (ended + again) / 2
        inside = any(b <= middle <= e for b, e in spans)
        piece = "within" if inside else "between" if middle < reach else "after"
        pieces[piece] = max(pieces[piece] - pause, 0.0)
    breakdown = Breakdown(folder.name, wall, len(spans), iterating, pieces, overlapping, record)
    breakdown.pause_unknown = unknown
    return breakdown


def render(sweeps: list[Breakdown], command: str, generated_on: str) -> str:
    """The Markdown of ``OVERHEAD.md``: one column per sweep."""
    header = ["", *[b.name for b in sweeps]]
    rows = []
    for key, label in PIECES:
        rows.append(
            [label, *[f"{b.pieces[key]:,.0f} s ({b.pieces[key] / b.wall_s:.0%})" for b in sweeps]]
        )
    rows.append(["**wall-clock**", *[f"**{b.wall_s:,.0f} s**" for b in sweeps]])
    rows.append(["trials (ran)", *[str(b.trials) for b in sweeps]])
    clocks = [f"{b.trial_clock_s:,.0f} s" for b in sweeps]
    rows.append(["the trials' own clocks (time_total_s)", *clocks])
    rows.append(["wall-clock / the trials' clocks", *[f"{b.ratio:.2f}x" for b in sweeps]])
    rows.append(["status", *[(b.record.status or "?") for b in sweeps]])
    rows.append(
        [
            "machine (raw env steps/s at start)",
            *[
                f"{b.record.machine.cpu_model or '?'}, {b.record.machine.cores or '?'} core(s), "
                + (
                    f"{b.record.machine.raw_env_steps_per_s_at_start:,.0f}"
                    if b.record.machine.raw_env_steps_per_s_at_start
                    else "not measured"
                )
                for b in sweeps
            ],
        ]
    )
    lines = [
        f"<!-- Generated by `{command}`. Do not edit by hand: re-run it. -->",
        "",
        "# Where a sweep's wall-clock goes",
        "",
        f"Generated by `{command}` on {generated_on}, from each sweep folder's `run.json` and its "
        "trials' `result.json` (how: `analysis/overhead.py`). Tune's timestamps have a "
        "resolution of one second: each piece is good to about a second per trial.",
        "",
        markdown_table(header, rows),
        "",
        "Commands:",
        "",
        *[f"- {b.name}: `{b.record.command}`" for b in sweeps],
    ]
    caveats = {
        "pause_unknown": "Resumed before its record kept where each run ended: {}; its "
        "wall-clock includes the pause between its runs.",
        "overlapping": "Trials ran at once in {}: the iteration and within-trial pieces are "
        "summed over the trials, so there they add up to more than the wall-clock, and the gaps "
        "between trials are the times when none iterated.",
    }
    for flag, text in caveats.items():
        if names := ", ".join(b.name for b in sweeps if getattr(b, flag)):
            lines += ["", text.format(names)]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folders", nargs="+", type=Path, help="sweep folders (runs/<name>)")
    parser.add_argument("--out", type=Path, required=True, help=f"folder for {OVERHEAD_MD}")


def run(args: argparse.Namespace) -> int:
    for folder in args.folders:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such folder")
    sweeps = [breakdown(folder) for folder in args.folders]  # all read before anything is written
    check_writable(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    folders = [str(f) for f in args.folders]
    command = shlex.join(["python", "-m", "analysis", "overhead", *folders, "--out", str(args.out)])
    generated_on = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    atomic_write_text(args.out / OVERHEAD_MD, render(sweeps, command, generated_on))
    for b in sweeps:
        print(f"{b.name}: wall-clock {b.wall_s:,.0f} s = {b.ratio:.2f}x its trials' clocks")
    print(f"wrote {args.out / OVERHEAD_MD}")
    return 0

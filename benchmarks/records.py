"""The queue of runs of record: it runs the planned runs not yet collected, one at a time, in the
hours given, and commits each one's collected table (and the report over its plan) as it finishes.

A run of record times training on the whole machine, lasts minutes to hours, and must survive the
end of a working stretch on a work tree that the next stretch may not have: what lasts is what is
committed. Each plan lists its runs as data, in the order they serve the most
(``benchmarks/pong_records.py``: Pong at 1 to 13 env runners; ``benchmarks/family_records.py``:
the env family); this module is the queue they share, and it never names an env.

A planned run is *collected* once its table exists (``Planned.table``). With ``--hours`` the
queue takes the runs not yet collected in order and runs each whose worst case fits in the hours
left: its training budget (what an interrupted run still has of it) times its wall-clock per
training second, plus its fixed cost (start-up, final games, the report). A run that does not
fit is skipped, and a later, shorter one may still go: a plan of short runs after a plan of long
ones fills the hours the long ones leave. For each: the benchmark (an interrupted run of a killed
queue is resumed from its last checkpoint instead), the collected table, and its plan's report
regenerated (where a run is one of a *group*, once the group's last is collected: a report's
charts are not committed again for every run); with ``--commit``, a commit of those files
alone. The first run that fails stops the queue (exit 1). Nothing else may run beside it. At
its end the queue regenerates (and commits) a plan's report left behind runs collected without
running (a run another run's table serves: ``main``'s ``behind``).

The hours given are a hard end: a run still training then is stopped as Ctrl-C stops it (it saves
where it was, and is left *interrupted*: the next queue on this work tree resumes it). With
``--fill`` the queue uses the end of its hours too: when the next run does not fit, it is started
anyway (once at least ``MIN_FILL_S`` are left) and stopped at the end; on a fresh work tree the
stopped run starts again from nothing. Ctrl-C on the queue stops the run going the same way.

To stop a queue between runs, without stopping the run it is on, create ``STOP_FILE`` in its
storage folder (``touch runs/benchmark/STOP``): before it starts the next run, the queue removes
the file and ends as at the end of its hours (it regenerates what is behind, exit 0).

*Rate runs* (``rate=True``) are one sitting: short runs of each configuration, one after another
on one machine, whose env steps/s a report compares. The queue starts them only where all that
are left fit in its hours (never with ``--fill``); they are one group.

One file (over 500 lines): the queue's whole life, read top to bottom (what a planned run is, what
fits, running one to its end or the hours' end, collecting, reporting, committing), shared by the
plans that only list their runs.
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sweeps import benchmark
from sweeps.harness.cli import positive_float
from sweeps.harness.errors import OneLineErrorParser
from sweeps.harness.record import RunRecord
from sweeps.harness.subprocs import popen_stoppable

STORAGE = Path("runs/benchmark")
# In the storage folder: the queue ends before its next run (and removes it)
STOP_FILE = "STOP"
# The longest a planned run may take (its worst case): a working stretch is about 3 hours, from its
# setup to its closing test suite, and its work tree does not outlive it, so a run stopped at a
# stretch's end starts again from nothing in the next. A plan's runs all fit in one (tested).
STRETCH_RUN_S = 2.6 * 3600
# --fill: the least time worth starting a run that does not fit (Ray's start, the first
# checkpoint), and what a run stopped at the end may take to save and shut Ray down.
MIN_FILL_S = 1200.0
STOP_GRACE_S = 300.0
# What the command line of a sweep, a benchmark or one of their tools holds.
RUN_MARKS = ("sweeps.benchmark", "python sweeps/", "-m sweeps.")


@dataclass(frozen=True)
class Places:
    """Where the tables, the check tables, the benchmark folders and the reports go: each plan's
    own folders below ``root`` (``.``: the repository's ``results/``)."""

    root: Path = Path(".")
    storage: Path = STORAGE

    def __truediv__(self, relative: str | Path) -> Path:
        return self.root / relative


@dataclass(frozen=True)
class Refresh:
    """A report behind the runs its plan collected, to regenerate (``main``'s ``behind``): the
    command, the git pathspecs of what it writes, and why, in a few words."""

    command: list[str]
    paths: list[str]
    why: str


class Planned(Protocol):
    """One planned run, as the queue sees it."""

    name: str  # its benchmark folder's and its table's name
    issues: str  # the issues it serves, "58 59"
    budget_s: float  # --stop-train-time-s
    rate: bool  # one of a sitting of rate runs
    group: str | None  # its plan's report waits for the group's last run (None: no group)
    one_core: bool  # pinned to one core

    @property
    def fixed_s(self) -> float:
        """What the run adds to its training budget at most: start-up, final games, report."""

    @property
    def wall_per_train_s(self) -> float:
        """Its wall-clock per second of its training budget, at most."""

    @property
    def final_episodes(self) -> int:
        """The final games a resumed run's trial plays after training (0: none)."""

    def table(self, at: Places) -> Path:
        """Its collected table: the run is *collected* once it exists."""

    def unavailable(self, at: Places) -> str | None:
        """Why it cannot run here and now (an install extra missing, a run it waits for), or
        None."""

    def command(self, storage: Path) -> list[str]:
        """The command that runs it from nothing."""

    def resume_command(self, folder: Path) -> list[str]:
        """The command that goes on from its experiment folder's last checkpoint."""

    def report(self, at: Places) -> tuple[list[str], list[str]] | None:
        """Its plan's report over every collected table: the command, and the git pathspecs of
        what it writes (None: no report)."""

    def commit_message(self, shown: str) -> str:
        """The commit of its table, given its command as a person types it."""


# --- Where each run stands ---------------------------------------------------------------------


def ran_s(folder: Path | None) -> float:
    """Training seconds a run folder's trial has behind it (0 when it reported none)."""
    from analysis.collect import collect

    if folder is None:
        return 0.0
    try:
        runs = collect([folder]).runs
    except Exception:  # noqa: BLE001 - an unreadable folder has nothing to count
        return 0.0
    return float(runs["train_time_s"].max()) if not runs.empty else 0.0


def experiment_folder(run: Planned, storage: Path) -> Path | None:
    """The run's one experiment folder under its benchmark folder (None before it started)."""
    found = sorted((storage / run.name).glob(f"{run.name}-*"))
    return found[0] if found else None


def status(run: Planned, at: Places) -> str:
    """'collected' (its table exists), 'ended' (ran; its rows not collected), 'interrupted'
    (a killed run: it is resumed), or 'to do'."""
    if run.table(at).exists():
        return "collected"
    folder = experiment_folder(run, at.storage)
    if folder is None:
        return "to do"
    record = RunRecord.of_folder(folder)
    if record is None:
        return "to do"
    return "ended" if record.status in benchmark.REUSABLE else "interrupted"


def worst_case_s(run: Planned, state: str, storage: Path) -> float:
    """The longest the run can take from here: its budget left, plus start-up and reports."""
    if state in ("collected", "ended"):
        return run.fixed_s / 3
    left = run.budget_s
    if state == "interrupted":
        left = max(run.budget_s - ran_s(experiment_folder(run, storage)), 0.0)
    return left * run.wall_per_train_s + run.fixed_s


def shown(run: Planned, storage: Path) -> str:
    """The run's command as a person types it."""
    cmd = run.command(storage)
    return shlex.join([c if c != sys.executable else "python" for c in cmd])


def report_paths(out: Path) -> list[str]:
    """Git pathspecs of what a report writes in ``out`` (its charts, added or removed, not the
    folders beside it), and its table: a report over the runs' own tables copies none of them and
    removes an earlier copy, whose removal is committed (``commit_paths`` leaves out a path
    neither on disk nor known to git)."""
    return [str(out / "REPORT.md"), str(out / "runs.csv.gz"), f":(glob){out}/*.png"]


# --- Running one ---------------------------------------------------------------------------------


class StoppedAtEnd(Exception):
    """A run still training when the queue's hours ran out, stopped as Ctrl-C stops it."""


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    """``sig`` to ``proc``'s process group; nothing where the group has already gone (the run
    may end between the queue's timeout and its signal)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _stop(proc: subprocess.Popen) -> None:
    """Stop ``proc``'s process group as Ctrl-C at a terminal does (SIGINT to each process: the
    sweep saves where it was; Ray's own processes ignore it), then wait for it; a group still
    there after ``STOP_GRACE_S``, or a second Ctrl-C here, is killed."""
    try:
        _signal_group(proc, signal.SIGINT)
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    except KeyboardInterrupt:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
        raise


def _call(cmd: list[str], log: str, end: float | None = None) -> int:
    """Run ``cmd`` in a process group of its own and return its exit status. At ``end``
    (``time.monotonic()``) it is stopped and StoppedAtEnd raised; at a Ctrl-C here, stopped the
    same way before the KeyboardInterrupt goes on."""
    print(f"[records] {log}: {shlex.join(cmd)}", flush=True)
    proc = popen_stoppable(cmd)
    try:
        return proc.wait(None if end is None else max(end - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        print(f"[records] {log}: the queue's hours are up; stopping it as Ctrl-C would", flush=True)
        _stop(proc)
        raise StoppedAtEnd from None
    except KeyboardInterrupt:
        _stop(proc)
        raise


def execute(
    run: Planned,
    state: str,
    at: Places,
    commit: bool,
    end: float | None = None,
    plan: Sequence[Planned] = (),
) -> int:
    """Run (or resume) ``run`` (stopped at ``end``: StoppedAtEnd), collect its rows, regenerate
    its plan's report (once ``plan`` has no other run of its group left), commit if asked."""
    storage = at.storage
    if state == "interrupted":
        folder = experiment_folder(run, storage)
        rc = _call(run.resume_command(folder), f"{run.name}: resuming", end)
    elif state == "to do":
        rc = _call(run.command(storage), f"{run.name}: running", end)  # final games included
    else:
        rc = 0
    # A resumed run, or one whose benchmark was stopped during its final games (it ended
    # training, so its record says so): the games its trial has not played yet.
    folder = experiment_folder(run, storage)
    missing = state != "to do" and run.final_episodes and benchmark.final_games_missing(folder)
    if rc == 0 and missing:
        games = benchmark.final_games_command(folder, run.final_episodes)
        rc = _call(games, f"{run.name}: final games")
    if rc != 0:
        return rc
    table = run.table(at)
    table.parent.mkdir(parents=True, exist_ok=True)
    collect = [sys.executable, "-m", "analysis", "collect", str(storage / run.name)]
    rc = _call([*collect, "--out", str(table)], f"{run.name}: collecting")
    paths = [str(table)]
    report = run.report(at)
    group_left = run.group is not None and not group_whole(run.group, plan, at)
    if rc == 0 and report is not None and not group_left:
        command, written = report
        rc = _call(command, f"{run.name}: the report")
        paths += [str(table.parent), *written]
    if rc == 0 and commit:
        rc = commit_paths(paths, run.commit_message(shown(run, storage)))
    return rc


def group_whole(group: str, plan: Sequence[Planned], at: Places) -> bool:
    """Whether every run of ``plan`` in ``group`` is collected: its report may be regenerated."""
    return all(status(r, at) == "collected" for r in plan if r.group == group)


def commit_paths(paths: Sequence[str], message: str) -> int:
    """Commit ``paths`` (new ones added first), and nothing else staged; git's exit status. A
    path neither on disk nor known to git is left out (git refuses the whole commit over one: a
    report that no longer writes a file its queue, started before the change, still names)."""
    paths = [p for p in paths if _matched(p)]
    if not paths:  # (git commit with no path would commit whatever else is staged)
        print(f"[records] nothing to commit for: {message}", flush=True)
        return 0
    subprocess.call(["git", "add", "--", *paths])
    return _call(["git", "commit", "-q", "-m", message, "--", *paths], "committing")


def _matched(spec: str) -> bool:
    """Whether a git pathspec (a path, or ``:(glob)`` and a pattern) names a file on disk or one
    git tracks (a deleted one: its deletion is committed)."""
    on_disk = glob.glob(spec.removeprefix(":(glob)")) if spec.startswith(":(glob)") else [spec]
    if any(Path(p).exists() for p in on_disk):
        return True
    tracked = subprocess.run(["git", "ls-files", "--", spec], capture_output=True, text=True)
    return bool(tracked.stdout.strip())


# --- The command ---------------------------------------------------------------------------------


def build_parser(command: str, doc: str | None) -> argparse.ArgumentParser:
    p = OneLineErrorParser.of_command(command, doc)
    p.add_argument(
        "--hours",
        type=positive_float,
        default=None,
        help="run what fits in these hours, in order; without it: list the runs",
    )
    p.add_argument(
        "--fill",
        action="store_true",
        help="with --hours: when the next run does not fit, start it anyway and stop it at the "
        "end of the hours (the next queue on this work tree resumes it)",
    )
    p.add_argument(
        "--first",
        type=lambda text: [n for n in text.split(",") if n],
        default=[],
        metavar="NAME[,NAME...]",
        help="with --hours: take these runs first, in this order, then the rest in the plan's",
    )
    p.add_argument("--dry-run", action="store_true", help="with --hours: say what would run")
    p.add_argument("--commit", action="store_true", help="commit each run's table and report")
    p.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the folder the plans' results/ folders are in; default: %(default)s",
    )
    p.add_argument("--storage-path", type=Path, default=STORAGE, help="default: %(default)s")
    return p


def running_elsewhere() -> list[str]:
    """Other processes running a sweep or a benchmark (Linux: /proc), as 'pid: command'."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            words = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        text = " ".join(w for w in words if w)
        mine = int(proc.name) in (os.getpid(), os.getppid())
        if not mine and any(k in text for k in RUN_MARKS):
            found.append(f"{proc.name}: {text[:120]}")
    return found


def first_of(
    plan: Sequence[Planned], names: Sequence[str], parser: argparse.ArgumentParser
) -> list[Planned]:
    """``plan`` with the runs ``names`` at its front, in that order (``--first``)."""
    by_name = {r.name: r for r in plan}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"--first: no run named {unknown[0]} in the plan (the list without --hours)")
    front = [by_name[n] for n in dict.fromkeys(names)]
    return front + [r for r in plan if r.name not in names]


def sitting_s(plan: Sequence[Planned], at: Places) -> float:
    """The longest the rate runs not yet collected can take, one after another."""
    left = [(r, status(r, at)) for r in plan if r.rate]
    return sum(worst_case_s(r, st, at.storage) for r, st in left if st != "collected")


def listing(plan: Sequence[Planned], at: Places) -> str:
    """Every run: its state, issues, worst case and command; then how many are collected and
    the hours left per issue (a run serving several counts for each)."""
    lines, done, left = [], 0, {}
    width = max((len(r.name) for r in plan), default=0) + 1
    for run in plan:
        state = status(run, at)
        done += state == "collected"
        hours = worst_case_s(run, state, at.storage) / 3600
        need = "" if state == "collected" else f"at most {hours:4.1f} h"
        if state != "collected":
            for issue in run.issues.split():
                left[issue] = left.get(issue, 0.0) + hours
        command = shown(run, at.storage)
        lines.append(f"{run.name:{width}} {state:11} issues {run.issues:6} {need:13}  {command}")
    hours = ", ".join(f"issue {i}: {h:.1f} h" for i, h in sorted(left.items()))
    return "\n".join(
        [
            *lines,
            f"[records] {done} of {len(plan)} runs collected",
            *(
                [f"[records] left, at most (a run that reaches its target ends sooner): {hours}"]
                if left
                else []
            ),
        ]
    )


Behind = Callable[[Places], list[Refresh]]


def main(
    plan: Sequence[Planned],
    argv: Sequence[str] | None = None,
    parser: Callable[[], argparse.ArgumentParser] | None = None,
    behind: Behind | None = None,
) -> int:
    """The queue over ``plan``, in its order, with ``parser``'s flags (default: ``build_parser``
    as this module's command). ``behind``: the plan's reports behind its collected runs (runs
    collected without running, whose group's report no run regenerated): the listing names
    them, and the queue regenerates them (and commits them, with ``--commit``) at its end."""
    # Ctrl-C (SIGINT) stops the queue and its run however the queue was started (an ignored
    # SIGINT is inherited: sweeps.harness.subprocs); as it was, after.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        made = parser() if parser else build_parser("python -m benchmarks.records", __doc__)
        return _queue(plan, made, argv, behind or (lambda at: []))
    finally:
        signal.signal(signal.SIGINT, previous)


def refresh(stale: Sequence[Refresh], commit: bool) -> int:
    """Regenerate each report of ``stale`` (and commit it, with ``commit``); the first failure's
    exit status, else 0."""
    for report in stale:
        rc = _call(report.command, f"{report.why}: regenerating it")
        if rc == 0 and commit:
            rc = commit_paths(report.paths, f"Regenerated: {report.why}")
        if rc != 0:
            return rc
    return 0


def _queue(plan: Sequence[Planned], parser: argparse.ArgumentParser, argv, behind: Behind) -> int:
    args = parser.parse_args(argv)
    at = Places(args.root, args.storage_path)
    if args.hours is None:
        print(listing(plan, at), flush=True)
        for report in behind(at):
            print(f"[records] {report.why}: the next queue regenerates it", flush=True)
        return 0
    plan = first_of(plan, args.first, parser)
    busy = running_elsewhere()
    if busy and not args.dry_run:
        parser.error(f"another run is going ({busy[0]}): runs of record run alone")
    deadline = time.monotonic() + args.hours * 3600
    print("[records] runs of record time the whole machine: run nothing beside them", flush=True)
    sitting: bool | None = None  # whether the rate runs left fit (decided at the first)
    for run in plan:
        state = status(run, at)
        if state == "collected":
            continue
        need = worst_case_s(run, state, at.storage)
        left = deadline - time.monotonic()
        fills = args.fill and need > left >= MIN_FILL_S and not run.rate
        if run.rate and sitting is None:  # a sitting runs whole, on one machine, or waits
            sitting = sitting_s(plan, at) <= left
            if not sitting:
                print(
                    "[records] the rate runs left: skipped, at most "
                    f"{sitting_s(plan, at) / 3600:.1f} h one after another (one sitting) and "
                    f"{max(left, 0.0) / 3600:.1f} h left",
                    flush=True,
                )
        if run.rate and not sitting:
            continue
        why = run.unavailable(at)
        if why:
            print(f"[records] {run.name} ({state}): skipped, {why}", flush=True)
            continue
        if need > left and not fills:
            print(
                f"[records] {run.name} ({state}): skipped, at most {need / 3600:.1f} h "
                f"and {max(left, 0.0) / 3600:.1f} h left",
                flush=True,
            )
            continue
        what = f"at most {need / 3600:.1f} h" + (
            f", stopped after {left / 3600:.1f} h (--fill)" if fills else ""
        )
        if args.dry_run:
            print(f"[records] {run.name} ({state}): would run, {what}", flush=True)
            deadline -= min(need, left)
            continue
        stop = at.storage / STOP_FILE
        if stop.exists():
            stop.unlink(missing_ok=True)
            print(f"[records] {stop} found (and removed): stopping before {run.name}", flush=True)
            break
        print(f"[records] {run.name} ({state}): {what}", flush=True)
        try:
            end = deadline - run.fixed_s / 3
            rc = execute(run, state, at, args.commit, end=end, plan=plan)
        except StoppedAtEnd:
            print(
                f"[records] {run.name}: stopped at the end of the hours, left interrupted "
                "(the next queue resumes it)",
                flush=True,
            )
            return 0
        except KeyboardInterrupt:
            print(f"[records] {run.name}: interrupted; the next queue resumes it", file=sys.stderr)
            return 130
        if rc != 0:
            print(f"[records] {run.name}: exit {rc}; the queue stops here", file=sys.stderr)
            return 1
    if args.dry_run:
        for report in behind(at):
            print(f"[records] {report.why}: would regenerate it", flush=True)
        return 0
    return 1 if refresh(behind(at), args.commit) else 0

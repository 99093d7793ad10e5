"""The Pong runs of record, as data, and a queue that runs them one at a time in the hours given.

The scaling issue (the four at 1 and 4 env runners, Ape-X at 10, IMPALA at 13, 3 seeds each), the
confirmed-target issue (the four at one runner, 3 seeds) and the baseline issue (SB3's PPO) all
stand on Pong runs of 1 to 4 hours each, run alone on a 2-core machine, one at a time, each seed's
collected rows committed as it finishes. ``PLAN`` lists them in the order they serve the most;
one run serves every issue it names. A run is *collected* once its table
``results/pong/confirmed/<name>.csv.gz`` exists; the report over all of them is the Pong report,
``results/pong/REPORT.md``.

How to run
----------
    python -m benchmarks.pong_records                     # every run: status, issues, command
    python -m benchmarks.pong_records --hours 2.5 --dry-run   # what fits in 2.5 hours, and why
    nohup python -m benchmarks.pong_records --hours 2.5 --commit > records.log 2>&1 &
    nohup python -m benchmarks.pong_records --hours 2.5 --fill --commit > records.log 2>&1 &

With ``--hours`` it takes the runs not yet collected in order and runs each whose worst case fits
in the hours left: its training budget (what an interrupted run still has of it) times
``WALL_PER_TRAIN_S``, plus ``FIXED_S`` for start-up, the final games and the report. A run
that does not fit is skipped, and a later, shorter one may still go. For each: the benchmark (an
interrupted run of a killed queue is resumed from its last checkpoint instead), the collected
table, and the report over every collected table regenerated; with ``--commit``, a commit of
those files alone. The first run that fails stops the queue (exit 1). Nothing else may run
beside it: the runs time training on the whole machine.

The hours given are a hard end: a run still training then is stopped as Ctrl-C stops it (it saves
where it was, and is left *interrupted*: the next queue resumes it from its last checkpoint, then
plays its final games; one stopped during its final games gets them from the next queue).
With ``--fill`` the queue uses the end of its hours too: when the next run does not fit, it is
started anyway (once at least ``MIN_FILL_S`` are left) and stopped at the end. A resumed run's
seconds then come from two stretches, whose machines may differ in speed; its env steps compare
as any run's. Ctrl-C on the queue stops the run going the same way, and the queue with it.

The *rate runs* (``rate=True`` in ``PLAN``) are one sitting: every configuration of the scaling
table for a few minutes, one after another on the same machine, whose env steps/s the report
sets against the runs' env steps to 18 (``docs/scaling.md``, "Seconds on one machine"). The
queue starts them only where all that are left fit in its hours (never with ``--fill``), and
regenerates the report once, after the last. A sitting cut short (Ctrl-C) goes on in the next
queue, on that stretch's machine: another sitting, whose ratios with the first the report does
not take; remove ``results/pong/rates/`` to measure them all again.

Results to expect
-----------------
``results/pong/confirmed/<name>.csv.gz`` per run, ``results/pong/REPORT.md`` over all of them
(the earlier runs of record, stopped at the first crossing of 18: ``results/pong/first-crossing/``);
the rate runs' tables in ``results/pong/rates/``; the one-core check runs (``docs/scaling.md``)
go to ``results/scaling/`` and are read by ``python -m analysis scaling-check``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sweeps import benchmark
from sweeps.harness.cli import positive_float
from sweeps.harness.errors import OneLineErrorParser
from sweeps.harness.record import RunRecord
from sweeps.harness.subprocs import popen_stoppable
from sweeps.workloads.pong import PONG

RESULTS = Path("results/pong/confirmed")
RATES = Path("results/pong/rates")  # beside RESULTS: the rate runs' tables
REPORT = Path("results/pong")
CHECKS = Path("results/scaling")
STORAGE = Path("runs/benchmark")
# A run's wall-clock per second of its training budget (periodic greedy games and the trial's
# start-up, off the training clock; the committed runs: 1.01-1.06), and what every run adds.
WALL_PER_TRAIN_S = 1.1
FIXED_S = 900.0
# --fill: the least time worth starting a run that does not fit (Ray's start, the first
# checkpoint), and what a run stopped at the end may take to save and shut Ray down.
MIN_FILL_S = 1200.0
# A rate run's start-up (13 runners on 2 cores: ~2 minutes) and collection: no final games.
RATE_FIXED_S = 240.0
STOP_GRACE_S = 300.0


@dataclass(frozen=True)
class RecordRun:
    """One seed of one configuration, as ``python -m sweeps.benchmark`` runs it."""

    algo: str
    seed: int
    runners: int | None  # None: a single-process baseline
    budget_s: int  # --stop-train-time-s
    issues: str  # the issues it serves, "58 59"
    cpus: int = 2  # --num-cpus: Ray's CPUs, more than the cores on purpose beyond one runner
    one_core: bool = False  # the scaling check: the whole run pinned to one core
    stop_timesteps: int | None = None
    named: str | None = None  # the table's name where an earlier run chose it
    # A rate run (docs/scaling.md): a short run of the configuration whose env steps/s on a core
    # per process give the report's time on one machine; all of them in one sitting.
    rate: bool = False

    @property
    def name(self) -> str:
        if self.named:
            return self.named
        if self.one_core:
            return f"pong-check-1core-{self.algo}-s{self.seed}"
        runners = "" if self.runners is None else f"-r{self.runners}"
        if self.rate:
            return f"pong-rate-{self.algo}{runners}"
        return f"pong-conf-{self.algo}{runners}-s{self.seed}"

    @property
    def fixed_s(self) -> float:
        """What the run adds to its training budget at most: start-up, final games, report."""
        return RATE_FIXED_S if self.rate else FIXED_S

    def table(self, results: Path, checks: Path) -> Path:
        if self.rate:
            return results.parent / RATES.name / f"{self.name}.csv.gz"
        return (checks if self.one_core else results) / f"{self.name}.csv.gz"

    def benchmark_argv(self, storage: Path) -> list[str]:
        argv = ["--env", "pong", "--algos", self.algo, "--benchmark-seeds", "1"]
        argv += ["--seed", str(self.seed), "--num-cpus", str(self.cpus)]
        if self.runners is not None:
            argv += ["--num-env-runners", str(self.runners)]
        argv += ["--stop-train-time-s", str(self.budget_s)]
        if self.stop_timesteps is not None:
            argv += ["--stop-timesteps", str(self.stop_timesteps)]
        if self.one_core or self.rate:
            argv += ["--final-episodes", "0"]
        return [*argv, "--storage-path", str(storage), "--name", self.name]

    def command(self, storage: Path) -> list[str]:
        pin = ["taskset", "-c", "0"] if self.one_core else []
        return [*pin, sys.executable, "-m", "sweeps.benchmark", *self.benchmark_argv(storage)]


def _seeds(algo: str, runners: int | None, budget_s: int, issues: str, **kw) -> list[RecordRun]:
    return [RecordRun(algo, seed, runners, budget_s, issues, **kw) for seed in range(3)]


PLAN: tuple[RecordRun, ...] = (
    # The four at one runner, to a confirmed 18: the confirmed-target issue and the scaling
    # table's first column. Seeds run at 3,600 s first and missed are run again at 5,400 s.
    RecordRun("apex", 0, 1, 3600, "58 59", named="pong-conf-apex-s0"),
    RecordRun("apex", 1, 1, 5400, "58 59"),
    RecordRun("apex", 2, 1, 5400, "58 59"),
    RecordRun("appo", 0, 1, 3600, "58 59", named="pong-conf-appo-s0"),
    RecordRun("appo", 1, 1, 5400, "58 59"),
    RecordRun("appo", 2, 1, 3600, "58 59", named="pong-conf-appo-s2"),
    *_seeds("impala", 1, 5400, "58 59"),
    # The library a user would pick instead: one seed, budgeted as the four.
    RecordRun("sb3-ppo", 0, None, 5400, "60"),
    # Synchronous DQN is the slowest of the four (68 min to a training return of 18 on the
    # fastest box so far): a longer budget.
    *_seeds("dqn", 1, 7200, "58 59"),
    # The baseline again, budgeted as DQN (seed 0, at the four's 5,400 s, ended short of 18 and
    # still rising): a second seed, so that "is Ray worth it" rests on more than one.
    RecordRun("sb3-ppo", 1, None, 7200, "60"),
    # Four runners on two cores (Ray told 5 CPUs): env steps to 18 measured, time predicted.
    *_seeds("apex", 4, 5400, "58", cpus=5),
    RecordRun("appo", 0, 4, 5400, "58", cpus=5),
    # The rate runs: every configuration of the scaling table for a few minutes, one after
    # another on one machine (docs/scaling.md, "Seconds on one machine"): the runs of record ran
    # on the machine each stretch had, and their seconds compare across runs only roughly.
    # Each is measured over the second half of its training clock: Ape-X learns only after
    # 50,000 env steps, which take longer at 4 and 10 runners on 2 cores.
    *[
        RecordRun(
            algo, 0, runners, 300 if algo == "apex" else 240, "58", cpus=runners + 1, rate=True
        )
        for runners in (1, 4)
        for algo in ("apex", "appo", "impala", "dqn")
    ],
    RecordRun("apex", 0, 10, 600, "58", cpus=11, rate=True),
    RecordRun("impala", 0, 13, 300, "58", cpus=14, rate=True),
    *[RecordRun("appo", s, 4, 5400, "58", cpus=5) for s in (1, 2)],
    # The check that the time predicted on a core per process holds (docs/scaling.md): one runner
    # on one core predicts it on two (the 2-core runs are the one-runner runs above, seed for
    # seed). Before the other four-runner runs, whose predicted times rest on it.
    *[RecordRun(a, s, 1, 7200, "58", one_core=True) for a in ("appo", "apex") for s in (0, 1)],
    *_seeds("impala", 4, 5400, "58", cpus=5),
    *_seeds("dqn", 4, 7200, "58", cpus=5),
    # The source articles at their own scale: Ape-X with 10 actors, IMPALA with 13 workers.
    *_seeds("apex", 10, 7200, "58", cpus=11, stop_timesteps=5_000_000),
    *_seeds("impala", 13, 14400, "58", cpus=14, stop_timesteps=5_000_000),
)


# What the command line of a sweep, a benchmark or one of their tools holds.
RUN_MARKS = ("sweeps.benchmark", "python sweeps/", "-m sweeps.")


@dataclass(frozen=True)
class Places:
    """Where the tables, the check tables, the benchmark folders and the report go."""

    results: Path = RESULTS
    checks: Path = CHECKS
    storage: Path = STORAGE
    report: Path | None = None  # None: beside the tables

    @property
    def report_folder(self) -> Path:
        return self.results if self.report is None else self.report


# --- Where each run stands ---------------------------------------------------------------------


def ran_s(folder: Path) -> float:
    """Training seconds a run folder's trial has behind it (0 when it reported none)."""
    from analysis.collect import collect

    try:
        runs = collect([folder]).runs
    except Exception:  # noqa: BLE001 - an unreadable folder has nothing to count
        return 0.0
    return float(runs["train_time_s"].max()) if not runs.empty else 0.0


def experiment_folder(run: RecordRun, storage: Path) -> Path | None:
    """The run's one experiment folder under its benchmark folder (None before it started)."""
    found = sorted((storage / run.name).glob(f"{run.name}-*"))
    return found[0] if found else None


def status(run: RecordRun, at: Places) -> str:
    """'collected' (its table exists), 'ended' (ran; its rows not collected), 'interrupted'
    (a killed run: it is resumed), or 'to do'."""
    if run.table(at.results, at.checks).exists():
        return "collected"
    folder = experiment_folder(run, at.storage)
    if folder is None:
        return "to do"
    record = RunRecord.of_folder(folder)
    if record is None:
        return "to do"
    return "ended" if record.status in benchmark.REUSABLE else "interrupted"


def worst_case_s(run: RecordRun, state: str, storage: Path) -> float:
    """The longest the run can take from here: its budget left, plus start-up and reports."""
    if state in ("collected", "ended"):
        return run.fixed_s / 3
    left = run.budget_s
    if state == "interrupted":
        left = max(run.budget_s - ran_s(experiment_folder(run, storage)), 0.0)
    return left * WALL_PER_TRAIN_S + run.fixed_s


# --- Running one ---------------------------------------------------------------------------------


def resume_command(run: RecordRun, storage: Path) -> list[str]:
    """The sweep command that goes on from a killed run's last checkpoint with its recorded
    settings (as the benchmark says when asked to reuse it), pinned as the run was."""
    pin = ["taskset", "-c", "0"] if run.one_core else []
    folder = str(experiment_folder(run, storage))
    return [*pin, sys.executable, "-m", PONG.sweep_module(run.algo), "--resume", folder]


def report_command(results: Path, out: Path | None = None) -> list[str]:
    """The report over every collected table in ``results``, written to ``out`` (default: there),
    with the rate runs collected beside them (``--rates``)."""
    tables = sorted(str(p) for p in results.glob("pong-conf-*.csv.gz"))
    rates = sorted(str(p) for p in (results.parent / RATES.name).glob("pong-rate-*.csv.gz"))
    out = results if out is None else out
    rated = ["--rates", *rates] if rates else []
    return [sys.executable, "-m", "analysis", "report", *tables, *rated, "--out", str(out)]


def report_paths(out: Path) -> list[str]:
    """Git pathspecs of what the report writes in ``out`` (its charts, added or removed, not the
    folders beside it)."""
    return [str(out / "REPORT.md"), str(out / "runs.csv.gz"), f":(glob){out}/*.png"]


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


def execute(run: RecordRun, state: str, at: Places, commit: bool, end: float | None = None) -> int:
    """Run (or resume) ``run`` (stopped at ``end``: StoppedAtEnd), collect its rows, regenerate
    its report, commit if asked."""
    results, checks, storage = at.results, at.checks, at.storage
    if state == "interrupted":
        rc = _call(resume_command(run, storage), f"{run.name}: resuming", end)
    elif state == "to do":
        rc = _call(run.command(storage), f"{run.name}: running", end)  # final games included
    else:
        rc = 0
    # A resumed run, or one whose benchmark was stopped during its final games (it ended
    # training, so its record says so): the games its trial has not played yet.
    folder = experiment_folder(run, storage)
    missing = state != "to do" and not run.one_core and benchmark.final_games_missing(folder)
    if rc == 0 and missing:
        games = benchmark.final_games_command(folder, PONG.benchmark_final_episodes)
        rc = _call(games, f"{run.name}: final games")
    if rc != 0:
        return rc
    table = run.table(results, checks)
    table.parent.mkdir(parents=True, exist_ok=True)
    collect = [sys.executable, "-m", "analysis", "collect", str(storage / run.name)]
    rc = _call([*collect, "--out", str(table)], f"{run.name}: collecting")
    paths = [table]
    # a rate run's sitting regenerates the report once, after its last run
    sitting_left = run.rate and any(
        r.rate and r != run and status(r, at) != "collected" for r in PLAN
    )
    if rc == 0 and not run.one_core and not sitting_left:
        rc = _call(report_command(results, at.report_folder), f"{run.name}: the report")
        paths += [results, *report_paths(at.report_folder)]
    if rc == 0 and commit:
        message = (
            f"Pong run of record {run.name} (issues {run.issues}), collected: {shown(run, storage)}"
        )
        subprocess.call(["git", "add", "--", *map(str, paths)])
        rc = _call(["git", "commit", "-q", "-m", message, "--", *map(str, paths)], "committing")
    return rc


# --- The command ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser.of_command("python -m benchmarks.pong_records", __doc__)
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
        "end of the hours (the next queue resumes it)",
    )
    p.add_argument("--dry-run", action="store_true", help="with --hours: say what would run")
    p.add_argument("--commit", action="store_true", help="commit each run's table and report")
    p.add_argument("--results", type=Path, default=RESULTS, help="default: %(default)s")
    p.add_argument("--checks", type=Path, default=CHECKS, help="default: %(default)s")
    p.add_argument("--storage-path", type=Path, default=STORAGE, help="default: %(default)s")
    p.add_argument(
        "--report", type=Path, default=REPORT, help="the report's folder; default: %(default)s"
    )
    return p


def shown(run: RecordRun, storage: Path) -> str:
    """The run's command as a person types it."""
    cmd = run.command(storage)
    return shlex.join([c if c != sys.executable else "python" for c in cmd])


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


def sitting_s(at: Places) -> float:
    """The longest the rate runs not yet collected can take, one after another."""
    left = [(r, status(r, at)) for r in PLAN if r.rate]
    return sum(worst_case_s(r, st, at.storage) for r, st in left if st != "collected")


def listing(at: Places) -> str:
    lines, done = [], 0
    for run in PLAN:
        state = status(run, at)
        done += state == "collected"
        hours = worst_case_s(run, state, at.storage) / 3600
        need = "" if state == "collected" else f"at most {hours:4.1f} h"
        command = shown(run, at.storage)
        lines.append(f"{run.name:34} {state:11} issues {run.issues:6} {need:13}  {command}")
    return "\n".join([*lines, f"[records] {done} of {len(PLAN)} runs collected"])


def main(argv: Sequence[str] | None = None) -> int:
    # Ctrl-C (SIGINT) stops the queue and its run however the queue was started (an ignored
    # SIGINT is inherited: sweeps.harness.subprocs); as it was, after.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _queue(argv)
    finally:
        signal.signal(signal.SIGINT, previous)


def _queue(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    at = Places(args.results, args.checks, args.storage_path, args.report)
    if args.hours is None:
        print(listing(at), flush=True)
        return 0
    busy = running_elsewhere()
    if busy and not args.dry_run:
        parser.error(f"another run is going ({busy[0]}): runs of record run alone")
    deadline = time.monotonic() + args.hours * 3600
    print("[records] runs of record time the whole machine: run nothing beside them", flush=True)
    sitting: bool | None = None  # whether the rate runs left fit (decided at the first)
    for run in PLAN:
        state = status(run, at)
        if state == "collected":
            continue
        need = worst_case_s(run, state, at.storage)
        left = deadline - time.monotonic()
        fills = args.fill and need > left >= MIN_FILL_S and not run.rate
        if run.rate and sitting is None:  # a sitting runs whole, on one machine, or waits
            sitting = sitting_s(at) <= left
            if not sitting:
                print(
                    f"[records] the rate runs left: skipped, at most {sitting_s(at) / 3600:.1f} h "
                    f"one after another (one sitting) and {max(left, 0.0) / 3600:.1f} h left",
                    flush=True,
                )
        if run.rate and not sitting:
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
        print(f"[records] {run.name} ({state}): {what}", flush=True)
        try:
            rc = execute(run, state, at, args.commit, end=deadline - FIXED_S / 3)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

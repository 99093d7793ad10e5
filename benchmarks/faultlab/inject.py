"""Faults: the driver interrupted and resumed until the sweep finishes, or one process of a
one-trial sweep killed (an env runner, an Ape-X replay shard) while it trains."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from benchmarks.faultlab.checks import json_lines, read_lines
from benchmarks.faultlab.common import KILL_BEFORE_SHARE, SIGNALS
from benchmarks.faultlab.procs import SweepProcesses, send_fault, start_sweep
from sweeps.harness.record import RECORD_FILE, RunRecord


def _status(folder: Path) -> str | None:
    """The run record's status ("running", "interrupted", "finished", "failed"), if readable."""
    try:
        return RunRecord.read(folder / RECORD_FILE).status
    except (OSError, ValueError):
        return None


def _has_tune_state(folder: Path) -> bool:
    return (folder / "tuner.pkl").is_file() and any(folder.glob("experiment_state-*.json"))


def reported_since(folder: Path, since: float) -> bool:
    """Whether a trial of the sweep in ``folder`` reported a result after ``since`` (Unix time):
    the sweep is training, not starting up."""
    for path in folder.glob("*/result.json"):
        lines = read_lines(path)
        try:
            if lines and json.loads(lines[-1]).get("timestamp", 0) >= int(since):
                return True
        except ValueError:
            continue
    return False


def drive_with_interruptions(
    sweep: str,
    first_argv: list[str],
    folder: Path,
    *,
    rng: random.Random,
    faults: int,
    delay_s: tuple[float, float],
    log_dir: Path,
    startup_share: float = 0.2,
    stop_wait_s: float = 120.0,
    segment_timeout_s: float = 1800.0,
    study_file: Path | None = None,
) -> dict[str, Any]:
    """Run ``sweep``; ``faults`` times send a random signal of ``SIGNALS``, clean up what is
    left and continue with ``--resume <folder>``; then let it finish.

    When a fault lands is drawn from ``rng``: with probability ``startup_share`` during start-up
    (``delay_s`` after the segment starts, Ray and the trials coming up), otherwise during
    training (``delay_s`` after the segment's first new result row, so that faults land
    mid-trial however fast the machine is, and every segment makes some progress). A fault that
    lands before Tune saved any state leaves nothing to resume: the folder (and the study file)
    is removed and the sweep started again, and the segment says so."""
    segments: list[dict[str, Any]] = []
    argv, injected, t0 = list(first_argv), 0, time.monotonic()
    while len(segments) < 4 * faults + 4:
        log = log_dir / f"segment-{len(segments) + 1}.log"
        due = _draw_fault(rng, delay_s, startup_share) if injected < faults else None
        segment = _segment(sweep, argv, folder, log, due, stop_wait_s, segment_timeout_s)
        segments.append(segment)
        if segment["fault"] is not None:
            injected += 1
        if segment["rc"] == 0 or _status(folder) == "finished":
            # Finished: a fault that came at the very end (the results and the run record
            # written, Ray shutting down) interrupted nothing.
            if segment["fault"] is not None:
                segment["fault_without_effect"] = True
                injected -= 1
            break
        if segment["fault"] is None and not segment["hung"]:  # the sweep failed by itself
            break
        argv = _next_argv(first_argv, folder, segment, study_file)
    return {
        "segments": segments,
        "faults": [s["fault"] for s in segments if s["fault"] and "fault_without_effect" not in s],
        "wall_s": round(time.monotonic() - t0, 2),
        "rc": 0 if _status(folder) == "finished" else segments[-1]["rc"],
    }


def _draw_fault(
    rng: random.Random, delay_s: tuple[float, float], startup_share: float
) -> tuple[str, float, str]:
    """A fault's phase ("start-up" or "training"), its delay and its signal."""
    in_startup = rng.random() < startup_share
    delay, fault = rng.uniform(*delay_s), rng.choice(SIGNALS)
    return ("start-up" if in_startup else "training"), delay, fault


def _segment(
    sweep: str,
    argv: list[str],
    folder: Path,
    log: Path,
    due: tuple[str, float, str] | None,
    stop_wait_s: float,
    segment_timeout_s: float,
) -> dict[str, Any]:
    """Start (or resume) the sweep once. With a fault ``due`` (``_draw_fault``), send it once
    it is due and wait for the sweep to stop; else wait for the sweep to end. A sweep that does
    not stop in time is killed and counted as hung; what is left of it is reaped."""
    started = time.monotonic()
    since = time.time()
    proc = start_sweep(sweep, argv, log)
    processes = SweepProcesses(proc.pid)
    fault = delay = phase = None
    if due is not None:
        phase, delay, fault = due
        rc = _watch_until_due(proc, processes, folder, since, phase, delay, segment_timeout_s)
        if rc is None:
            send_fault(proc, fault)
            delay = time.monotonic() - started  # when it landed, from the segment's start
            rc, hung = _wait_or_kill(proc, processes, stop_wait_s)
        else:
            fault = delay = phase = None  # the sweep ended before the fault was due
            hung = False
    else:
        rc, hung = _wait_or_kill(proc, processes, segment_timeout_s)
    left = processes.reap()
    return {
        "argv": argv,
        "rc": rc,
        "wall_s": round(time.monotonic() - started, 2),
        "fault": fault,
        "fault_at_s": None if delay is None else round(delay, 2),
        "fault_phase": phase,
        "hung": hung,
        "processes_left": left,
        "record_status": _status(folder),  # the run record's status once the segment ended
        "log": str(log),
    }


def _watch_until_due(
    proc: Any,
    processes: SweepProcesses,
    folder: Path,
    since: float,
    phase: str,
    delay: float,
    segment_timeout_s: float,
) -> int | None:
    """Wait until a fault is due: ``delay`` after the start (start-up) or after this segment's
    first result row (training). None when it is due; the exit code if the sweep ended first."""
    rc = None
    if phase == "training":  # wait for this segment's first result row
        progressed = functools.partial(reported_since, folder, since)
        rc = processes.watch(proc, segment_timeout_s, until=progressed)
    if rc is None:
        rc = processes.watch(proc, delay)
    return rc


def _wait_or_kill(proc: Any, processes: SweepProcesses, timeout_s: float) -> tuple[int, bool]:
    """The sweep's exit code within ``timeout_s``, and whether it hung: a sweep that did not
    stop (a graceful stop that did not stop: counted) is killed, its whole process group."""
    rc = processes.watch(proc, timeout_s)
    if rc is not None:
        return rc, False
    os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait(), True


def _next_argv(
    first_argv: list[str], folder: Path, segment: dict[str, Any], study_file: Path | None
) -> list[str]:
    """``--resume <folder>``; when Tune saved nothing yet (--resume would refuse it), the
    first command again on a clean folder (and study file), the segment marked restarted."""
    if _has_tune_state(folder):
        return ["--resume", str(folder)]
    segment["restarted_from_scratch"] = True
    shutil.rmtree(folder, ignore_errors=True)
    if study_file is not None:
        study_file.unlink(missing_ok=True)
    return list(first_argv)


def run_with_kills(
    sweep: str,
    argv: list[str],
    *,
    rng: random.Random,
    title: str,
    kills: int,
    delay_s: tuple[float, float],
    log: Path,
    counted: Any = None,
    budget_share: Any = None,
    timeout_s: float = 1200.0,
) -> dict[str, Any]:
    """Run ``sweep``; ``kills`` times, once a process titled ``title`` that was not killed yet
    is alive (the first one, or its restarted successor) and the trial has counted the
    restarts so far (``counted()``, when given: a process killed again before the trial saw it
    back would be two kills for one restart), wait a random delay and SIGKILL it. Each kill
    notes how long the trial took to count its restart (``recovered_after_s``). With
    ``budget_share()`` (the share of its env-step budget the trial sampled): no delay starts
    before the trial has sampled (a process killed in its constructor is restarted by Ray
    before RLlib ever sees it, and no restart is counted: on a slow machine the constructor
    outlasted the delay), and no kill once the share reaches ``KILL_BEFORE_SHARE``: fewer
    kills than asked for, and the summary says how many."""
    t0 = time.monotonic()
    proc = start_sweep(sweep, argv, log)
    processes = SweepProcesses(proc.pid)
    killed: list[dict[str, Any]] = []
    due: float | None = None

    def recovered() -> bool:
        if counted is None or not killed or "recovered_after_s" in killed[-1]:
            return True
        if counted() < len(killed):
            return False
        killed[-1]["recovered_after_s"] = round(time.monotonic() - t0 - killed[-1]["at_s"], 2)
        return True

    while proc.poll() is None and time.monotonic() - t0 < timeout_s:
        if not recovered():
            time.sleep(0.5)
            continue
        if len(killed) >= kills or (budget_share and budget_share() >= KILL_BEFORE_SHARE):
            break
        done = {k["pid"] for k in killed}
        targets = [p for p, t in processes.list() if t.startswith(title) and p not in done]
        if not targets or (budget_share and budget_share() == 0):
            due = None
        elif due is None:
            due = time.monotonic() + rng.uniform(*delay_s)
        elif time.monotonic() >= due:
            pid = targets[0]
            try:
                os.kill(pid, signal.SIGKILL)
                at_s, at_unix = round(time.monotonic() - t0, 2), time.time()
                killed.append({"pid": pid, "at_s": at_s, "at_unix": at_unix})
            except ProcessLookupError:
                pass
            due = None
        time.sleep(0.2)
    rc = processes.watch(proc, max(timeout_s - (time.monotonic() - t0), 1.0))
    if rc is None:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    return {
        "rc": rc,
        "kills": killed,
        "wall_s": round(time.monotonic() - t0, 2),
        "processes_left": processes.reap(),
        "log": str(log),
    }


def latest_count(folder: Path, key: tuple[str, ...]) -> int:
    """The highest value of ``key`` any trial of the sweep in ``folder`` reported so far."""
    from sweeps.harness import keys

    best = 0
    for result in folder.glob("*/result.json"):
        for row in json_lines(result)[0]:
            best = max(best, int(keys.get(row, key, 0) or 0))
    return best

"""Fault injection: kill a sweep at random moments drawn from a seed, then check what survived.

Three kinds of fault, each on a real sweep run in a subprocess (its own process group and its own
local Ray instance; Ray's workers run in sessions of their own and are found by the raylet they
belong to, so that the harness kills the processes of that sweep and nothing else on the machine,
and cleans up what a SIGKILL left before it resumes):

* ``driver``: SIGKILL of the sweep's whole process group, SIGINT to the group (a terminal's
  Ctrl-C) or SIGTERM to the driver (``kill PID``), chosen at random at random times; each fault is
  followed by ``--resume <folder>`` (the path alone) until the sweep finishes. The overhead is the
  wall-clock of the faulty run against a fault-free run of the same sweep and seed.
* ``runners``: SIGKILL of the env-runner process (``ray::SingleAgentEnvRunner``) of a one-trial
  sweep, ``--kills`` times, for DQN, Ape-X, IMPALA and APPO; RLlib restarts the runner
  (``fault_tolerance/num_remote_worker_restarts`` counts it); the env steps to the cab env's greedy
  2,500 are compared with a fault-free run of the same seed.
* ``shard``: SIGKILL of an Ape-X replay-shard actor (``ray::ApexReplayShard``); the shard is a
  restartable actor that comes back empty (``apex/replay_shard_restarts`` counts it,
  ``apex/replay_shard_failures`` the requests lost with it), or, if it cannot come back, the trial
  is retried from its checkpoint (``failures.jsonl``). The harness reports which happened.

After each run ``check_sweep`` reads only the sweep folder and says: every trial finished exactly
once (one folder per trial, none orphaned, all TERMINATED in Tune's state); no (trial, iteration)
row duplicated or missing in result.json, progress.csv and the collected table
(``analysis.collect``); run.json and the Optuna study readable, no Optuna trial left RUNNING; the
best trial; restarts counted (RLlib's env-runner restarts, Tune's retries, resumes).

How to run
----------
    python benchmarks/faults.py driver --seeds 0-9 --faults 5        # the main job, reduced
    python benchmarks/faults.py driver --sweep dqn_cabs --seeds 0 --faults 3 \
        --sweep-args="--num-samples 3 --stop-timesteps 2000"        # a tiny sweep (the CI test's)
    python benchmarks/faults.py runners --algos dqn,apex,impala,appo --kills 3
    python benchmarks/faults.py shard --kills 3
    python benchmarks/faults.py driver --seeds 0-2 --faults 5 --name driver-same-work \
        --sweep-args="--search random --scheduler fifo --num-samples 6 --stop-timesteps 20000"
    python benchmarks/faults.py recheck runs/faults/<driver run>   # today's checks, old folders
    python benchmarks/faults.py report runs/faults --out results/RELIABILITY.md

Each command writes ``<--out-dir>/<name>/summary.json`` (default ``runs/faults/<kind>-<time>``);
``report`` turns every summary.json below its folders into ``results/RELIABILITY.md`` (generated,
never hand-edited), with the commands, machine, load, commit and versions. Exit code 0 when
every check passed, 1 when one failed, 2 on bad input.

Results to expect
-----------------
Every check passes: no trial lost or run twice, no row duplicated or missing, the study loadable
with no trial left RUNNING; env-runner restarts counted equal to the kills. The measured figures
(overhead of the interruptions, env steps to 2,500 with runner kills, what a shard kill costs):
``results/RELIABILITY.md``.

This file runs past ~500 lines on purpose (CleanRL-style, one readable file): the injection,
the checks and the report that prints them are read together.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import functools
import json
import math
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: import the suite from this checkout
    sys.path.insert(0, str(REPO))

from sweeps.harness.common import OneLineErrorParser  # noqa: E402

SIGNALS = ("SIGKILL", "SIGINT", "SIGTERM")
RUNNER_TITLE = "ray::SingleAgentEnvRunner"
SHARD_TITLE = "ray::ApexReplayShard"
TARGET = 2500.0  # the cab env's greedy target (envs.optimum.targets: its greedy policy's return)
MAIN_JOB_ARGS = "--num-samples 3 --stop-timesteps 10000"  # the main job at a reduced budget
# Env steps of a one-trial run with process kills: past the fault-free steps to a greedy 2,500
# (results/cabs/REPORT.md), with room for the kills (Ape-X at 30k ended before its third restart).
RUNNER_BUDGET = {"dqn": 40_000, "apex": 60_000, "impala": 400_000, "appo": 300_000}
# No process kill once the trial has sampled this share of its budget: RLlib brings a dead env
# runner back at the start of the next iteration, and a trial's last iteration has none.
KILL_BEFORE_SHARE = 0.8
SUMMARY = "summary.json"
# What counts a process kill in the results (summed over a trial's restores by check_sweep).
COUNTED = {"runners": "env_runner_restarts", "shard": "replay_shard_restarts"}
COUNTER_KEY = {
    "runners": ("fault_tolerance", "num_remote_worker_restarts"),  # RLlib's, per algorithm
    "shard": ("apex", "replay_shard_restarts"),
}
ENV_STEPS = ("suite", "env_steps")  # sweeps.harness.keys.ENV_STEPS: env steps sampled, lifetime


# ------------------------------------------------------------------------------------------------
# Processes: a sweep in its own process group, and what is left of it
# ------------------------------------------------------------------------------------------------


def start_sweep(sweep: str, argv: list[str], log: Path) -> subprocess.Popen:
    """``python sweeps/<sweep>.py ARGV`` in its own process group (a session), output to ``log``,
    on a new local Ray instance (``RAY_ADDRESS=local``: without it, ``ray.init()`` joins a
    cluster that another user started on this machine with ``ray start``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "RAY_ADDRESS": "local"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, f"sweeps/{sweep}.py", *argv],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # Ctrl-C as in a terminal: a harness started in the background (`cmd &` in a
            # script) has SIGINT ignored, and a child inherits that until it sets a handler.
            preexec_fn=_default_sigint,
        )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class SweepProcesses:
    """The processes of one sweep: its process group (the driver and the Ray instance it
    started: GCS, raylet, agents) and Ray's workers, which run in sessions of their own and are
    known by the ``RAY_RAYLET_PID`` in their environment. Raylets are remembered while alive, so
    that their workers are still found once a SIGKILL took the group down."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.raylets: set[int] = set()

    def list(self) -> list[tuple[int, str]]:
        """(pid, title) of the live processes of the sweep (Ray's workers show their actor as
        title, e.g. ``ray::SingleAgentEnvRunner.sample()``); zombies left out."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, ...
                if fields[0] == "Z":
                    continue
                title = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                title = title.decode(errors="replace").strip()
                if int(fields[2]) == self.pgid:
                    if "/raylet/raylet " in title:
                        self.raylets.add(int(entry))
                elif not title.startswith("ray::") or self._raylet_of(entry) not in self.raylets:
                    continue
            except (OSError, ValueError, IndexError):
                continue
            found.append((int(entry), title))
        return found

    @staticmethod
    def _raylet_of(pid: str) -> int | None:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        for item in environ:
            if item.startswith(b"RAY_RAYLET_PID="):
                return int(item.split(b"=", 1)[1])
        return None

    def reap(self, timeout_s: float = 30.0) -> int:
        """SIGKILL whatever is left of the sweep and wait until none is alive; returns how many
        processes were left."""
        left = self.list()
        deadline = time.monotonic() + timeout_s
        while (alive := self.list()) and time.monotonic() < deadline:
            for pid, _ in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        return len(left)

    def watch(self, proc: subprocess.Popen, timeout_s: float, until: Any = None) -> int | None:
        """Wait up to ``timeout_s`` for the driver to exit (its exit code) or ``until()`` to be
        true (None), noting the sweep's raylets meanwhile."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.list()
            if until is not None and until():
                return None
            rc = _wait(proc, min(0.5, max(deadline - time.monotonic(), 0.01)))
            if rc is not None:
                return rc
        return proc.poll()


def _wait(proc: subprocess.Popen, timeout_s: float) -> int | None:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def send_fault(proc: subprocess.Popen, name: str) -> None:
    """SIGKILL: the whole group; SIGINT: the whole group (what a terminal's Ctrl-C does);
    SIGTERM: the driver alone (``kill PID``)."""
    try:
        if name == "SIGTERM":
            os.kill(proc.pid, signal.SIGTERM)
        else:
            os.killpg(proc.pid, getattr(signal, name))
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------------------------------------
# Faults
# ------------------------------------------------------------------------------------------------


def _status(folder: Path) -> str | None:
    """The run record's status ("running", "interrupted", "finished", "failed"), if readable."""
    try:
        return json.loads((folder / "run.json").read_text()).get("status")
    except (OSError, ValueError):
        return None


def _has_tune_state(folder: Path) -> bool:
    return (folder / "tuner.pkl").is_file() and any(folder.glob("experiment_state-*.json"))


def reported_since(folder: Path, since: float) -> bool:
    """Whether a trial of the sweep in ``folder`` reported a result after ``since`` (Unix time):
    the sweep is training, not starting up."""
    for path in folder.glob("*/result.json"):
        lines = _lines(path)
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
        started = time.monotonic()
        since = time.time()
        proc = start_sweep(sweep, argv, log)
        processes = SweepProcesses(proc.pid)
        fault = delay = phase = None
        hung = False
        if injected < faults:
            in_startup = rng.random() < startup_share
            delay, fault = rng.uniform(*delay_s), rng.choice(SIGNALS)
            phase = "start-up" if in_startup else "training"
            rc = None
            if not in_startup:  # wait for this segment's first result row
                progressed = functools.partial(reported_since, folder, since)
                rc = processes.watch(proc, segment_timeout_s, until=progressed)
            if rc is None:
                rc = processes.watch(proc, delay)
            if rc is None:
                send_fault(proc, fault)
                injected += 1
                delay = time.monotonic() - started  # when it landed, from the segment's start
                rc = processes.watch(proc, stop_wait_s)
                if rc is None:  # a graceful stop that did not stop: counted, then killed
                    hung = True
                    os.killpg(proc.pid, signal.SIGKILL)
                    rc = proc.wait()
            else:
                fault = delay = phase = None  # the sweep ended before the fault was due
        else:
            rc = processes.watch(proc, segment_timeout_s)
            if rc is None:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
        left = processes.reap()
        segment = {
            "argv": argv,
            "rc": rc,
            "wall_s": round(time.monotonic() - started, 2),
            "fault": fault,
            "fault_at_s": None if delay is None else round(delay, 2),
            "fault_phase": phase,
            "hung": hung,
            "processes_left": left,
            "log": str(log),
        }
        segments.append(segment)
        if rc == 0 or _status(folder) == "finished":
            # Finished: a fault that came at the very end (the results and the run record
            # written, Ray shutting down) interrupted nothing.
            if fault is not None:
                segment["fault_without_effect"] = True
                injected -= 1
            break
        if fault is None and not hung:  # the sweep failed by itself
            break
        if _has_tune_state(folder):
            argv = ["--resume", str(folder)]
        else:  # killed before Tune saved anything: --resume would refuse it
            segment["restarted_from_scratch"] = True
            shutil.rmtree(folder, ignore_errors=True)
            if study_file is not None:
                study_file.unlink(missing_ok=True)
            argv = list(first_argv)
    return {
        "segments": segments,
        "faults": [s["fault"] for s in segments if s["fault"] and "fault_without_effect" not in s],
        "wall_s": round(time.monotonic() - t0, 2),
        "rc": 0 if _status(folder) == "finished" else segments[-1]["rc"],
    }


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
    notes how long the trial took to count its restart (``recovered_after_s``). No kill once
    ``budget_share()`` (the share of its env-step budget the trial sampled) reaches
    ``KILL_BEFORE_SHARE``: fewer kills than asked for, and the summary says how many."""
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
        if not targets:
            due = None
        elif due is None:
            due = time.monotonic() + rng.uniform(*delay_s)
        elif time.monotonic() >= due:
            pid = targets[0]
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append({"pid": pid, "at_s": round(time.monotonic() - t0, 2)})
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
        for row in _json_lines(result)[0]:
            best = max(best, int(keys.get(row, key, 0) or 0))
    return best


# ------------------------------------------------------------------------------------------------
# Checks: what a sweep folder says after the faults
# ------------------------------------------------------------------------------------------------


def _json_lines(path: Path) -> tuple[list[dict[str, Any]], int]:
    rows, corrupt = [], 0
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return rows, corrupt
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            corrupt += 1
            continue
        rows.append(row) if isinstance(row, dict) else None
    return rows, corrupt


def _iteration_faults(iterations: list[int]) -> tuple[int, int]:
    """(duplicated, missing) among a trial's reported training iterations (1..last expected)."""
    counts = Counter(iterations)
    duplicated = sum(n - 1 for n in counts.values())
    missing = len(set(range(1, max(iterations, default=0) + 1)) - set(counts))
    return duplicated, missing


def _clock_drops(rows: list[dict[str, Any]]) -> int:
    """Restores in a trial's result.json (rows in order) that restarted its training clock
    (``analysis.collect.repair_clock`` finds them; the suite checkpoints the clock: none
    expected)."""
    from analysis.collect import repair_clock

    return repair_clock(rows)[1]


def _csv_iterations(path: Path) -> tuple[list[int], int]:
    """The training_iteration column of progress.csv and the number of rows where it is not
    an integer (columns shifted against the header)."""
    iterations, bad = [], 0
    try:
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                try:
                    iterations.append(int(float(row.get("training_iteration") or "")))
                except ValueError:
                    bad += 1
    except OSError:
        pass
    return iterations, bad


def _tune_trials(folder: Path) -> dict[str, str]:
    """trial_id -> status in Tune's latest saved experiment state (the newest by name, as Tune
    picks it; one file per driver session)."""
    states = sorted(folder.glob("experiment_state-*.json"))
    if not states:
        return {}
    data = json.loads(states[-1].read_text())
    return {
        (t := json.loads(item[0]))["trial_id"]: t.get("status", "?")
        for item in data.get("trial_data", [])
    }


def _study(record: dict[str, Any]) -> dict[str, Any] | None:
    """The Optuna study of a sweep run with --optuna-storage: trials by state (None without)."""
    url = (record.get("args") or {}).get("optuna_storage")
    if not url:
        return None
    try:
        import optuna

        from sweeps.harness import storage

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.load_study(
            study_name=record["args"]["name"], storage=storage.optuna_storage(url)
        )
        states = Counter(t.state.name for t in study.trials)
        return {"loadable": True, "storage": url, "trials": dict(states)}
    except Exception as e:  # any failure to load is the finding
        return {"loadable": False, "storage": url, "error": f"{type(e).__name__}: {e}"}


def check_sweep(folder: Path) -> dict[str, Any]:
    """Read a finished sweep folder and check it survived; ``ok`` is True when every check
    passed, ``problems`` says what did not."""
    from analysis.collect import collect
    from sweeps.harness import keys

    problems: list[str] = []
    try:
        record = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError) as e:
        return {"ok": False, "problems": [f"run.json unreadable: {e}"]}
    args = record.get("args") or {}
    expected = args.get("benchmark_seeds") or args.get("num_samples")
    if record.get("status") != "finished":
        problems.append(f"run.json status {record.get('status')!r}, not 'finished'")
    try:
        tune_trials = _tune_trials(folder)
    except (OSError, ValueError, KeyError, IndexError) as e:
        tune_trials = {}
        problems.append(f"Tune's experiment state unreadable: {e}")
    not_done = sorted(t for t, s in tune_trials.items() if s != "TERMINATED")
    if not_done:
        problems.append(f"trials not TERMINATED: {not_done}")
    if expected and len(tune_trials) != expected:
        problems.append(f"{len(tune_trials)} trials in Tune's state, {expected} expected")

    trial_dirs = sorted(d for d in folder.iterdir() if d.is_dir() and (d / "params.json").exists())
    ids = [d.name.rpartition("_")[2] for d in trial_dirs]
    orphans = sorted(set(ids) - set(tune_trials))
    if orphans:
        problems.append(f"trial folders Tune does not know (run twice?): {orphans}")
    if len(ids) != len(set(ids)):
        problems.append("a trial has two folders")

    trials: dict[str, dict[str, Any]] = {}
    for d, trial_id in zip(trial_dirs, ids, strict=True):
        rows, corrupt = _json_lines(d / "result.json")
        iterations = [int(r["training_iteration"]) for r in rows if "training_iteration" in r]
        dup, miss = _iteration_faults(iterations)
        csv_iterations, shifted = _csv_iterations(d / "progress.csv")
        csv_dup, csv_miss = _iteration_faults(csv_iterations)
        restarts = [keys.get(r, COUNTER_KEY["runners"], 0) or 0 for r in rows]
        shard = [keys.get(r, COUNTER_KEY["shard"], 0) or 0 for r in rows]
        lost = [keys.get(r, ("apex", "replay_shard_failures"), 0) or 0 for r in rows]
        trials[trial_id] = {
            "iterations": max(iterations, default=0),
            "result_json": {"duplicated": dup, "missing": miss, "corrupt_lines": corrupt},
            "progress_csv": {"duplicated": csv_dup, "missing": csv_miss, "shifted": shifted},
            # RLlib's counter lives in the algorithm (not in its checkpoint): the sum of its
            # peaks over the restores is the trial's total.
            "env_runner_restarts": _sum_of_peaks(restarts),
            "replay_shard_restarts": _sum_of_peaks(shard),
            "replay_requests_lost": _sum_of_peaks(lost),
            "clock_drops": _clock_drops(rows),
        }
        if trials[trial_id]["clock_drops"]:
            problems.append(
                f"{trial_id}: suite/train_time_s went back {trials[trial_id]['clock_drops']} "
                "time(s) (a restore restarted the training clock)"
            )
        for name in ("result_json", "progress_csv"):
            bad = {k: v for k, v in trials[trial_id][name].items() if v}
            if bad:
                problems.append(f"{trial_id} {name}: {bad}")

    collection = collect([folder])
    table = collection.runs
    dup_rows = int(table.duplicated(["trial_id", "training_iteration"]).sum())
    if dup_rows:
        problems.append(f"collected table: {dup_rows} duplicated (trial, iteration) rows")
    table_missing = sum(
        _iteration_faults(list(g["training_iteration"].astype(int)))[1]
        for _, g in table.groupby("trial_id")
    )
    if table_missing:
        problems.append(f"collected table: {table_missing} missing (trial, iteration) rows")
    best = None
    if not table.empty and table["metric_value"].notna().any():
        row = table.loc[table["metric_value"].idxmax()]
        best = {"trial_id": row["trial_id"], "metric": record.get("metric"),
                "value": float(row["metric_value"])}  # fmt: skip
    else:
        problems.append("no best trial (no metric reported)")

    study = _study(record)
    if study is not None:
        if not study["loadable"]:
            problems.append(f"Optuna study not loadable: {study['error']}")
        elif study["trials"].get("RUNNING"):
            problems.append(f"Optuna trials left RUNNING: {study['trials']['RUNNING']}")
    failures = [json.loads(line) for line in _lines(folder / "failures.jsonl")]
    return {
        "ok": not problems,
        "problems": problems,
        "trials_expected": expected,
        "trials_in_tune_state": len(tune_trials),
        "trial_folders": len(trial_dirs),
        "raw_duplicated_rows": sum(t["result_json"]["duplicated"] for t in trials.values()),
        "collected_rows": len(table),
        "collected_duplicated_rows": dup_rows,
        # The work the sweep did: its trials' env steps sampled. A faulty and a fault-free sweep
        # of one seed are different sweeps (ASHA prunes, and Optuna suggests, by results whose
        # timing the faults change), so wall-clock is compared per env step too.
        "env_steps_sampled": (
            int(table.groupby("trial_id")["env_steps"].max().fillna(0).sum())
            if not table.empty
            else 0
        ),
        "best": best,
        "study": study,
        "tune_retries": len([f for f in failures if f.get("retried")]),
        "resumes": len(record.get("resumes") or []),
        "env_runner_restarts": sum(t["env_runner_restarts"] for t in trials.values()),
        "replay_shard_restarts": sum(t["replay_shard_restarts"] for t in trials.values()),
        "replay_requests_lost": sum(t["replay_requests_lost"] for t in trials.values()),
        "clock_drops": sum(t["clock_drops"] for t in trials.values()),
        "trials": trials,
        "skipped_by_collect": collection.skipped,
    }


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


def _sum_of_peaks(counts: list[float]) -> int:
    """Total of a per-process counter that restarts from 0 when the trial is restored."""
    total, peak = 0, 0
    for c in counts:
        if c < peak:
            total, peak = total + peak, 0
        peak = max(peak, int(c))
    return total + peak


def steps_to_target(folder: Path, target: float = TARGET) -> float:
    """Env steps sampled when the greedy return first reached ``target`` (NaN: never)."""
    from analysis.collect import collect

    table = collect([folder]).runs
    reached = table[table["greedy_return"] >= target]
    return float(reached["env_steps"].min()) if not reached.empty else math.nan


# ------------------------------------------------------------------------------------------------
# The three experiments
# ------------------------------------------------------------------------------------------------


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _window(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition(",")
    window = float(lo), float(hi or lo)
    if not 0 <= window[0] <= window[1]:
        raise ValueError(text)
    return window


# A driver run's two sweeps per seed: the entry's key and the folder's suffix.
SWEEPS = {"baseline": "baseline", "faulty": "faults"}


def _sweep_name(seed: int, label: str) -> str:
    """The folder (under the run) of a seed's fault-free (``baseline``) or ``faulty`` sweep."""
    return f"seed{seed}-{SWEEPS[label]}"


def driver_experiment(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    runs = []
    for seed in args.seeds:
        rng = random.Random(seed)
        base = [*shlex.split(args.sweep_args), "--seed", str(seed), "--progress-interval-s", "600"]
        entry: dict[str, Any] = {"seed": seed}
        if args.baseline:
            name = _sweep_name(seed, "baseline")
            t0 = time.monotonic()
            proc = start_sweep(args.sweep, [*base, *_where(out, name)], out / f"{name}.log")
            processes = SweepProcesses(proc.pid)
            rc = processes.watch(proc, 3600.0)
            entry["baseline"] = {"rc": rc, "wall_s": round(time.monotonic() - t0, 2)}
            processes.reap()
            entry["baseline"]["check"] = check_sweep(out / name)
        name = _sweep_name(seed, "faulty")
        entry["faulty"] = drive_with_interruptions(
            args.sweep,
            [*base, *_where(out, name)],
            out / name,
            rng=rng,
            faults=args.faults,
            delay_s=args.delay_s,
            startup_share=args.startup_share,
            log_dir=out / f"{name}-logs",
            study_file=out / f"{name}.journal",
        )
        entry["faulty"]["check"] = check_sweep(out / name)
        _overheads(entry)
        runs.append(entry)
        print(_driver_line(entry), flush=True)
    return runs


def _overheads(entry: dict[str, Any]) -> None:
    """The faulty sweep's wall-clock against the fault-free one of its seed: as a ratio, in
    seconds per interruption and, where both sweeps' env steps are known, per env step."""
    if "baseline" not in entry:
        return
    faulty, base = entry["faulty"]["wall_s"], entry["baseline"]["wall_s"]
    entry["overhead"] = round(faulty / base, 3)
    # Budget-free: the seconds one interruption costs (start-up again, the work since
    # the last checkpoint); a sweep of T seconds with n of them takes ~1 + n*s/T as long.
    n = len(entry["faulty"]["faults"])
    entry["s_per_fault"] = round((faulty - base) / n, 1) if n else None
    # An ASHA + Optuna sweep under faults prunes and suggests differently (it sees results at
    # other moments), so its work differs from the fault-free sweep's: compare per env step.
    steps = [entry[k]["check"].get("env_steps_sampled") for k in ("faulty", "baseline")]
    if all(steps):
        entry["overhead_per_env_step"] = round(faulty / steps[0] / (base / steps[1]), 3)


def recheck_readable(run: Path) -> dict[str, Any]:
    """A driver run's summary and, per seed and sweep, the folder it was run in; a ValueError
    names what is missing."""
    try:
        summary = json.loads((run / SUMMARY).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{run / SUMMARY} unreadable: {e}") from e
    if summary.get("kind") != "driver":
        raise ValueError(f"{run / SUMMARY} is a {summary.get('kind')!r} run, not a driver run")
    for entry in summary["runs"]:
        for label in SWEEPS:
            folder = run / _sweep_name(entry["seed"], label)
            if label in entry and not folder.is_dir():
                raise ValueError(f"{folder} is gone: the run cannot be re-read")
    return summary


def recheck(run: Path) -> dict[str, Any]:
    """Re-read the sweep folders of a finished driver run with today's ``check_sweep`` (a run
    made before a check or a figure was added gets it from its own folders; nothing is re-run)
    and rewrite its summary.json, which then says when and at which commit."""
    from sweeps.harness.common import atomic_write_text
    from sweeps.harness.record import git_commit

    summary = recheck_readable(run)
    for entry in summary["runs"]:
        for label in SWEEPS:
            if label in entry:
                entry[label]["check"] = check_sweep(run / _sweep_name(entry["seed"], label))
        _overheads(entry)
    summary["ok"] = all(r["faulty"]["check"]["ok"] for r in summary["runs"])
    summary["rechecked"] = {
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
    }
    atomic_write_text(run / SUMMARY, json.dumps(summary, indent=2, default=str))
    return summary


def _where(out: Path, name: str) -> list[str]:
    return [
        *("--storage-path", str(out), "--name", name),
        *("--optuna-storage", str(out / f"{name}.journal")),
    ]


def _driver_line(entry: dict[str, Any]) -> str:
    faulty = entry["faulty"]
    check = faulty["check"]
    over = f", overhead {entry['overhead']:.2f}x" if "overhead" in entry else ""
    return (
        f"[faults] seed {entry['seed']}: {len(faulty['faults'])} faults "
        f"({', '.join(faulty['faults'])}), rc {faulty['rc']}{over}; checks "
        + ("passed" if check["ok"] else "FAILED: " + "; ".join(check["problems"]))
    )


def process_experiment(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """``runners``: kill env runners, per algorithm; ``shard``: kill Ape-X replay shards."""
    title = RUNNER_TITLE if args.kind == "runners" else SHARD_TITLE
    algos = args.algos if args.kind == "runners" else ["apex"]
    runs = []
    for algo in algos:
        rng = random.Random(args.seed)
        budget = args.stop_timesteps or RUNNER_BUDGET[algo]
        base = [
            *("--num-samples", "1", "--num-env-runners", "1", "--seed", str(args.seed)),
            *("--stop-timesteps", str(budget), "--progress-interval-s", "600"),
            # 1-s iterations for every algorithm: the greedy evaluation, and so the env steps to
            # the target, is read once an iteration (IMPALA's own iterations on the cab env are
            # ~100k env steps, too coarse to compare a faulty run with a fault-free one).
            *("--iteration-s", str(args.iteration_s)),
        ]
        entry: dict[str, Any] = {"algo": algo, "seed": args.seed, "stop_timesteps": budget}
        for label in ("baseline", "faulty") if args.baseline else ("faulty",):
            name = f"{algo}-{label}"
            argv = [*base, "--storage-path", str(out), "--name", name]
            result = run_with_kills(
                f"{algo}_cabs",
                argv,
                rng=rng,
                title=title,
                kills=args.kills if label == "faulty" else 0,
                delay_s=args.delay_s,
                log=out / f"{name}.log",
                counted=functools.partial(latest_count, out / name, COUNTER_KEY[args.kind]),
                budget_share=lambda n=name, b=budget: latest_count(out / n, ENV_STEPS) / b,
            )
            result["check"] = check = check_sweep(out / name)
            result["steps_to_target"] = steps_to_target(out / name)
            counted = check.get(COUNTED[args.kind], 0)
            if label == "faulty" and counted != len(result["kills"]):
                check["ok"] = False
                check["problems"].append(f"{len(result['kills'])} kills, {counted} counted")
            entry[label] = result
        faulty = entry["faulty"]
        if "baseline" in entry:
            b, f = entry["baseline"]["steps_to_target"], faulty["steps_to_target"]
            entry["steps_ratio"] = round(f / b, 3) if b and not math.isnan(b) else math.nan
        print(_process_line(args.kind, entry), flush=True)
        runs.append(entry)
    return runs


def _process_line(kind: str, entry: dict[str, Any]) -> str:
    f = entry["faulty"]
    c = f["check"]
    counted = c.get("env_runner_restarts") if kind == "runners" else c.get("replay_shard_restarts")
    return (
        f"[faults] {entry['algo']}: {len(f['kills'])} kills, counted {counted}, "
        f"Tune retries {c.get('tune_retries')}, rc {f['rc']}, env steps to {TARGET:,.0f}: "
        f"{f['steps_to_target']:,.0f}"
        + (f" ({entry['steps_ratio']}x fault-free)" if "steps_ratio" in entry else "")
        + "; checks "
        + ("passed" if c["ok"] else "FAILED: " + "; ".join(c["problems"]))
    )


# ------------------------------------------------------------------------------------------------
# Summary and report
# ------------------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    """Command, machine, load, commit and versions of a fault run."""
    from sweeps.harness.common import cpu_model
    from sweeps.harness.record import git_commit, git_dirty, load_average, versions

    return {
        "command": shlex.join(["python", "benchmarks/faults.py", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "load_at_start": load_average(),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
        "versions": versions(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def report(summaries: list[dict[str, Any]]) -> str:
    """RELIABILITY.md from the summaries of fault runs (each a ``summary.json``)."""
    lines = [
        "# Reliability: faults injected at random, and what survived",
        "",
        "Generated by `python benchmarks/faults.py report` from the runs below; never hand-edited.",
        "Each run states its command, machine, load, commit and versions. Rows of a trial that a",
        "restore re-reports are trimmed on write (`sweeps/harness/recovery.py`) and, for folders",
        "written before that, dropped on read by `analysis.collect` (the last report of each",
        "(trial, iteration) is kept); the checks count both.",
        "",
    ]
    lines += _goals(summaries)
    for s in sorted(summaries, key=lambda s: (s["kind"], s["environment"]["started_at"])):
        lines += _report_run(s)
    return "\n".join(lines).rstrip() + "\n"


def _goals(summaries: list[dict[str, Any]]) -> list[str]:
    """The report's first section: every kind of fault against the issue's goals, over all
    the runs below."""
    lines = ["## Summary against the goals", ""]
    drivers = [s for s in summaries if s["kind"] == "driver"]
    if drivers:
        every = [r for s in drivers for r in s["runs"]]
        totals = _driver_totals(every, overhead=False)
        lines += [f"**Driver interruptions** (every driver run below): {totals}"]
        lines += [
            "",
            "**Wall-clock of a faulty sweep against a fault-free one of the same seed** (goal "
            "<= 1.5x), by sweep. Random search with FIFO runs the same trials to the same "
            "budget with or without faults, so its ratio compares like with like; an Optuna + "
            "ASHA sweep under faults sees its results at other moments, then suggests and prunes "
            "differently, and does different work: compare it per env step sampled.",
            "",
        ]
        by_sweep: dict[str, list[dict[str, Any]]] = {}
        for s in sorted(drivers, key=lambda s: s["environment"]["started_at"]):
            by_sweep.setdefault(_sweep_command(s), []).append(s)
        for command, group in by_sweep.items():
            runs = [r for s in group for r in s["runs"] if "overhead" in r]
            if not runs:
                continue
            walls = [r["overhead"] for r in runs]
            per_fault = [r["s_per_fault"] for r in runs if r.get("s_per_fault") is not None]
            steps = [r["overhead_per_env_step"] for r in runs if "overhead_per_env_step" in r]
            lines.append(
                f"- `{command}` ({', '.join(s['name'] for s in group)}), {len(runs)} seed(s): "
                f"wall-clock {', '.join(f'{x:.2f}x' for x in walls)}, median "
                f"{_median(walls):.2f}x"
                + (
                    f"; per env step {', '.join(f'{x:.2f}x' for x in steps)}, median "
                    f"{_median(steps):.2f}x"
                    if steps
                    else ""
                )
                + (
                    f"; one interruption costs a median {_median(per_fault):.0f} s"
                    if per_fault
                    else ""
                )
            )
        lines.append("")
    # The latest run of each (algorithm, seed): a later run repeats an earlier one after a fix.
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for s in sorted(summaries, key=lambda s: s["environment"]["started_at"]):
        if s["kind"] == "runners":
            latest |= {(r["algo"], r["seed"]): r for r in s["runs"]}
    if latest:
        lines += [
            "**Env-runner kills**: env steps to the target, faulty / fault-free, per algorithm "
            "(the latest run of each algorithm and seed; an earlier one was made before a fix):",
            "",
        ]
        lines += [_ratio_line(algo, list(latest.values())) for algo in RUNNER_BUDGET] + [""]
    shards = sorted(
        (s for s in summaries if s["kind"] == "shard"), key=lambda s: s["environment"]["started_at"]
    )
    if shards:  # the latest run: an earlier one was made before a fix, as for the runners
        lines += [
            f"**Ape-X replay-shard kills** ({shards[-1]['name']}, the latest shard run): "
            f"{_shard_outcome(shards[-1]['runs'])}",
            "",
        ]
    return lines if len(lines) > 2 else []


def _sweep_command(summary: dict[str, Any]) -> str:
    """The sweep a driver run interrupted, as a command (from the run's own command line)."""
    argv = shlex.split(summary["environment"]["command"])[2:]
    args = build_parser().parse_args(argv)
    return f"python sweeps/{args.sweep}.py {args.sweep_args}".strip() + (
        "" if args.sweep_args.strip() else " (the main job's defaults)"
    )


def _ratio_line(algo: str, runs: list[dict[str, Any]]) -> str:
    """The env-step ratios of an algorithm's runs whose checks passed (a failed run's trial
    was retried or lost a restart: its ratio measures something else), their median and their
    geometric mean (a ratio's average: 0.5x and 2x average to 1x; a single seed's ratio swings
    with run-to-run noise, which the fault-free run of the same seed does not remove)."""
    ratios = [
        r["steps_ratio"]
        for r in runs
        if r["algo"] == algo
        and r["faulty"]["check"]["ok"]
        and isinstance(r.get("steps_ratio"), float)
        and not math.isnan(r["steps_ratio"])
    ]
    failed = sum(1 for r in runs if r["algo"] == algo and not r["faulty"]["check"]["ok"])
    if not ratios:
        return f"- {algo}: no run with passed checks and a fault-free reference"
    return (
        f"- {algo}: {', '.join(f'{x:.2f}x' for x in ratios)} over {len(ratios)} run(s) whose "
        f"checks passed, median {_median(ratios):.2f}x, geometric mean "
        f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x (goal <= 1.2x)"
        + (f"; {failed} run(s) with failed checks left out" if failed else "")
    )


def _report_run(s: dict[str, Any]) -> list[str]:
    env = s["environment"]
    v = env["versions"]
    head = [
        f"## {s['kind']}: {s['name']}",
        "",
        f"- command: `{env['command']}`",
        f"- machine: {env['cpus']} CPUs ({env['cpu_model']}), load {env['load_at_start']} at "
        f"start, {s.get('load_at_end')} at end; {env['started_at']} to {s.get('ended_at')}",
        f"- commit {env['git_commit']}{' (modified tree)' if env['git_dirty'] else ''}; "
        f"ray {v.get('ray')}, torch {v.get('torch')}, optuna {v.get('optuna')}, "
        f"python {v.get('python')}",
        *(
            [
                f"- re-checked from its sweep folders (`faults.py recheck`) at commit "
                f"{s['rechecked']['git_commit'][:12]}, {s['rechecked']['at']}"
            ]
            if "rechecked" in s
            else []
        ),
        f"- all checks passed: **{'yes' if s['ok'] else 'no'}**",
        "",
    ]
    if s["kind"] == "driver":
        return head + _driver_table(s["runs"])
    return head + _process_table(s["kind"], s["runs"])


def _driver_table(runs: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| seed | faults (signal) | resumes | from scratch | trials done / expected | "
        "folders | rows dup. raw / collected | rows missing | study (RUNNING) | best | "
        "wall faulty / fault-free | overhead | s per fault | env steps faulty / fault-free | "
        "overhead per env step | checks |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- |",
    ]
    for r in runs:
        f, c = r["faulty"], r["faulty"]["check"]
        sigs = Counter(f["faults"])
        scratch = sum(1 for s in f["segments"] if s.get("restarted_from_scratch"))
        missing = sum(t["result_json"]["missing"] for t in c.get("trials", {}).values())
        study = c.get("study") or {}
        best = c.get("best") or {}
        base = r.get("baseline", {}).get("wall_s")
        steps = f"{_sweep_steps(c)} / {_sweep_steps(r.get('baseline', {}).get('check') or {})}"
        per_step = f"{r['overhead_per_env_step']}x" if "overhead_per_env_step" in r else "-"
        rows.append(
            f"| {r['seed']} | {len(f['faults'])} ({', '.join(f'{k} {n}' for k, n in sigs.items())})"
            f" | {c.get('resumes')} | {scratch} | {c.get('trials_in_tune_state')} / "
            f"{c.get('trials_expected')} | {c.get('trial_folders')} | "
            f"{c.get('raw_duplicated_rows')} / {c.get('collected_duplicated_rows')} | {missing} | "
            f"{'ok' if study.get('loadable') else 'NOT LOADABLE' if study else '-'} "
            f"({(study.get('trials') or {}).get('RUNNING', 0)}) | "
            f"{best.get('value', math.nan):,.0f} | {f['wall_s']:,.0f} s / "
            f"{'-' if base is None else f'{base:,.0f} s'} | "
            f"{r.get('overhead', '-')}{'x' if 'overhead' in r else ''} | "
            f"{r.get('s_per_fault') if r.get('s_per_fault') is not None else '-'} | "
            f"{steps} | {per_step} | "
            f"{'passed' if c['ok'] else 'FAILED: ' + '; '.join(c['problems'])} |"
        )
    return [*rows, "", _driver_totals(runs), ""]


def _sweep_steps(check: dict[str, Any]) -> str:
    """A sweep's env steps sampled, in thousands ("-" for runs made before they were recorded)."""
    steps = check.get("env_steps_sampled")
    return f"{steps / 1000:,.0f}k" if steps else "-"


def _driver_totals(runs: list[dict[str, Any]], overhead: bool = True) -> str:
    """One sentence over driver runs: faults by signal, what was lost, the overhead (of runs
    of one sweep at one budget: ``overhead=False`` over runs of several)."""
    total = Counter()
    for r in runs:
        total.update(Counter(r["faulty"]["faults"]))
        total["ok"] += bool(r["faulty"]["check"]["ok"])
    overheads = [r["overhead"] for r in runs if "overhead" in r]
    per_fault = [
        (r["faulty"]["wall_s"] - r["baseline"]["wall_s"]) / len(r["faulty"]["faults"])
        for r in runs
        if "baseline" in r and r["faulty"]["faults"]
    ]
    lost = sum(
        max((r["faulty"]["check"].get("trials_expected") or 0)
            - (r["faulty"]["check"].get("trials_in_tune_state") or 0), 0)
        for r in runs
    )  # fmt: skip
    twice = sum(
        r["faulty"]["check"].get("trial_folders", 0)
        - r["faulty"]["check"].get("trials_in_tune_state", 0)
        for r in runs
    )
    dup = sum(r["faulty"]["check"].get("collected_duplicated_rows", 0) for r in runs)
    raw_dup = sum(r["faulty"]["check"].get("raw_duplicated_rows", 0) for r in runs)
    missing = sum(
        t["result_json"]["missing"]
        for r in runs
        for t in r["faulty"]["check"].get("trials", {}).values()
    )
    n_faults = sum(total[k] for k in SIGNALS)
    return (
        f"{n_faults} driver interruptions ({', '.join(f'{k} {total[k]}' for k in SIGNALS)}) over "
        f"{len(runs)} seeds; checks passed on {total['ok']} of {len(runs)}: "
        f"{lost} trials lost, {twice} run twice, {raw_dup} duplicated rows in result.json "
        f"({dup} in the collected table), {missing} missing."
        + (
            f" Wall-clock against the fault-free run of the same seed: median "
            f"{_median(overheads):.2f}x, max {max(overheads):.2f}x (goal <= 1.5x); one "
            f"interruption costs a median {_median(per_fault):.0f} s (start-up again and the "
            f"work since the last checkpoint), so n of them add about n x that to any sweep."
            if overhead and overheads and per_fault
            else ""
        )
    )


def _process_table(kind: str, runs: list[dict[str, Any]]) -> list[str]:
    what = "env-runner restarts counted" if kind == "runners" else "shard restarts counted"
    rows = [
        f"| algo | kills | {what} | back after (s, median) | Tune retries | trial finished | "
        f"env steps to greedy {TARGET:,.0f} faulty / fault-free | ratio | "
        "wall faulty / fault-free | checks |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        f, c = r["faulty"], r["faulty"]["check"]
        b = r.get("baseline", {})
        counted = c.get("env_runner_restarts" if kind == "runners" else "replay_shard_restarts")
        back = [k["recovered_after_s"] for k in f["kills"] if "recovered_after_s" in k]
        rows.append(
            f"| {r['algo']} | {len(f['kills'])} | {counted} | "
            f"{f'{_median(back):.1f}' if back else '-'} | {c.get('tune_retries')} | "
            f"{'yes' if f['rc'] == 0 and c.get('trials_in_tune_state') == 1 else 'no'} | "
            f"{_steps(f.get('steps_to_target'))} / "
            f"{_steps(b['steps_to_target']) if b else '-'} | "
            f"{r.get('steps_ratio', '-')} | {f['wall_s']:,.0f} s / "
            f"{'-' if not b else format(b['wall_s'], ',.0f') + ' s'} | "
            f"{'passed' if c['ok'] else 'FAILED: ' + '; '.join(c['problems'])} |"
        )
    rows.append("")
    if kind == "shard":
        rows += [_shard_outcome(runs), ""]
    return rows


def _shard_outcome(runs: list[dict[str, Any]]) -> str:
    """What a replay-shard kill did, in one sentence computed from the runs."""
    kills = sum(len(r["faulty"]["kills"]) for r in runs)
    restarts = sum(r["faulty"]["check"].get("replay_shard_restarts", 0) for r in runs)
    retries = sum(r["faulty"]["check"].get("tune_retries", 0) for r in runs)
    finished = all(r["faulty"]["rc"] == 0 for r in runs)
    return (
        f"{kills} replay-shard kills: {restarts} shard restarts counted (Ray restarts the "
        f"shard actor, empty), {retries} trial retries from a checkpoint; "
        + ("the trial" if len(runs) == 1 else "every trial")
        + (" finished" if finished else " did NOT finish")
        + ". Lost with each kill: that shard's replay contents (never checkpointed); the "
        "runners refill the shard's share of the warm-up before the learner trains on it again."
    )


def _steps(x: Any) -> str:
    return "not reached" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.0f}"


def _median(values: list[float]) -> float:
    s = sorted(values)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python benchmarks/faults.py",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="kind", required=True)
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    for kind in ("driver", "runners", "shard"):
        s = sub.add_parser(kind, help=f"{kind} faults (see the module docstring)")
        s.add_argument("--out-dir", default="runs/faults", help="where runs go (%(default)s)")
        s.add_argument("--name", default=f"{kind}-{stamp}", help="run folder under --out-dir")
        s.add_argument(
            "--no-baseline",
            dest="baseline",
            action="store_false",
            help="skip the fault-free run of the same seed (no overhead / env-step ratio)",
        )
        s.add_argument(
            "--delay-s",
            type=_window,
            # Process kills: after the trial counted the previous restart (run_with_kills).
            default=(0.0, 10.0) if kind == "driver" else (1.0, 4.0),
            help="random delay before each fault, 'LO,HI' seconds, after the first result of "
            "the segment (driver; or after its start, see --startup-share) or after the "
            "process is up and its last restart counted (default: %(default)s)",
        )
    d = sub.choices["driver"]
    d.add_argument("--sweep", default="apex_cabs", help="sweep file (default: %(default)s)")
    d.add_argument(
        "--sweep-args",
        default=MAIN_JOB_ARGS,
        help="the sweep's arguments, one string (default: %(default)r)",
    )
    d.add_argument("--seeds", type=_seeds, default=[0], help="e.g. 0-9 or 0,3 (default: 0)")
    d.add_argument("--faults", type=int, default=5, help="interruptions per seed (default: 5)")
    d.add_argument(
        "--startup-share",
        type=float,
        default=0.2,
        help="chance that an interruption lands during start-up rather than training "
        "(default: %(default)s)",
    )
    for kind in ("runners", "shard"):
        s = sub.choices[kind]
        s.add_argument("--seed", type=int, default=0, help="trial and fault seed (default: 0)")
        s.add_argument("--kills", type=int, default=3, help="kills in the trial (default: 3)")
        s.add_argument(
            "--iteration-s",
            type=float,
            default=1.0,
            help="seconds per training iteration: the resolution at which the env steps to the "
            "target are read (IMPALA and APPO sample ~20k env steps a second on the cab env; "
            "default: 1.0)",
        )
        s.add_argument(
            "--stop-timesteps",
            type=int,
            default=None,
            help="env steps of the trial (default: per algorithm, past the fault-free target)",
        )
    sub.choices["runners"].add_argument(
        "--algos",
        type=lambda t: t.split(","),
        default=["dqn", "apex", "impala", "appo"],
        help="comma-separated (default: dqn,apex,impala,appo)",
    )
    c = sub.add_parser(
        "recheck",
        help="re-read a finished driver run's sweep folders with today's checks and rewrite "
        "its summary.json (for runs made before a check or figure was added)",
    )
    c.add_argument("runs", nargs="+", help="driver run folders (each with a summary.json)")
    r = sub.add_parser("report", help="write RELIABILITY.md from summary.json files")
    r.add_argument("inputs", nargs="+", help="run folders, or folders holding several")
    r.add_argument("--out", required=True, help="the Markdown file (e.g. results/RELIABILITY.md)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.kind == "report":
        found = [p for i in args.inputs for p in sorted(Path(i).rglob(SUMMARY))]
        if not found:
            prog = build_parser().prog
            print(f"{prog}: error: no {SUMMARY} under {args.inputs}", file=sys.stderr)
            return 2
        text = report([json.loads(p.read_text()) for p in found])
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out} from {len(found)} run(s)")
        return 0
    if args.kind == "recheck":
        runs = [Path(r) for r in args.runs]
        gone = [str(r) for r in runs if not (r / SUMMARY).is_file()]
        if gone:
            print(f"{build_parser().prog}: error: no {SUMMARY} in {gone}", file=sys.stderr)
            return 2
        try:
            for run in runs:  # all read before any is rewritten: a bad one changes nothing
                recheck_readable(run)
            summaries = [recheck(run) for run in runs]
        except ValueError as e:
            print(f"{build_parser().prog}: error: {e}", file=sys.stderr)
            return 2
        for run, summary in zip(runs, summaries, strict=True):
            print(f"[faults] re-checked {run / SUMMARY}; all checks passed: {summary['ok']}")
        return 0 if all(s["ok"] for s in summaries) else 1
    bad = [a for a in ("algos",) if hasattr(args, a) and set(args.algos) - set(RUNNER_BUDGET)]
    if bad or getattr(args, "faults", 1) < 0 or getattr(args, "kills", 1) < 0:
        print(f"{build_parser().prog}: error: bad --algos, --faults or --kills", file=sys.stderr)
        return 2
    out = Path(args.out_dir, args.name).resolve()
    if out.exists():
        print(f"{build_parser().prog}: error: {out} exists; choose another --name", file=sys.stderr)
        return 2
    out.mkdir(parents=True)
    summary = {"kind": args.kind, "name": args.name, "environment": environment()}
    runs = driver_experiment(args, out) if args.kind == "driver" else process_experiment(args, out)
    summary["runs"] = runs
    summary["ok"] = all(r["faulty"]["check"]["ok"] for r in runs)
    summary["ended_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    from sweeps.harness.record import load_average

    summary["load_at_end"] = load_average()
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, default=str))
    print(f"[faults] wrote {out / SUMMARY}; all checks passed: {summary['ok']}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

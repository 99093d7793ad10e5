"""Checks: what a sweep folder says after the faults (it reads only the folder)."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.faultlab.common import COUNTER_KEY, TARGET
from sweeps.harness import files
from sweeps.harness.record import RECORD_FILE, RunRecord

if TYPE_CHECKING:
    import pandas as pd


def json_lines(path: Path) -> tuple[list[dict[str, Any]], int]:
    try:
        return files.json_lines(path.read_text(errors="replace"))
    except OSError:
        return [], 0


def _iteration_faults(iterations: list[int]) -> tuple[int, int]:
    """(duplicated, missing) among a trial's reported training iterations (1..last expected)."""
    counts = Counter(iterations)
    duplicated = sum(n - 1 for n in counts.values())
    missing = len(set(range(1, max(iterations, default=0) + 1)) - set(counts))
    return duplicated, missing


def _clock_drops(rows: list[dict[str, Any]]) -> int:
    """Restores in a trial's result.json (rows in order) that restarted its training clock
    (``analysis.run_folder.repair_clock`` finds them; the suite checkpoints the clock: none
    expected)."""
    from analysis.run_folder import repair_clock

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


def _study(record: RunRecord) -> dict[str, Any] | None:
    """The Optuna study of a sweep run with --optuna-storage: trials by state (None without)."""
    args = record.args or {}
    url = args.get("optuna_storage")
    if not url:
        return None
    try:
        import optuna

        from sweeps.harness import storage

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.load_study(study_name=args["name"], storage=storage.optuna_storage(url))
        states = Counter(t.state.name for t in study.trials)
        return {"loadable": True, "storage": url, "trials": dict(states)}
    except Exception as e:  # any failure to load is the finding
        return {"loadable": False, "storage": url, "error": f"{type(e).__name__}: {e}"}


def check_sweep(folder: Path) -> dict[str, Any]:
    """Read a finished sweep folder and check it survived; ``ok`` is True when every check
    passed, ``problems`` says what did not."""
    from analysis.collect import collect

    problems: list[str] = []
    try:
        record = RunRecord.read(folder / RECORD_FILE)
    except (OSError, ValueError) as e:
        return {"ok": False, "problems": [f"{RECORD_FILE} unreadable: {e}"]}
    args = record.args or {}
    expected = args.get("benchmark_seeds") or args.get("num_samples")
    if record.status != "finished":
        problems.append(f"{RECORD_FILE} status {record.status!r}, not 'finished'")
    tune_trials = _check_tune_state(folder, expected, problems)
    trial_dirs, ids = _check_trial_folders(folder, tune_trials, problems)
    trials = {
        trial_id: _check_trial(d, trial_id, problems)
        for d, trial_id in zip(trial_dirs, ids, strict=True)
    }
    collection = collect([folder])
    table = collection.runs
    dup_rows = _check_table(table, problems)
    best = _best(table, record, problems)
    study = _check_study(record, problems)
    failures = [json.loads(line) for line in read_lines(folder / "failures.jsonl")]
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
        "resumes": len(record.resumes or []),
        "env_runner_restarts": sum(t["env_runner_restarts"] for t in trials.values()),
        "replay_shard_restarts": sum(t["replay_shard_restarts"] for t in trials.values()),
        "replay_requests_lost": sum(t["replay_requests_lost"] for t in trials.values()),
        "clock_drops": sum(t["clock_drops"] for t in trials.values()),
        "trials": trials,
        "skipped_by_collect": collection.skipped,
    }


def _check_tune_state(folder: Path, expected: Any, problems: list[str]) -> dict[str, str]:
    """Tune's trials (trial_id -> status): every one TERMINATED, as many as the sweep asked."""
    try:
        tune_trials = _tune_trials(folder)
    except (OSError, ValueError, KeyError, IndexError) as e:
        tune_trials = {}
        problems.append(f"Tune's experiment state unreadable: {e}")
    not_done = {t: s for t, s in sorted(tune_trials.items()) if s != "TERMINATED"}
    if not_done:
        problems.append(f"trials not TERMINATED (trial: status): {not_done}")
    if expected and len(tune_trials) != expected:
        problems.append(f"{len(tune_trials)} trials in Tune's state, {expected} expected")
    return tune_trials


def _check_trial_folders(
    folder: Path, tune_trials: dict[str, str], problems: list[str]
) -> tuple[list[Path], list[str]]:
    """The trial folders and their trial ids: each known to Tune, one folder per trial."""
    trial_dirs = sorted(d for d in folder.iterdir() if d.is_dir() and (d / "params.json").exists())
    ids = [d.name.rpartition("_")[2] for d in trial_dirs]
    orphans = sorted(set(ids) - set(tune_trials))
    if orphans:
        problems.append(f"trial folders Tune does not know (run twice?): {orphans}")
    if len(ids) != len(set(ids)):
        problems.append("a trial has two folders")
    return trial_dirs, ids


def _check_trial(trial_dir: Path, trial_id: str, problems: list[str]) -> dict[str, Any]:
    """One trial's result files (iterations duplicated, missing, corrupt or shifted), its
    restart counters and its training clock."""
    from sweeps.harness import keys

    rows, corrupt = json_lines(trial_dir / "result.json")
    iterations = [int(r["training_iteration"]) for r in rows if "training_iteration" in r]
    dup, miss = _iteration_faults(iterations)
    csv_iterations, shifted = _csv_iterations(trial_dir / "progress.csv")
    csv_dup, csv_miss = _iteration_faults(csv_iterations)
    restarts = [keys.get(r, COUNTER_KEY["runners"], 0) or 0 for r in rows]
    shard = [keys.get(r, COUNTER_KEY["shard"], 0) or 0 for r in rows]
    lost = [keys.get(r, ("apex", "replay_shard_failures"), 0) or 0 for r in rows]
    trial = {
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
    if trial["clock_drops"]:
        problems.append(
            f"{trial_id}: suite/train_time_s went back {trial['clock_drops']} "
            "time(s) (a restore restarted the training clock)"
        )
    for name in ("result_json", "progress_csv"):
        bad = {k: v for k, v in trial[name].items() if v}
        if bad:
            problems.append(f"{trial_id} {name}: {bad}")
    return trial


def _check_table(table: pd.DataFrame, problems: list[str]) -> int:
    """The collected table: no (trial, iteration) row twice or missing. Its duplicated rows."""
    dup_rows = int(table.duplicated(["trial_id", "training_iteration"]).sum())
    if dup_rows:
        problems.append(f"collected table: {dup_rows} duplicated (trial, iteration) rows")
    table_missing = sum(
        _iteration_faults(list(g["training_iteration"].astype(int)))[1]
        for _, g in table.groupby("trial_id")
    )
    if table_missing:
        problems.append(f"collected table: {table_missing} missing (trial, iteration) rows")
    return dup_rows


def _best(table: pd.DataFrame, record: RunRecord, problems: list[str]) -> dict[str, Any] | None:
    """The collected table's best trial by the sweep's metric (a problem when none)."""
    if table.empty or not table["metric_value"].notna().any():
        problems.append("no best trial (no metric reported)")
        return None
    row = table.loc[table["metric_value"].idxmax()]
    return {"trial_id": row["trial_id"], "metric": record.metric,
            "value": float(row["metric_value"])}  # fmt: skip


def _check_study(record: RunRecord, problems: list[str]) -> dict[str, Any] | None:
    """The sweep's Optuna study (--optuna-storage): loadable, no trial left RUNNING."""
    study = _study(record)
    if study is not None:
        if not study["loadable"]:
            problems.append(f"Optuna study not loadable: {study['error']}")
        elif study["trials"].get("RUNNING"):
            problems.append(f"Optuna trials left RUNNING: {study['trials']['RUNNING']}")
    return study


def read_lines(path: Path) -> list[str]:
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

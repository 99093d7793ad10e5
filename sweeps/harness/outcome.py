"""The end of a run (the runner's summarise step): the run record closed, the best trial
picked (on held-out episodes with --final-episodes), the outcome printed, the exit code."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

from sweeps.harness import cpu_time, keys, recovery
from sweeps.harness.budget import CutShort
from sweeps.harness.errors import error_line
from sweeps.harness.record import RunRecord, load_average
from sweeps.harness.settings import Settings


def close_record(
    args: Settings,
    record: RunRecord,
    results: Any,
    errors: list[Any],
    failures: list[dict[str, Any]],
    interrupted: bool,
    cut: CutShort | None = None,
) -> None:
    """The run record's end: failures, end time and load, status (``cut``: stopped by its
    wall-clock cap, "cut short", and how far it got); a finished run also closes the Optuna
    trials a killed driver left RUNNING (a cut-short one's go on at --resume)."""
    record.failures = failures
    record.ended_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if results is not None:
        trials = [keys.get(r.metrics or {}, keys.CPU) for r in results]
        record.cpu = cpu_time.run_summary(t for t in trials if isinstance(t, dict))
    record.machine.load_at_end = load_average()
    if interrupted or results is None:
        record.status = "interrupted"
        return
    record.cut_short = None if cut is None else cut.to_dict()
    if cut is not None:
        record.status = "cut short"
        return
    record.status = "failed" if errors else "finished"
    try:
        stale = recovery.close_stale_study_trials(args.optuna_storage, args.name)
    except Exception as e:  # a database that stopped answering: say so, finish anyway
        stale = 0
        print(f"[sweep] Optuna study not checked for stale trials: {error_line(str(e))}")
    if stale:
        record.optuna_stale_trials_failed = stale
        print(f"[sweep] Optuna: {stale} trial(s) left RUNNING by a killed driver marked FAIL")


def pick_best(
    args: Settings, results: Any, judged: keys.Key, record: RunRecord, interrupted: bool
) -> tuple[Any, Any]:
    """The best trial by ``judged``, and with --final-episodes (not interrupted) the held-out
    evaluation that re-picks it (its summary goes into the record); None where there is none."""
    from sweeps.harness.reporting import best_trial

    best = best_trial(results, judged) if results is not None else None
    if best is None or interrupted or not args.final_episodes:
        return best, None
    # The final figure, and the pick, on held-out episodes (sweeps/harness/held_out_pick.py).
    from sweeps.harness import held_out_pick
    from sweeps.harness.files import HELD_OUT_SEED

    held_out = held_out_pick.evaluate_best(
        results, judged, args.final_episodes, HELD_OUT_SEED, bool(args.benchmark_seeds)
    )
    record.held_out = held_out.summary()
    if held_out.best is not None:
        best = held_out.best.result
    return best, held_out


def print_outcome(
    experiment: str,
    results: Any,
    errors: list[Any],
    failures: list[dict[str, Any]],
    best: Any,
    held_out: Any,
    record: RunRecord,
    judged: keys.Key,
) -> None:
    """The trials and errors, the held-out figure, the best trial, each failure and error, and
    the TensorBoard command."""
    from sweeps.harness.reporting import print_best

    print(f"[sweep] {len(results)} trial(s), {len(errors)} errored; folder: {experiment}")
    if held_out is not None:
        from sweeps.harness.held_out_pick import lines

        print("\n".join(f"[sweep] {line}" for line in lines(held_out, record.optimum)))
    if best is not None:
        print_best(best, record, keys.flat(judged), held_out.best if held_out else None)
    for f in failures:
        print(_failure_line(f))
    for r in errors:
        print(f"[sweep] ERROR in {Path(r.path).name}: {error_line(str(r.error))}")
    print(f"[sweep] TensorBoard: tensorboard --logdir {experiment}")


def _failure_line(f: dict[str, Any]) -> str:
    """One trial failure (``recovery.FailureLog``) and whether Tune retried it."""
    start = f.get("checkpoint_iteration", 0)
    what = (
        "not retried"
        if not f["retried"]
        else f"retried from its checkpoint at iteration {start}"
        if start
        else "retried from the start (no checkpoint yet)"
    )
    return (
        f"[sweep] failure {f['failure']} of trial {f['trial']} (after iteration "
        f"{f['iteration']}), {what}: {f['error']}"
    )


def exit_code(
    sweep_name: str,
    experiment: str,
    args: Settings,
    results: Any,
    errors: list[Any],
    interrupted: bool,
    judged: keys.Key,
) -> int:
    """130 when interrupted (and how to continue), 1 when a trial errored or --as-test saw no
    trial reach --stop-reward, else 0."""
    if interrupted:
        print(
            f"[sweep] interrupted; continue with: "
            f"python sweeps/{sweep_name}.py --resume {experiment}"
        )
        return 130
    if errors:
        return 1
    if args.as_test and not _reached_stop_reward(args, results, judged):
        print(f"[sweep] --as-test: no trial reached {keys.flat(judged)} >= {args.stop_reward}")
        return 1
    return 0


def _reached_stop_reward(args: Settings, results: Any, judged: keys.Key) -> bool:
    """Whether any trial's final ``judged`` return reached --stop-reward (False when unset)."""
    if args.stop_reward is None:
        return False
    return any(
        (keys.get(r.metrics or {}, judged) or -math.inf) >= args.stop_reward for r in results
    )

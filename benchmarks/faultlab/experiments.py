"""The three experiments: driver faults against a fault-free run of the same sweep and seed;
process kills against a fault-free run of the same one-trial sweep."""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import random
import shlex
import time
from pathlib import Path
from typing import Any

from benchmarks.faultlab.checks import check_sweep, steps_to_target
from benchmarks.faultlab.common import (
    COUNTED,
    COUNTER_KEY,
    ENV_STEPS,
    RUNNER_BUDGET,
    RUNNER_TITLE,
    SHARD_TITLE,
    SUMMARY,
    TARGET,
)
from benchmarks.faultlab.inject import drive_with_interruptions, latest_count, run_with_kills
from benchmarks.faultlab.procs import SweepProcesses, start_sweep

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
    """A driver, runners, shard or nodes run's summary, and the folders it was run in; a ValueError
    names what is missing."""
    try:
        summary = json.loads((run / SUMMARY).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{run / SUMMARY} unreadable: {e}") from e
    kind = summary.get("kind")
    if kind not in ("driver", "runners", "shard", "nodes"):
        raise ValueError(
            f"{run / SUMMARY} is a {kind!r} run, not a driver, runners, shard or nodes run"
        )
    for folder in _folders(run, summary):
        if not folder.is_dir():
            raise ValueError(f"{folder} is gone: the run cannot be re-read")
    return summary


def _folders(run: Path, summary: dict[str, Any]) -> list[Path]:
    """The sweep folders a run's summary was made from."""
    if summary["kind"] == "nodes":
        from benchmarks.faultlab.nodes import sweep_folders

        return [
            folder
            for entry in summary["runs"]
            for label, folder in sweep_folders(run, entry["seed"]).items()
            if label in entry
        ]
    if summary["kind"] == "driver":
        return [
            run / _sweep_name(entry["seed"], label)
            for entry in summary["runs"]
            for label in SWEEPS
            if label in entry
        ]
    return [
        run / f"{entry.get('algo')}-{label}"
        for entry in summary["runs"]
        for label in ("baseline", "faulty")
        if label in entry
    ]


def recheck(run: Path) -> dict[str, Any]:
    """Re-read the sweep folders of a finished run with today's code (a run made before a check
    or a figure was added gets it from its own folders; nothing is re-run) and rewrite its
    summary.json, which then says when and at which commit: a driver run's checks and overheads,
    a runners, shard or nodes run's throughput around its kills."""
    from sweeps.harness.files import atomic_write_text
    from sweeps.harness.record import git_commit

    summary = recheck_readable(run)
    for entry in summary["runs"]:
        if summary["kind"] == "nodes":
            from benchmarks.faultlab.nodes import rates_around, sweep_folders

            folders = sweep_folders(run, entry["seed"])
            twin = folders["baseline"] if "baseline" in entry else None
            kills = entry["faulty"]["kills"]
            entry["faulty"]["rates"] = rates_around(folders["faulty"], kills, twin)
            continue
        if summary["kind"] != "driver":
            kills = entry["faulty"]["kills"]
            entry["rates"] = _rates(run, entry["algo"], kills, "baseline" in entry)
            continue
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
            # No held-out games at the end: the report compares env steps to the target.
            *("--final-episodes", "0"),
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
        entry["rates"] = _rates(out, algo, faulty["kills"], "baseline" in entry)
        print(_process_line(args.kind, entry), flush=True)
        runs.append(entry)
    return runs


def _rates(out: Path, algo: str, kills: list[dict[str, Any]], twin: bool) -> dict[str, Any] | None:
    """The one trial's env steps/s after its kills against before them and, with the
    fault-free run, against that run over the same env steps (``throughput.around_faults``)."""
    from benchmarks.faultlab.checks import json_lines
    from benchmarks.faultlab.throughput import around_faults

    def rows(label: str) -> list[dict[str, Any]]:
        paths = (out / f"{algo}-{label}").glob("*/result.json")
        return [row for p in paths for row in json_lines(p)[0]]

    return around_faults(
        rows("faulty"),
        [k["at_unix"] for k in kills if "at_unix" in k],
        fault_free=rows("baseline") if twin else None,
    )


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

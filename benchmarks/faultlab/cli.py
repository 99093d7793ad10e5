"""``python benchmarks/faults.py``: parse, run one experiment or the report, write its summary."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

from benchmarks.faultlab.common import RUNNER_BUDGET, SUMMARY
from benchmarks.faultlab.experiments import (
    driver_experiment,
    process_experiment,
    recheck,
    recheck_readable,
)
from benchmarks.faultlab.parser import build_parser
from benchmarks.faultlab.report import environment, report


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
    if getattr(args, "kill_p", 0.0) < 0 or getattr(args, "kill_p", 0.0) > 1:
        print(f"{build_parser().prog}: error: --kill-p must be in [0, 1]", file=sys.stderr)
        return 2
    if getattr(args, "workers", 1) < 1:
        print(f"{build_parser().prog}: error: --workers must be >= 1", file=sys.stderr)
        return 2
    if bad or getattr(args, "faults", 1) < 0 or getattr(args, "kills", 1) < 0:
        print(f"{build_parser().prog}: error: bad --algos, --faults or --kills", file=sys.stderr)
        return 2
    out = Path(args.out_dir, args.name).resolve()
    if out.exists():
        print(f"{build_parser().prog}: error: {out} exists; choose another --name", file=sys.stderr)
        return 2
    out.mkdir(parents=True)
    summary = {"kind": args.kind, "name": args.name, "environment": environment()}
    if args.kind in ("nodes", "head"):
        from benchmarks.faultlab.nodes import node_experiment

        runs = node_experiment(args, out)
    elif args.kind == "driver":
        runs = driver_experiment(args, out)
    else:
        runs = process_experiment(args, out)
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

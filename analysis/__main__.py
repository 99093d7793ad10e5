"""``python -m analysis {collect,report} ...``: collect Tune runs into a table, write the report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from analysis import collect, curves, overhead, report, scaling_check
from sweeps.harness.errors import OneLineErrorParser, UsageError

COMMANDS = {
    "collect": (collect, "collect experiment folders into one tidy table (runs.csv)"),
    "report": (report, "write REPORT.md, PNG plots and runs.csv for experiment folders"),
    "curves": (curves, "runs side by side at the same env steps (comparing probes)"),
    "overhead": (overhead, "where a sweep's wall-clock goes, from its files (OVERHEAD.md)"),
    "scaling-check": (
        scaling_check,
        "the scaling prediction from one core checked against two (CHECK.md)",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="python -m analysis",
        description="Analysis of the suite's Ray Tune sweeps and benchmarks: it reads the run "
        "folders only (run.json, params.json, result.json), never trainer code.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(
            name,
            help=help_text,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(run=module.run, prog=sub_parser.prog)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as err:
        print(f"{args.prog}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

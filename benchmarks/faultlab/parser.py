"""The command line of ``python benchmarks/faults.py``: its subcommands and arguments."""

from __future__ import annotations

import argparse
import datetime as dt
import math

from benchmarks.faultlab.common import MAIN_JOB_ARGS
from sweeps.harness.errors import OneLineErrorParser

DESCRIPTION = (
    "Fault injection: kill a sweep at random moments drawn from a seed, then check what survived."
)


def parse_seeds(text: str) -> list[int]:
    """``--seeds``: "0-9", "0,3" or both ("0-2,5")."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected e.g. 0-9 or 0,3, got {text!r}") from None
    return out


def parse_window(text: str) -> tuple[float, float]:
    """``--delay-s``: "LO,HI" seconds (0 <= LO <= HI), or one value."""
    lo, _, hi = text.partition(",")
    try:
        window = float(lo), float(hi or lo)
    except ValueError:
        window = (math.nan, math.nan)
    if not 0 <= window[0] <= window[1]:
        raise argparse.ArgumentTypeError(f"expected LO,HI seconds with 0 <= LO <= HI, got {text!r}")
    return window


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python benchmarks/faults.py",
        description=DESCRIPTION,
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
            type=parse_window,
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
    d.add_argument("--seeds", type=parse_seeds, default=[0], help="e.g. 0-9 or 0,3 (default: 0)")
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
    for kind, text in (
        ("nodes", "worker nodes of a local multi-node cluster killed at random"),
        ("head", "the head node lost with the driver, and --resume on a new cluster"),
    ):
        s = sub.add_parser(kind, help=f"{text} (benchmarks/faultlab/nodes.py)")
        s.add_argument("--out-dir", default="runs/faults", help="where runs go (%(default)s)")
        s.add_argument("--name", default=f"{kind}-{stamp}", help="run folder under --out-dir")
        s.add_argument("--sweep", default="apex_cabs", help="sweep file (default: %(default)s)")
        s.add_argument(
            "--sweep-args",
            default=MAIN_JOB_ARGS,
            help="the sweep's arguments, one string (default: %(default)r)",
        )
        s.add_argument("--seeds", type=parse_seeds, default=[0], help="e.g. 0-2 (default: 0)")
        s.add_argument(
            "--workers", type=int, default=3, help="worker nodes of 1 CPU each (default: 3)"
        )
    n = sub.choices["nodes"]
    n.add_argument(
        "--kill-p",
        type=float,
        default=0.03,
        help="each worker node's chance to die per interval (default: %(default)s, Tune's "
        "release test's)",
    )
    n.add_argument("--interval-s", type=float, default=10.0, help="(default: %(default)s)")
    n.add_argument(
        "--warmup-s", type=float, default=30.0, help="no kill before (default: %(default)s)"
    )
    n.add_argument(
        "--replace-after-s",
        type=float,
        default=5.0,
        help="a fresh node joins this long after a kill (default: %(default)s)",
    )
    n.add_argument("--max-kills", type=int, default=None, help="at most this many kills in a sweep")
    n.add_argument(
        "--baseline",
        action="store_true",
        help="first run the same sweep fault-free on a cluster of the same shape, and compare each "
        "trial's env steps/s after the kills with its twin's over the same env steps (use a "
        "random search: --sweep-args '... --search random --scheduler fifo')",
    )
    sub.choices["head"].add_argument(
        "--delay-s",
        type=parse_window,
        default=(30.0, 90.0),
        help="the head is lost after a random delay in this window (default: %(default)s)",
    )
    c = sub.add_parser(
        "recheck",
        help="re-read a finished driver, runners, shard or nodes run's sweep folders with "
        "today's checks and figures and rewrite its summary.json (for runs made before one "
        "was added)",
    )
    c.add_argument("runs", nargs="+", help="run folders (each with a summary.json)")
    r = sub.add_parser("report", help="write RELIABILITY.md from summary.json files")
    r.add_argument("inputs", nargs="+", help="run folders, or folders holding several")
    r.add_argument("--out", required=True, help="the Markdown file (e.g. results/RELIABILITY.md)")
    return p

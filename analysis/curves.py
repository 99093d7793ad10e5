"""``python -m analysis curves``: runs side by side at the same env steps, for comparing probes.

A recipe change is judged by where its curve rises, by env steps, not wall-clock (a probe that
samples slower is not a worse learner). This prints, per trial, the training return (or
``--signal greedy_return``) at each of ``--at`` env-step counts: the last value reported at or
before that count (the training return is already a running mean of the last games), a dash
where the trial had not got that far or no game had ended yet; then how far each ran, and the
training time and env steps at which it first reached each target.

    python -m analysis curves runs/probes/appo-E runs/benchmark/pong-appo-s0 \\
        results/pong/candidates/pong-appo-floor-s0.csv --at 0.5M,1M,1.5M,2M,3M
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence

import pandas as pd

from analysis.collect import add_inputs, gather
from analysis.fmt import DASH, fmt_float, fmt_int, fmt_time, markdown_table
from analysis.tables import SIGNALS, TRIAL_KEY, targets_of
from sweeps.harness.common import UsageError

DEFAULT_AT = "0.5M,1M,1.5M,2M,2.5M,3M,4M,5M"


def parse_steps(text: str) -> list[float]:
    """'0.5M,1M,250k,2000' -> [500000, 1000000, 250000, 2000] (sorted)."""
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmM]?)\s*", part)
        if not m:
            raise argparse.ArgumentTypeError(f"expected env steps like 0.5M,1M,250k, got {text!r}")
        scale = {"": 1, "k": 1e3, "m": 1e6}[m.group(2).lower()]
        out.append(float(m.group(1)) * scale)
    return sorted(out)


def _label(steps: float) -> str:
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if steps >= size:
            return f"{steps / size:g}{unit}"
    return f"{steps:g}"


def at_steps(trial: pd.DataFrame, column: str, milestones: Sequence[float]) -> list[float]:
    """The last value of ``column`` reported at or before each env-step count (NaN where the
    trial had not got there, or nothing was reported yet)."""
    t = trial.sort_values("env_steps")[["env_steps", column]]
    values = []
    for m in milestones:
        if t["env_steps"].max() < m:
            values.append(math.nan)
            continue
        known = t[(t["env_steps"] <= m)][column].dropna()
        values.append(float(known.iloc[-1]) if len(known) else math.nan)
    return values


def curves_table(runs: pd.DataFrame, signal: str, milestones: Sequence[float]) -> str:
    """One row per trial: the signal at each milestone, how far it ran, when it first reached
    each target."""
    targets = targets_of(runs)
    header = ["run", "trial", *(_label(m) for m in milestones), "env steps", "training time"]
    header += [f"to {fmt_float(t)}" for t in targets]
    rows = []
    for (experiment, trial_id), g in runs.groupby(TRIAL_KEY, sort=True):
        cells = [experiment, trial_id]
        values = at_steps(g, signal, milestones)
        cells += [DASH if math.isnan(v) else fmt_float(v) for v in values]
        cells += [fmt_int(g["env_steps"].max()), fmt_time(g["train_time_s"].max())]
        for target in targets:
            hit = g.sort_values("env_steps")
            hit = hit[hit[signal] >= target]
            cells.append(
                f"{fmt_time(hit['train_time_s'].iloc[0])} / {fmt_int(hit['env_steps'].iloc[0])}"
                if len(hit)
                else "not reached"
            )
        rows.append(cells)
    return markdown_table(header, rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, None)
    parser.add_argument(
        "--at",
        type=parse_steps,
        default=parse_steps(DEFAULT_AT),
        help=f"env-step counts to compare at (default: {DEFAULT_AT})",
    )
    parser.add_argument(
        "--signal",
        choices=sorted(SIGNALS),
        default="return_mean",
        help="what to compare (default: return_mean, the training return)",
    )


def run(args: argparse.Namespace) -> int:
    runs = gather(args.inputs).runs
    if runs[args.signal].isna().all():
        raise UsageError(f"no {SIGNALS[args.signal]} in {', '.join(args.inputs)}")
    print(curves_table(runs, args.signal, args.at))
    return 0

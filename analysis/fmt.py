"""Text formats shared by the report and its plots. Fixed formats, so that a rerun on the same
table writes the same bytes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import pandas as pd

from analysis.tables import SIGNALS
from sweeps.harness import keys

DASH = "—"
SIGNAL_NOTES = {
    "return_mean": "the mean return of the training episodes, played by the exploring policy",
    "greedy_return": "the mean return of periodic greedy (explore=False) evaluation episodes",
}
# Search metrics (run.json "metric", flat result keys) in words.
METRICS = {
    keys.flat(keys.GREEDY_RETURN): SIGNALS["greedy_return"],
    keys.flat(keys.EVAL_RETURN_MEAN): SIGNALS["greedy_return"],
    keys.flat(keys.RETURN_MEAN): SIGNALS["return_mean"],
}


def is_missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or pd.isna(x)


def fmt_float(x, digits: int = 1) -> str:
    return DASH if is_missing(x) else f"{float(x):,.{digits}f}"


def fmt_int(x) -> str:
    return DASH if is_missing(x) else f"{round(float(x)):,d}"


def fmt_number(x) -> str:
    """A value as short as it is exact to 0.1: '2,818', '2,630.7', '18'."""
    return DASH if is_missing(x) else f"{float(x):,.1f}".removesuffix(".0")


def fmt_time(seconds) -> str:
    if is_missing(seconds):
        return DASH
    return f"{seconds:,.1f} s" if seconds < 1000 else f"{seconds:,.0f} s"


def fmt_ratio(x) -> str:
    return DASH if is_missing(x) else f"{float(x):.2f}×"


def fmt_interval(low, high, fmt: Callable = fmt_float) -> str:
    """'[lo, hi]' (a 95% interval); '[lo, ∞)' where the data bound it from below only."""
    if is_missing(low) or is_missing(high):
        return ""
    upper = "∞)" if math.isinf(float(high)) else f"{fmt(high)}]"
    return f"[{fmt(low)}, {upper}"


def fmt_estimate(value, low, high, fmt: Callable = fmt_float) -> str:
    """'value [lo, hi]': a point estimate with its 95% interval (the value alone where it has
    none; a dash where there is no value)."""
    if is_missing(value):
        return DASH
    interval = fmt_interval(low, high, fmt)
    return f"{fmt(value)} {interval}" if interval else fmt(value)


def fmt_bounded(x, bound: str | bool, fmt: Callable = fmt_float) -> str:
    """A value that may be a bound: '≥ 60.9 s' (``bound`` True or "≥")."""
    if not isinstance(bound, str):  # a lower-bound flag (bool or numpy bool)
        bound = "≥" if bool(bound) else ""
    return DASH if is_missing(x) else (f"{bound} " if bound else "") + fmt(x)


def fmt_pct(x) -> str:
    return DASH if is_missing(x) else f"{float(x):.1f}%"


def fmt_range(lo, hi, fmt: Callable = fmt_float) -> str:
    """'lo–hi'; one value when they are equal."""
    if is_missing(lo):
        return DASH
    return fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"


def fmt_spread(spread: tuple[float, float, float], fmt: Callable = fmt_float) -> str:
    """'median (min–max)'; just the value when min == max."""
    med, lo, hi = spread
    if is_missing(med):
        return DASH
    return fmt(med) if lo == hi else f"{fmt(med)} ({fmt_range(lo, hi, fmt)})"


def target_label(target: float, optimum: float | None = None) -> str:
    """'2,818 = 95% of optimum' where the optimum is known and above 0, else '20'."""
    if is_missing(optimum) or not optimum or optimum < 0:
        return fmt_number(target)
    return f"{fmt_number(target)} = {100.0 * target / optimum:.3g}% of optimum"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"

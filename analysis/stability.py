"""How steadily each configuration learned: the largest fall of its training return, and, for
policy-gradient methods, how low its policy's entropy went and how often it collapsed suddenly.

A run that reaches the target can still have lost its game on the way and climbed back (IMPALA
on Pong: results/pong/REPORT.md, *Stability*). The time-to-target tables do not show that; this
section does, per seed, from the runs table alone (``analysis.collect``: ``return_mean`` and
``entropy``, the learner's policy entropy).

* *largest fall*: the largest drop of the training return below its best so far, anywhere in
  the run (0 for a return that never went down);
* *lowest entropy*: the policy's lowest entropy in nats (Q-learners report none: a dash);
* *ended below the random policy* (where the runs measured one): the training return's last
  ``COLLAPSE_TAIL`` reported values average below the random policy's return after the run had
  been above it: learning fell apart, and the report's first lines say so (``collapse_line``);
* *sudden collapses*: the entropy falling by at least ``COLLAPSE_DROP_NATS`` within
  ``COLLAPSE_ITERATIONS`` reported iterations to below ``COLLAPSE_BELOW_NATS`` (a policy near
  deterministic), counted again only once it climbed back above that level. A floor on the
  entropy (APPO's and IMPALA's ``entropy_target``) holds it above the level in steady training;
  a collapse is the policy moving far within a few updates.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.fmt import DASH, fmt_float, fmt_spread, markdown_table
from analysis.tables import TRIAL_KEY, spread
from analysis.workload import Workload
from sweeps.harness import collapse

COLLAPSE_DROP_NATS = 0.4
COLLAPSE_BELOW_NATS = 0.15
COLLAPSE_ITERATIONS = 3
COLLAPSE_TAIL = collapse.TAIL  # reported iterations whose mean training return is the run's end

CONFIG = "configuration"
FALL = "largest fall of the training return, from its best so far"
LOWEST = "lowest policy entropy (nats)"
BELOW_RANDOM = "ended below the random policy, after being above it (seeds)"
COLLAPSES = "sudden entropy collapses (seeds with one)"


def largest_fall(returns: pd.Series) -> float:
    """The largest drop of ``returns`` (in iteration order) below its running maximum."""
    r = returns.dropna().astype(float)
    return float((r.cummax() - r).max()) if len(r) else math.nan


def ended_below(returns: pd.Series, random: float) -> bool:
    """Whether a training return (in iteration order) was above ``random`` at its best and its
    last ``COLLAPSE_TAIL`` values average below it; False without a random return (the rule the
    live line warns by: ``sweeps.harness.collapse``)."""
    return collapse.ended_below(returns.dropna().astype(float).tolist(), random)


def sudden_collapses(entropy: pd.Series) -> int:
    """How many times ``entropy`` (in iteration order) collapsed suddenly (module docstring)."""
    e = entropy.dropna().astype(float).tolist()
    count, collapsed = 0, False
    for i, value in enumerate(e):
        if collapsed:
            collapsed = value < COLLAPSE_BELOW_NATS
            continue
        before = e[max(0, i - COLLAPSE_ITERATIONS) : i]
        if value < COLLAPSE_BELOW_NATS and before and max(before) - value >= COLLAPSE_DROP_NATS:
            count, collapsed = count + 1, True
    return count


def per_trial(selected: pd.DataFrame, random: float = math.nan) -> pd.DataFrame:
    """One row per trial of the compared configurations: its largest fall, lowest entropy
    (NaN without one), count of sudden collapses, and whether it ended below ``random`` (the
    random policy's return; NaN: not known) after being above it."""
    rows = []
    ordered = selected.sort_values([*TRIAL_KEY, "training_iteration"], kind="stable")
    for (config, *_), trial in ordered.groupby(["config", *TRIAL_KEY], sort=False):
        entropy = trial["entropy"] if "entropy" in trial else pd.Series(dtype=float)
        has_entropy = entropy.notna().any()
        rows.append(
            {
                "config": config,
                "largest_fall": largest_fall(trial["return_mean"]),
                "lowest_entropy": float(entropy.min()) if has_entropy else math.nan,
                "collapses": sudden_collapses(entropy) if has_entropy else math.nan,
                "below_random": ended_below(trial["return_mean"], random),
            }
        )
    columns = ["config", "largest_fall", "lowest_entropy", "collapses", "below_random"]
    return pd.DataFrame(rows, columns=columns)


def random_return(references: pd.DataFrame | None) -> float:
    """The random policy's mean return from a workload's reference rows (NaN: none)."""
    if references is None or references.empty or "random" not in references:
        return math.nan
    return float(references["random"].iloc[0])


def collapse_line(w: Workload, references: pd.DataFrame | None) -> list[str]:
    """The report's warning, said in its first lines, where a configuration's training ended
    below the random policy after being above it (``ended_below``) on some seed; [] where none
    did or no random return is known."""
    random = random_return(references)
    if math.isnan(random):
        return []
    trials = per_trial(w.selected, random)
    fell = []
    for config in w.configs["config"]:
        t = trials[trials["config"] == config]
        if len(t) and t["below_random"].any():
            fell.append(f"{config} ({int(t['below_random'].sum())}/{len(t)} seeds)")
    if not fell:
        return []
    return [
        f"**Collapsed**: {', '.join(fell)}: the training return ended below the random "
        f"policy's {fmt_float(random)} after having been above it (the mean of the last "
        f"{COLLAPSE_TAIL} results; each by more than the return's own step-to-step noise): "
        "learning fell apart there; see *Stability*.",
        "",
    ]


def _entropy(x: float) -> str:
    return DASH if math.isnan(x) else f"{x:.2g}"


def _collapses(counts: pd.Series) -> str:
    counts = counts.dropna()
    if counts.empty:
        return DASH
    return f"{int(counts.sum())} ({int((counts > 0).sum())}/{len(counts)})"


def stability_section(w: Workload, references: pd.DataFrame | None = None) -> list[str]:
    """The section's Markdown lines: one row per configuration, spreads over its seeds; the
    entropy columns only where some learner reported its policy's entropy, the random-policy
    column only where the runs measured one (``references``)."""
    random = random_return(references)
    trials = per_trial(w.selected, random)
    if trials.empty or trials["largest_fall"].isna().all():
        return []
    entropy = trials["lowest_entropy"].notna().any()
    rows = []
    for config in w.configs["config"]:
        t = trials[trials["config"] == config]
        if t.empty:
            continue
        row = [config, str(len(t)), fmt_spread(spread(t["largest_fall"]), fmt_float)]
        if not math.isnan(random):
            row.append(f"{int(t['below_random'].sum())}/{len(t)}")
        if entropy:
            row += [fmt_spread(spread(t["lowest_entropy"]), _entropy), _collapses(t["collapses"])]
        rows.append(row)
    about_entropy = (
        " Policy-gradient learners report their policy's entropy (a Q-learner's is a dash): its "
        f"lowest value, and its sudden collapses, the entropy falling by ≥ {COLLAPSE_DROP_NATS} "
        f"nats within {COLLAPSE_ITERATIONS} iterations to below {COLLAPSE_BELOW_NATS} nats (a "
        "policy near deterministic), counted again once it climbed back above that level; the "
        "count is summed over the seeds, with how many seeds had one. A collapse can take the "
        "return down to its floor before it climbs back."
    )
    header = [CONFIG, "seeds", FALL]
    header += [BELOW_RANDOM] if not math.isnan(random) else []
    header += [LOWEST, COLLAPSES] if entropy else []
    return [
        "### Stability",
        "",
        "How steadily each configuration learned, median over its seeds (min–max). The largest "
        "fall is the largest drop of the training return below its best so far, anywhere in "
        "the run (a run stops at its target: a fall after it is not seen)."
        + (about_entropy if entropy else ""),
        "",
        markdown_table(header, rows),
        "",
    ]

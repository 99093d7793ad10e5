"""A report over several envs (the env family, ``sweeps/env_family.py``): one table across them.

Per env, each algorithm's best configuration (the summary's rule, ``tables.best_per_algorithm``):
its seeds at the env's target and their median time (``≥`` where seeds missed), marked where a
seed's training ended below the random policy after being above it (``stability.ended_below``);
the fastest of them; and what periodic greedy evaluation cost, as a share of the training clock
(each trial's at its end). Then how often each
algorithm was the fastest. Envs named held out (``--held-out``: never tuned on) get a table of
their own, so that a reader judges the defaults by the envs they never saw.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Sequence

import pandas as pd

from analysis import stability, tables
from analysis.fmt import DASH, fmt_bounded, fmt_int, fmt_time, markdown_table
from analysis.run_folder import STOPPED_EARLY
from analysis.workload import Workload
from sweeps.harness import keys

EVAL_SHARE = "periodic evaluation / training clock, median (max) of trials"
FASTEST = "fastest"
# The label's suffix of an algorithm's runs with the defaults as they stood before a change
# (``--before``): "apex (before)" beside "apex".
BEFORE = " (before)"
# A seed that missed its target ended "before its budget" where its training clock stopped short
# of this share of the run's training-time stop, and short of its env-step stop.
SHORT_OF_BUDGET = 0.95


def family_section(
    loads: Sequence[Workload],
    references: Callable[[Workload], pd.DataFrame | None],
    held_out: Collection[str] = (),
) -> list[str]:
    """The section (module docstring) where the report holds more than one env; [] otherwise.
    ``references`` gives a workload's reference rows (its random policy's return)."""
    if len({w.env for w in loads}) < 2:
        return []
    algos = sorted({str(a) for w in loads for a in w.best.get("algo", [])})
    lines = [
        "## Across the envs",
        "",
        "Per env, each algorithm's best configuration: seeds that reached the env's target "
        "and the median time to it over all seeds ('≥': some missed, counted at their budget); "
        "*collapsed k*: on k seeds the training return ended below the random policy's after "
        "having been above it (each by more than its own step-to-step noise). *fastest*: most "
        "seeds at the target, then the shortest median.",
        "",
    ]
    groups = (
        ("Envs tuned on", [w for w in loads if w.env not in held_out]),
        ("Held out: envs never tuned on", [w for w in loads if w.env in held_out]),
    )
    for title, group in groups:
        if group:
            lines += [f"### {title}", "", *_table(group, algos, references), ""]
    return lines + served_lines(algos) + short_lines(loads) + estimate_lines(loads)


def served_lines(algos: Sequence[str]) -> list[str]:
    """Where the report holds runs of the defaults before a change (``BEFORE``): a sentence
    naming the algorithms of the suite without such a row, whose runs were given once, as their
    own (the family's queue gives them so where the studies left an algorithm's defaults as they
    were); [] where every one has its before row, or there are none."""
    if not any(a.endswith(BEFORE) for a in algos):
        return []
    alone = [
        a
        for a in algos
        if not a.endswith(BEFORE) and not tables.is_library(a) and f"{a}{BEFORE}" not in algos
    ]
    if not alone:
        return []
    return [
        f"No *(before)* row: {', '.join(alone)}. Their runs were given once, as their own: the "
        "family's queue (`benchmarks/family_records.py`) does so where an algorithm's study left "
        "its defaults as they were, its before-runs serving as its after-runs.",
        "",
    ]


def short_lines(loads: Sequence[Workload]) -> list[str]:
    """A paragraph naming the seeds that missed their env's target and ended by themselves well
    before the run's budget (``SHORT_OF_BUDGET`` of its ``--stop-train-time-s``, short of its
    env-step stop: a library baseline at its recipe's ``n_timesteps``), per env and
    configuration: where they ended and after how much of the budget; [] where none did."""
    found: dict[tuple[str, str], list[pd.Series]] = {}
    library = False
    for w in loads:
        missed = w.ttt
        if missed.empty:
            continue
        missed = missed[
            (missed["signal"] == w.signal) & (missed["target"] == w.target) & ~missed["reached"]
        ]
        ends = tables.trial_summary(w.selected).set_index(tables.TRIAL_KEY)
        for _, r in missed.iterrows():
            end = ends.loc[tuple(r[k] for k in tables.TRIAL_KEY)]
            budget_s, budget_steps = _stops(w.selected, r)
            short = end["train_time_s"] < SHORT_OF_BUDGET * budget_s
            if end["trial_status"] == STOPPED_EARLY and short and end["env_steps"] < budget_steps:
                found.setdefault((w.title, str(r["config"])), []).append(
                    pd.concat([end, pd.Series({"budget_s": budget_s})])
                )
                library |= tables.is_library(str(end["algo"]))
    if not found:
        return []

    def where(ends: list[pd.Series]) -> str:
        steps = sorted({int(e["env_steps"]) for e in ends})
        times = sorted(float(e["train_time_s"]) for e in ends)
        budgets = sorted({float(e["budget_s"]) for e in ends})
        took = fmt_time(times[0]) + (f"–{fmt_time(times[-1])}" if len(times) > 1 else "")
        at = fmt_int(steps[0]) + (f"–{fmt_int(steps[-1])}" if len(steps) > 1 else "")
        of = " or ".join(f"{b:,.0f} s" for b in budgets)
        seeds = f"{len(ends)} seed" + ("s" if len(ends) > 1 else "")
        return f"{seeds}, at {at} env steps after {took} of training of {of}"

    named = "; ".join(
        f"{config} on {env}: {where(ends)}" for (env, config), ends in sorted(found.items())
    )
    why = (
        " A library baseline ends at its recipe's `n_timesteps` (rl-baselines3-zoo's training "
        "horizon, to which its schedules are fitted: `sweeps/baselines/hyperparams.py`)."
        if library
        else ""
    )
    return [
        "**Ended before their budget without reaching the target**: "
        f"{named}. Their misses are counted where they ended (their '≥' times are theirs, not "
        f"the budget's), and say nothing of the training time they did not use.{why}",
        "",
    ]


def _stops(selected: pd.DataFrame, trial: pd.Series) -> tuple[float, float]:
    """The run's training-time and env-step stops for one trial (the run's ``stop``; inf where
    it has none)."""
    rows = selected
    for k in tables.TRIAL_KEY:
        rows = rows[rows[k] == trial[k]]
    try:
        stop = json.loads(str(rows["stop"].iloc[0])) if "stop" in rows else {}
    except (ValueError, IndexError):
        stop = {}
    if not isinstance(stop, dict):
        stop = {}
    return (
        float(stop.get("/".join(keys.TRAIN_TIME_S), math.inf)),
        float(stop.get("/".join(keys.ENV_STEPS), math.inf)),
    )


def estimate_lines(loads: Sequence[Workload]) -> list[str]:
    """A paragraph naming the runs whose periodic greedy estimate was RLlib's count of the first
    N episodes to end (no ``periodic_once`` in any of its iterations: runs of the four recorded
    before the suite played each episode once itself, ``keys.PERIODIC_ONCE``), per env and
    configuration; [] where every run's counted each episode once."""
    old: dict[str, Counter] = {}
    runs = 0
    for w in loads:
        for _, g in w.selected.groupby(tables.TRIAL_KEY, sort=True):
            if not g["greedy_return"].notna().any():
                continue  # no periodic evaluation: nothing estimated
            runs += 1
            once = g.get("periodic_once", pd.Series(dtype=float))
            # (a single-process baseline has played each episode once from the start)
            if not tables.is_library(str(g["algo"].iloc[0])) and not (once == 1).any():
                old.setdefault(w.title, Counter())[str(g["config"].iloc[0])] += 1
    if not old:
        return []
    count = sum(sum(c.values()) for c in old.values())
    others = "the others counted" if count < runs else "none counted"
    where = "; ".join(
        f"{env}: " + ", ".join(f"{config} ×{n}" for config, n in sorted(c.items()))
        for env, c in sorted(old.items())
    )
    return [
        f"**How the periodic greedy estimate counted.** It decides when a check runs, not the "
        f"target (always the check's seeded games). {count} of {runs} runs here took RLlib's "
        "count of the first N evaluation episodes to *end*, which leans to short episodes "
        "(low where a short episode is a failure, as CartPole's or a MinAtar game's: a "
        "crossing and its check can come late; high where it is a success, as Taxi's or "
        f"MountainCar's: checks run sooner and more often); {others} each episode once, from "
        f"its own seeded start. RLlib's count: {where}.",
        "",
    ]


def _table(
    group: Sequence[Workload],
    algos: Sequence[str],
    references: Callable[[Workload], pd.DataFrame | None],
) -> list[str]:
    header = ["env", "target", *algos, FASTEST, EVAL_SHARE]
    rows, fastest = [], Counter()
    for w in group:
        best = w.best
        winner = _fastest(best)
        if winner:
            fastest[winner] += 1
        fell = _collapsed(w, stability.random_return(references(w)))
        cells = {a: DASH if best.empty else _cell(best[best["algo"] == a], fell) for a in algos}
        target = DASH if math.isnan(w.target) else f"{w.target:g}"
        rows.append([w.title, target, *cells.values(), winner or DASH, eval_share(w.selected)])
    counts = ", ".join(f"{a} on {n} of {len(group)}" for a, n in fastest.most_common())
    return [markdown_table(header, rows), "", f"Fastest: {counts or 'none reached a target'}."]


def _fastest(best: pd.DataFrame) -> str | None:
    """The algorithm of the first of ``best`` (sorted best first) where it reached the target."""
    if best.empty or int(best["reached"].iloc[0]) == 0:
        return None
    return str(best["algo"].iloc[0])


def _cell(row: pd.DataFrame, fell: dict[str, int]) -> str:
    if row.empty:
        return DASH
    r = row.iloc[0]
    text = f"{int(r['reached'])}/{int(r['seeds'])}"
    if int(r["reached"]) > 0:
        text += " · " + fmt_bounded(r["time_all_median_s"], r["time_all_lower_bound"], fmt_time)
    if fell.get(r["config"]):
        text += f" · collapsed {fell[r['config']]}"
    return text


def _collapsed(w: Workload, random: float) -> dict[str, int]:
    """Per configuration, the seeds whose training ended below ``random`` after being above
    it (none without a random return)."""
    if math.isnan(random):
        return {}
    trials = stability.per_trial(w.selected, random)
    return {str(c): int(t["below_random"].sum()) for c, t in trials.groupby("config")}


def eval_share(selected: pd.DataFrame) -> str:
    """Periodic greedy evaluation's seconds over the training clock's, per trial at its end
    (``tables.trial_summary``; the confirmed target's checks excluded): the median and the
    largest, as percentages ('—' where the runs did not measure it)."""
    if selected.empty:
        return DASH
    share = tables.trial_summary(selected)["eval_share"].astype(float).dropna()
    if share.empty:
        return DASH
    return f"{share.median():.0%} ({share.max():.0%})"

"""ASHA's tables over the tidy runs table (pure functions, DataFrame in and out).

* :func:`asha_savings`: per sweep, the env steps it sampled against every trial run to its
  budget (trials × per-trial budget: an estimate of the full cost).
* :func:`asha_check`: per ASHA sweep whose configurations were run again to their full budget
  with FIFO (``--scheduler fifo --configs-from <the ASHA sweep>``), the two sweeps' best trials
  and the env steps each sampled, measured, against the suite's goals: ASHA's best within
  ``BEST_GAP`` of the full-budget best, at no more than ``SPENT_SHARE`` of its env steps.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.run_folder import COMPLETED, ERRORED, HP_PREFIX, INCOMPLETE, STOPPED_EARLY
from analysis.tables import best_trials, rank_trials, trial_summary

BEST_GAP = 0.05  # ASHA's best trial at least (1 - BEST_GAP) x the full-budget best
SPENT_SHARE = 0.40  # ASHA's env steps at most this share of the full-budget sweep's


def asha_savings(runs: pd.DataFrame) -> pd.DataFrame:
    """Per sweep: env steps spent vs. every trial run to its full budget, and the best trial's fate.

    spent = sum over trials of the env steps each sampled; full = trials x per-trial budget
    (``budget_env_steps``: the env-step stop criterion / ASHA max_t); saving = 1 - spent / full.
    The best trial "survived" when it ran to its budget (status completed).
    """
    trials = trial_summary(runs[runs["kind"] == "sweep"])
    if trials.empty:
        return pd.DataFrame()
    best = best_trials(trials).set_index("experiment")
    scheduler = runs.drop_duplicates("experiment").set_index("experiment")["scheduler"]
    rows = []
    for experiment, g in trials.groupby("experiment", sort=True):
        budget = float(g["budget_env_steps"].iloc[0]) if g["budget_env_steps"].notna().any() else 0
        spent = float(g["env_steps"].sum())
        full = len(g) * budget if budget else math.nan
        status = g["trial_status"].value_counts()
        b = best.loc[experiment] if experiment in best.index else None
        rows.append(
            {
                "env": g["env"].iloc[0],
                "variant": g["variant"].iloc[0],
                "experiment": experiment,
                "algo": g["algo"].iloc[0],
                "scheduler": scheduler.get(experiment, ""),
                "trials": len(g),
                COMPLETED: int(status.get(COMPLETED, 0)),
                STOPPED_EARLY: int(status.get(STOPPED_EARLY, 0)),
                ERRORED: int(status.get(ERRORED, 0)),
                INCOMPLETE: int(status.get(INCOMPLETE, 0)),
                "budget_env_steps": budget or math.nan,
                "spent_env_steps": spent,
                "full_env_steps": full,
                "saving_pct": 100.0 * (1.0 - spent / full) if full else math.nan,
                "best_trial": "" if b is None else b["trial_id"],
                "best_metric": math.nan if b is None else b["final_metric"],
                "best_status": "" if b is None else b["trial_status"],
                "best_survived": False if b is None else b["trial_status"] == COMPLETED,
            }
        )
    return pd.DataFrame(rows)


def _configuration(trial: pd.Series, columns: list[str]) -> tuple:
    """A trial's seed and searched values, comparable across sweeps (floats to 12 digits)."""

    def cell(value):
        if pd.isna(value):
            return None
        try:
            return float(f"{float(value):.12g}")
        except (TypeError, ValueError):
            return str(value)

    return tuple(cell(trial.get(c)) for c in columns)


def _configurations(trials: pd.DataFrame) -> list[tuple]:
    """Each trial's configuration: its seed and the searched values the sweep set."""
    searched = [c for c in trials.columns if c.startswith(HP_PREFIX) and trials[c].notna().any()]
    columns = ["seed"] + sorted(searched)
    return [_configuration(t, columns) for _, t in trials.iterrows()]


def _best(trials: pd.DataFrame) -> pd.Series | None:
    ranked = rank_trials(trials.dropna(subset=["final_metric"]))
    return None if ranked.empty else ranked.iloc[0]


def asha_check(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per ASHA sweep and its full-budget FIFO re-run (the sweep whose ``configs_from``
    names it): trials, whether the configurations are the same (seeds and searched values in
    trial order), each sweep's best trial (:func:`analysis.tables.rank_trials`: what the sweep
    hands you) with its final search metric and % of optimum, the ratio of the two bests, the
    env steps each sampled (all trials) and their ratio, where the full-budget best configuration
    ended under ASHA, and whether each goal was met. Empty when no such pair is in the table.
    Trials are matched by configuration (seed and searched values): Tune's trial ids are random."""
    sweeps = runs[runs["kind"] == "sweep"]
    if sweeps.empty or "configs_from" not in sweeps:
        return pd.DataFrame()
    info = sweeps.drop_duplicates("experiment").set_index("experiment")
    trials = trial_summary(sweeps)
    rows = []
    for full, source in info["configs_from"].items():
        if not source or source not in info.index or info.at[source, "scheduler"] != "asha":
            continue
        if info.at[full, "scheduler"] != "fifo":
            continue
        # Tune's trial ids are random: trials are matched by configuration, not by id or order.
        a = trials[trials["experiment"] == source]
        f = trials[trials["experiment"] == full]
        configs_a, configs_f = _configurations(a), _configurations(f)
        best_a, best_f = _best(a), _best(f)
        metric_a = math.nan if best_a is None else float(best_a["final_metric"])
        metric_f = math.nan if best_f is None else float(best_f["final_metric"])
        best_ratio = metric_a / metric_f if metric_f > 0 else math.nan
        spent_a, spent_f = float(a["env_steps"].sum()), float(f["env_steps"].sum())
        spent_ratio = spent_a / spent_f if spent_f > 0 else math.nan
        # The full-budget best configuration under ASHA (the ASHA trial with its configuration).
        under_asha = None
        if best_f is not None:
            wanted = configs_f[list(f["trial_id"]).index(best_f["trial_id"])]
            if wanted in configs_a:
                under_asha = a.iloc[configs_a.index(wanted)]
        rows.append(
            {
                "env": info.at[source, "env"],
                "variant": info.at[source, "variant"],
                "asha": source,
                "full": full,
                "trials_asha": len(a),
                "trials_full": len(f),
                "pruned": int((a["trial_status"] == STOPPED_EARLY).sum()),
                "same_configs": sorted(configs_a, key=repr) == sorted(configs_f, key=repr),
                "best_trial_asha": "" if best_a is None else best_a["trial_id"],
                "best_metric_asha": metric_a,
                "best_pct_asha": np.nan if best_a is None else best_a["final_pct_of_optimum"],
                "best_trial_full": "" if best_f is None else best_f["trial_id"],
                "best_metric_full": metric_f,
                "best_pct_full": np.nan if best_f is None else best_f["final_pct_of_optimum"],
                "best_ratio": best_ratio,
                "env_steps_asha": spent_a,
                "env_steps_full": spent_f,
                "spent_ratio": spent_ratio,
                "full_best_under_asha": "" if under_asha is None else under_asha["trial_id"],
                "full_best_under_asha_status": (
                    "" if under_asha is None else under_asha["trial_status"]
                ),
                "full_best_under_asha_env_steps": (
                    math.nan if under_asha is None else under_asha["env_steps"]
                ),
                "best_goal_met": bool(best_ratio >= 1.0 - BEST_GAP),
                "spent_goal_met": bool(spent_ratio <= SPENT_SHARE),
            }
        )
    return pd.DataFrame(rows)


def asha_pairs(runs: pd.DataFrame, asha: str, full: str) -> pd.DataFrame:
    """The full-budget sweep's trials, best first (:func:`analysis.tables.rank_trials`), each
    beside the ASHA trial of the same configuration: what ASHA kept and what it cut, and how
    far the cut ones would have gone."""
    sweeps = runs[runs["kind"] == "sweep"]
    a = trial_summary(sweeps[sweeps["experiment"] == asha])
    f = rank_trials(trial_summary(sweeps[sweeps["experiment"] == full]))
    configs_a = _configurations(a)
    rows = []
    for rank, (config, (_, t)) in enumerate(zip(_configurations(f), f.iterrows(), strict=True)):
        match = a.iloc[configs_a.index(config)] if config in configs_a else None
        rows.append(
            {
                "rank": rank + 1,
                "full_trial": t["trial_id"],
                "full_metric": t["final_metric"],
                "full_pct": t["final_pct_of_optimum"],
                "asha_trial": "" if match is None else match["trial_id"],
                "asha_status": "" if match is None else match["trial_status"],
                "asha_env_steps": math.nan if match is None else match["env_steps"],
                "asha_metric": math.nan if match is None else match["final_metric"],
            }
        )
    return pd.DataFrame(rows)

"""The report's sweep sections as Markdown lines: each sweep's trials and what ASHA saved, which
hyperparameters mattered and the best trial again, and ASHA against the same configurations
run to full budget. The cells of the tables that compare configurations are in
:mod:`analysis.sections`."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import tables
from analysis.asha import BEST_GAP, SPENT_SHARE, asha_pairs
from analysis.fmt import (
    DASH,
    METRICS,
    SIGNALS,
    fmt_float,
    fmt_int,
    fmt_pct,
    fmt_time,
    is_missing,
    markdown_table,
)
from analysis.hparams import MIN_TRIALS as MIN_IMPORTANCE_TRIALS
from analysis.run_folder import COMPLETED, ERRORED, INCOMPLETE, STOPPED_EARLY
from sweeps.harness.values import readable

# --- Sweeps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepHparams:
    """What a sweep says of its hyperparameters (``analysis.report`` computes it)."""

    importance: pd.Series  # name -> PED-ANOVA importance, highest first (empty: too few trials)
    chart: str | None  # its bar chart's file name
    command: str | None  # the best trial again, as a command line
    json_name: str | None  # the best trial's settings, a JSON file beside the report


def sweep_section(
    runs: pd.DataFrame,
    asha: pd.DataFrame,
    plot_for: dict[str, str],
    hparams_for: dict[str, SweepHparams] | None = None,
) -> list[str]:
    """What each sweep spent against its full budget, then each sweep's trials, its curves and
    what it says of its hyperparameters."""
    if asha.empty:
        return []
    lines = [
        "### Sweeps and ASHA savings",
        "",
        "Env steps the sweep sampled vs. running every trial to its full budget (trials × "
        "per-trial env-step budget). The best trial (by the final search metric) *survived* when "
        "it ran to its budget.",
        "",
    ]
    header = ["sweep", "scheduler", "trials", "completed", "stopped early", "errored"]
    header += ["env steps spent", "full budget", "saving", "best trial", "best metric"]
    header += ["best survived"]
    rows = [_savings_row(r) for _, r in asha.iterrows()]
    lines += [markdown_table(header, rows), ""]
    for experiment in asha["experiment"]:
        trials = tables.sweep_trials(runs, experiment)
        lines += _trials_table(runs, experiment, trials)
        if experiment in plot_for:
            lines += [f"![Trial curves of {experiment}]({plot_for[experiment]})", ""]
        lines += _hparams_lines(experiment, len(trials), (hparams_for or {}).get(experiment))
    return lines


def _savings_row(r: pd.Series) -> list[str]:
    """One sweep's trials by outcome, its env steps against its full budget, its best trial."""
    errored = str(r[ERRORED]) + (f" (+{r[INCOMPLETE]} incomplete)" if r[INCOMPLETE] else "")
    return [
        r["experiment"],
        r["scheduler"] or DASH,
        str(r["trials"]),
        str(r[COMPLETED]),
        str(r[STOPPED_EARLY]),
        errored,
        fmt_int(r["spent_env_steps"]),
        fmt_int(r["full_env_steps"]),
        fmt_pct(r["saving_pct"]),
        r["best_trial"] or DASH,
        fmt_float(r["best_metric"]),
        "yes" if r["best_survived"] else "no",
    ]


def _trials_table(runs: pd.DataFrame, experiment: str, trials: pd.DataFrame) -> list[str]:
    """A sweep's trials, best first: their hyperparameters, final returns, budget and status."""
    metric = runs.loc[runs["experiment"] == experiment, "metric"].iloc[0]
    hp = [c for c in trials.columns if c.startswith("hp/")]
    greedy = METRICS.get(metric) == SIGNALS["greedy_return"]  # else a column of its own
    header = ["rank", "trial", "seed", *(c[3:] for c in hp)]
    header += [f"final {METRICS.get(metric, metric)}"]
    header += [] if greedy else [f"final {SIGNALS['greedy_return']}"]
    header += ["env steps", "training time", "status"]
    rows = [
        [
            str(t["rank"]),
            t["trial_id"],
            fmt_int(t["seed"]),
            *(_fmt_hp(t[c]) for c in hp),
            fmt_float(t["final_metric"]),
            *([] if greedy else [fmt_float(t["final_greedy"])]),
            fmt_int(t["env_steps"]),
            fmt_time(t["train_time_s"]),
            t["trial_status"].replace("_", " "),
        ]
        for _, t in trials.iterrows()
    ]
    return [f"#### {experiment}", "", markdown_table(header, rows), ""]


def _fmt_hp(value) -> str:
    return DASH if is_missing(value) else readable(value)


def _hparams_lines(experiment: str, trials: int, h: SweepHparams | None) -> list[str]:
    if h is None:
        return []
    lines = []
    if h.importance.empty:
        lines += [
            f"Which hyperparameters mattered: not estimated ({trials} trials; PED-ANOVA needs "
            f"at least {MIN_IMPORTANCE_TRIALS} with a final metric).",
            "",
        ]
    else:
        top = ", ".join(f"{k} {v:.2f}" for k, v in h.importance.head(4).items())
        lines += [
            f"Which hyperparameters mattered (Optuna's PED-ANOVA importance of the final search "
            f"metric over {trials} trials; it sums to 1, and from one sweep's few trials it is a "
            f"rough guide): {top}.",
            "",
        ]
        if h.chart:
            lines += [f"![Hyperparameter importance in {experiment}]({h.chart})", ""]
    if h.command:
        lines += [
            "Its best trial again (its settings also in "
            + (f"`{h.json_name}`" if h.json_name else "the table")
            + "):",
            "",
            f"```bash\n{h.command}\n```",
            "",
        ]
    return lines


# --- ASHA against full budget -------------------------------------------------------------------


def asha_check_section(runs: pd.DataFrame, check: pd.DataFrame) -> list[str]:
    """ASHA against the same configurations run to full budget (analysis.asha.asha_check), and
    each configuration's fate under ASHA (analysis.asha.asha_pairs)."""
    if check.empty:
        return []
    gap, share = f"{100 * BEST_GAP:g}%", f"{100 * SPENT_SHARE:g}%"
    lines = [
        "### ASHA against the same configurations at full budget",
        "",
        "The ASHA sweep's configurations run again, one trial each, to the full env-step budget "
        "without early stopping (`--scheduler fifo --configs-from <the ASHA sweep>`). Best: "
        "each sweep's best trial by its final search metric, the one the sweep hands you. Env "
        "steps: sampled by all of a sweep's trials. Goals: ASHA's best within "
        f"{gap} of the full-budget best, at no more than {share} of its env steps.",
        "",
    ]
    header = ["ASHA sweep", "full-budget sweep", "trials", "same configurations"]
    header += ["ASHA's best", "full budget's best", "ASHA's / full budget's best"]
    header += ["env steps, ASHA", "env steps, full budget", "ASHA's / full budget's env steps"]
    header += ["full budget's best configuration under ASHA"]
    rows = [_asha_check_row(r) for _, r in check.iterrows()]
    lines += [markdown_table(header, rows), ""]
    for _, r in check.iterrows():
        lines += [_asha_verdict(r, share), ""]
    for _, r in check.iterrows():
        lines += _kept_and_cut(runs, r)
    return lines


def _asha_check_row(r: pd.Series) -> list[str]:
    """One ASHA sweep beside its full-budget rerun: trials, best trials, env steps."""
    trials = str(r["trials_asha"]) + (
        "" if r["trials_asha"] == r["trials_full"] else f" / {r['trials_full']}"
    )
    return [
        r["asha"],
        r["full"],
        f"{trials} ({r['pruned']} pruned by ASHA)",
        "yes" if r["same_configs"] else "no",
        _best_cell(r["best_trial_asha"], r["best_metric_asha"], r["best_pct_asha"]),
        _best_cell(r["best_trial_full"], r["best_metric_full"], r["best_pct_full"]),
        fmt_pct(100 * r["best_ratio"]),
        fmt_int(r["env_steps_asha"]),
        fmt_int(r["env_steps_full"]),
        fmt_pct(100 * r["spent_ratio"]),
        _fate_cell(r),
    ]


def _best_cell(trial: str, metric: float, pct: float) -> str:
    if not trial:
        return DASH
    of_optimum = "" if is_missing(pct) else f" = {fmt_pct(pct)} of optimum"
    return f"{fmt_float(metric)}{of_optimum} (trial {trial})"


def _fate_cell(r: pd.Series) -> str:
    """What ASHA did to the full budget's best configuration."""
    if not r["full_best_under_asha"]:
        return DASH
    status = r["full_best_under_asha_status"]
    if status == COMPLETED:
        return f"trial {r['full_best_under_asha']}: ran to its budget"
    steps = fmt_int(r["full_best_under_asha_env_steps"])
    return f"trial {r['full_best_under_asha']}: {status.replace('_', ' ')} at {steps} env steps"


def _asha_verdict(r: pd.Series, share: str) -> str:
    """Whether one ASHA sweep met the two goals (its best, its env steps)."""
    met = {True: "met", False: "not met"}
    verdict = (
        f"**{r['asha']}**: ASHA's best reached {fmt_pct(100 * r['best_ratio'])} of the "
        f"full-budget best (goal ≥ {100 * (1 - BEST_GAP):g}%: "
        f"{met[bool(r['best_goal_met'])]}) with {fmt_pct(100 * r['spent_ratio'])} of its env "
        f"steps (goal ≤ {share}: {met[bool(r['spent_goal_met'])]})."
    )
    if not r["same_configs"]:
        verdict += " The two sweeps' configurations differ: no like-for-like comparison."
    return verdict


def _kept_and_cut(runs: pd.DataFrame, r: pd.Series) -> list[str]:
    """Each configuration, best first at full budget, beside its trial under ASHA."""
    pairs = asha_pairs(runs, r["asha"], r["full"])
    header = ["rank at full budget", "trial", "final at full budget", "% of optimum"]
    header += ["ASHA's trial", "under ASHA", "env steps under ASHA", "final under ASHA"]
    rows = [
        [
            str(p["rank"]),
            p["full_trial"],
            fmt_float(p["full_metric"]),
            fmt_pct(p["full_pct"]),
            p["asha_trial"] or DASH,
            "ran to its budget"
            if p["asha_status"] == COMPLETED
            else p["asha_status"].replace("_", " ") or DASH,
            fmt_int(p["asha_env_steps"]),
            fmt_float(p["asha_metric"]),
        ]
        for _, p in pairs.iterrows()
    ]
    return [
        f"#### What ASHA kept and cut: {r['asha']} against {r['full']}",
        "",
        "Each configuration, best first at full budget, beside its trial under ASHA.",
        "",
        markdown_table(header, rows),
        "",
    ]

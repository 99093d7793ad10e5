"""The report's detail sections as Markdown lines: final performance, time to target, speedup,
scaling, sweeps, reproducibility and the appendix. Every cell is formatted here, once: the
summary (:mod:`analysis.summary`) shows the same strings for the same numbers, and
tests/test_analysis.py checks it. It runs past ~500 lines on purpose: splitting it would split
the one place where each cell's format is decided."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from analysis import stats, tables
from analysis.asha import BEST_GAP, SPENT_SHARE, asha_pairs
from analysis.collect import COMPLETED, ERRORED, INCOMPLETE, STOPPED_EARLY
from analysis.fmt import (
    DASH,
    METRICS,
    SIGNALS,
    fmt_bounded,
    fmt_estimate,
    fmt_float,
    fmt_int,
    fmt_pct,
    fmt_range,
    fmt_ratio,
    fmt_spread,
    fmt_time,
    is_missing,
    markdown_table,
)
from analysis.hparams import MIN_TRIALS as MIN_IMPORTANCE_TRIALS
from analysis.workload import Workload
from sweeps.harness.common import HELD_OUT_SEED, readable

# Column headers that the summary and the detail tables share (and the test matches on).
CONFIG = "configuration"
TARGET = "target"
REACHED = "reached"
TIME = "time to target, median of all seeds"
TIME_RANGE = "time, min–max of seeds that reached it"
STEPS = "env steps to target, median of all seeds"
STEPS_RANGE = "env steps, min–max of seeds that reached it"
TIME_KM = "time, Kaplan–Meier median [95% interval]"
STEPS_KM = "env steps, Kaplan–Meier median [95% interval]"
PCT = "% of optimum"
STEPS_PER_S = "env steps/s"
SPEEDUP = "speedup [95% interval]"
NOT_REACHED = "not reached"


# --- Cells ------------------------------------------------------------------------------------


def ttt_cells(r: pd.Series) -> dict[str, str]:
    """Time-to-target cells of one configuration at one signal and target."""
    reached = int(r["reached"]) > 0
    return {
        REACHED: f"{int(r['reached'])}/{int(r['seeds'])}",
        TIME: fmt_bounded(r["time_all_median_s"], r["time_all_lower_bound"], fmt_time),
        TIME_RANGE: fmt_range(r["time_min_s"], r["time_max_s"], fmt_time)
        if reached
        else NOT_REACHED,
        STEPS: fmt_bounded(r["steps_all_median"], r["steps_all_lower_bound"], fmt_int),
        STEPS_RANGE: fmt_range(r["steps_min"], r["steps_max"], fmt_int) if reached else NOT_REACHED,
        TIME_KM: _km_cell(r["km_time_s"], r["km_time_low_s"], r["km_time_high_s"], fmt_time),
        STEPS_KM: _km_cell(r["km_steps"], r["km_steps_low"], r["km_steps_high"], fmt_int),
    }


def _km_cell(value, low, high, fmt) -> str:
    """The Kaplan–Meier median with its interval; where fewer than half the seeds reached the
    target there is no median, only the interval's lower end."""
    if is_missing(value):
        return f"not by half the seeds [{fmt(low)}, ∞)" if not is_missing(low) else NOT_REACHED
    return fmt_estimate(value, low, high, fmt)


# What the interval columns mean, under every table that shows them.
INTERVALS_NOTE = (
    "Intervals are 95%. The Kaplan–Meier median treats a seed that missed as still running at "
    "its budget (scipy.stats.ecdf on censored data; interval from its log-log band): '∞' says "
    "too few seeds reached the target to bound it. A speedup's interval is a percentile "
    "bootstrap over seeds of the ratio of medians (scipy.stats.bootstrap, 9,999 resamples); "
    "with 3 seeds it is wide, and honest about it."
)


# Marks a % of optimum measured on the held-out episodes (``sweeps.evaluate``), not the last
# periodic greedy evaluation; HELD_OUT_NOTE says so under a table that shows it.
HELD_OUT_MARK = "(held out)"


def held_out_note(configs: pd.DataFrame) -> list[str]:
    """How a "(held out)" % of optimum was made, when a table shows one."""
    if configs.empty or "pct_held_out" not in configs or not configs["pct_held_out"].any():
        return []
    episodes = int(configs["final_eval_episodes"].max())
    return [
        f"{HELD_OUT_MARK}: the final checkpoint played greedily on {episodes} fixed start "
        f"states (episodes seeded {HELD_OUT_SEED}.., never seen in training, the same for every "
        "trial), as % of the exact DP optimal policy's mean return on the same episodes "
        "(`python -m sweeps.evaluate`; a sweep picks its best trial by it). Otherwise: the "
        "last periodic greedy evaluation (a few episodes from random start states) as % of the "
        "exact optimum.",
        "",
        *exact_note(configs),
    ]


def exact_note(configs: pd.DataFrame) -> list[str]:
    """The cab base variant's exact figures (``final_evaluation.json``'s ``exact``), when any
    configuration has one."""
    if "final_exact_pct" not in configs:
        return []
    exact = [(c["config"], c["final_exact_pct"]) for _, c in configs.iterrows()]
    exact = [(name, spread) for name, spread in exact if not pd.isna(spread[0])]
    if not exact:
        return []
    cells = "; ".join(f"{name}: {fmt_spread(spread, _pct2)}" for name, spread in exact)
    heuristic = configs["exact_heuristic_pct"].max()
    return [
        "Exactly, without episodes (base variant: a policy blind to the month's clock has one "
        "greedy action per state, evaluated by dynamic programming over the month, "
        f"`envs.optimum.evaluate_policy`): {cells}; the direct-ride heuristic "
        f"{_pct2(heuristic)}.",
        "",
    ]


def _pct2(value: float) -> str:
    return f"{value:.2f}%"


def _final(c: pd.Series, column: str, fmt=fmt_float) -> str:
    """A final value over seeds: 'IQM x [lo, hi]' from 5 seeds on (rliable's interquartile mean
    and its bootstrap interval), else 'median (min–max)'."""
    iqm = c.get(f"{column.removesuffix('_of_optimum')}_iqm")
    if isinstance(iqm, stats.Estimate) and iqm.has_interval:
        return f"IQM {fmt_estimate(iqm.value, iqm.low, iqm.high, fmt)}"
    return fmt_spread(c[column], fmt)


def final_cells(c: pd.Series) -> dict[str, str]:
    """Final-value cells of one configuration (median over seeds (min–max); from 5 seeds on,
    the interquartile mean with its 95% interval)."""
    return {
        "seeds": str(c["seeds"]),
        "env steps": fmt_spread(c["env_steps"], fmt_int),
        "training time": fmt_spread(c["train_time_s"], fmt_time),
        SIGNALS["return_mean"]: _final(c, "final_return"),
        SIGNALS["greedy_return"]: _final(c, "final_greedy"),
        PCT: _final(c, "final_pct_of_optimum", fmt_pct)
        + (f" {HELD_OUT_MARK}" if c.get("pct_held_out") else ""),
        STEPS_PER_S: fmt_spread(c["env_steps_per_s"], fmt_int),
    }


def speedup_cell(w: Workload, config: str, target: float) -> str:
    """Speedup against the single-runner DQN at the primary signal and ``target``."""
    s = w.speedup
    if s.empty:
        return DASH
    row = s[(s["config"] == config) & (s["signal"] == w.signal) & (s["target"] == target)]
    if not len(row):
        return DASH
    r = row.iloc[0]
    return fmt_estimate(r["speedup"], r["speedup_low"], r["speedup_high"], fmt_ratio)


def _budget(r: pd.Series) -> str:
    return (
        f"ran ≤ {fmt_time(r['budget_train_time_s'])}, ≤ {fmt_int(r['budget_env_steps'])} env steps"
    )


def names(items: Sequence[str]) -> str:
    return "; ".join(items)


# --- Detail -----------------------------------------------------------------------------------


def _final_eval_episodes(w: Workload) -> int:
    """Episodes of the final greedy evaluation (``sweeps.evaluate``); 0 when none ran."""
    if w.configs.empty or "final_eval_episodes" not in w.configs:
        return 0
    episodes = w.configs["final_eval_episodes"].dropna()
    return int(episodes.max()) if len(episodes) else 0


def performance_section(w: Workload, references: pd.DataFrame | None) -> list[str]:
    header = [CONFIG, "seeds", "env steps", "training time", SIGNALS["return_mean"]]
    header += [SIGNALS["greedy_return"], PCT, STEPS_PER_S]
    episodes = _final_eval_episodes(w)
    final_eval = f"final policy, greedy ({episodes} episodes)"
    if episodes:
        header.insert(5, final_eval)
    rows = [
        [
            c["config"],
            *(
                fmt_spread(c["final_eval"]) if h == final_eval else final_cells(c)[h]
                for h in header[1:]
            ),
        ]
        for _, c in w.configs.iterrows()
    ]
    if references is not None:
        for _, r in references.iterrows():
            optimum = r.get("optimum")
            for name in ("random", "heuristic", "optimum"):
                if name in r:
                    pct = 100.0 * r[name] / optimum if optimum else None
                    label = (
                        f"*{name} (reference, tm_seed {r['tm_seed']})*"
                        if "tm_seed" in r
                        else f"*{name} policy (reference, {r['episodes']} seeded episodes, "
                        "measured in these runs)*"
                    )
                    cells = [DASH] * (len(header) - 4) + [fmt_float(r[name]), fmt_pct(pct), DASH]
                    rows.append([label, *cells])
    return [
        "### Final performance",
        "",
        "Final values per configuration: median over seeds (min–max); from "
        f"{stats.IQM_MIN_SEEDS} seeds on, the interquartile mean (IQM, rliable's estimator: the "
        "mean of the middle half of the seeds) with its 95% percentile bootstrap interval. "
        "The training return is "
        "the exploring policy's; the greedy return is the latest greedy evaluation."
        + (
            f" The final policy's greedy return is the mean of {episodes} greedy episodes of "
            "each trial's last checkpoint, seeded the same for every trial "
            "(`python -m sweeps.evaluate`)."
            if episodes
            else ""
        ),
        "",
        markdown_table(header, rows),
        "",
        *held_out_note(w.configs),
        *_references_note(references),
    ]


def _references_note(references: pd.DataFrame | None) -> list[str]:
    """How the reference rows were measured (``analysis.report.reference_returns``)."""
    if references is None or references.empty or "exact_optimum" not in references:
        return []  # none, or a random policy measured by the runs (its row says so)
    r = references.iloc[0]
    return [
        f"Reference rows: each policy played on the held-out episodes ({int(r['episodes'])} "
        f"episodes seeded {int(r['seed'])}..; the random policy seeded {int(r['seed'])}), as % "
        "of the DP optimal policy's mean return on the same episodes (the exact optimum from the "
        f"uniform start: {fmt_float(r['exact_optimum'])}).",
        "",
    ]


def ttt_section(w: Workload, signal: str, heading: str) -> list[str]:
    """Time to every target on one signal; configurations that reached none fold into a line."""
    part = w.at(signal)
    lines = [heading, ""]
    if part.empty:
        return lines + ["No reward targets in run.json.", ""]
    lines += [
        f"First training wall-clock (evaluation excluded) and env-step count at which the "
        f"{SIGNALS[signal]} reaches each target. *reached* counts seeds; a seed that never "
        "reached the target is counted, never dropped. The median of all seeds counts such a "
        "seed at its budget: '≥' marks a median that is only a lower bound. " + INTERVALS_NOTE,
        "",
    ]
    none = part.groupby("config", sort=False)["reached"].max() == 0
    shown = part[~part["config"].map(none)]
    header = [CONFIG, TARGET, REACHED, TIME, TIME_KM, TIME_RANGE, STEPS, STEPS_KM, STEPS_RANGE]
    rows = [
        [r["config"], w.label(r["target"]), *(ttt_cells(r)[h] for h in header[2:])]
        for _, r in shown.iterrows()
    ]
    if rows:
        lines += [markdown_table(header, rows), ""]
    folded = part[part["config"].map(none)].drop_duplicates("config")
    if len(folded):
        items = [f"{r['config']} (0/{r['seeds']}, {_budget(r)})" for _, r in folded.iterrows()]
        lead = "Reached no target within budget" if rows else "No configuration reached a target"
        lines += [f"{lead}: {names(items)}.", ""]
    return lines


def speedup_section(w: Workload) -> list[str]:
    title = f"### Speedup against single-runner DQN ({SIGNALS[w.signal]})"
    s = w.speedup
    if w.baseline is None or s.empty:
        return [title, "", "No single-runner DQN configuration (1 env runner) in the runs.", ""]
    s = s[s["signal"] == w.signal]
    lines = [
        title,
        "",
        f"Baseline: `{w.baseline}`. Speedup = baseline median time to target / configuration "
        "median time (training wall-clock); env-steps ratio = the same for env steps (> 1: "
        "fewer samples). Shown only where both reached the target on every seed, the same "
        "seeds: no ratio rests on a seed that missed. Intervals: 95% percentile bootstrap over "
        "seeds; a speedup whose interval holds 1 is not one the seeds can tell from no speedup.",
        "",
    ]
    shown = s[s["speedup"].notna()]
    header = [CONFIG, TARGET, REACHED, f"baseline {REACHED}", SPEEDUP, "env-steps ratio [95%]"]
    rows = [
        [
            r["config"],
            w.label(r["target"]),
            f"{r['reached']}/{r['seeds']}",
            f"{r['baseline_reached']}/{r['baseline_seeds']}",
            fmt_estimate(r["speedup"], r["speedup_low"], r["speedup_high"], fmt_ratio),
            fmt_estimate(r["steps_ratio"], r["steps_ratio_low"], r["steps_ratio_high"], fmt_ratio),
        ]
        for _, r in shown.iterrows()
    ]
    if rows:
        lines += [markdown_table(header, rows), ""]
    for target, g in s[s["speedup"].isna()].groupby("target", sort=True):
        base = g.iloc[0]
        if base["baseline_reached"] < base["baseline_seeds"]:
            lines += [
                f"No speedup at {w.label(target)}: the baseline reached it on "
                f"{base['baseline_reached']}/{base['baseline_seeds']} seeds.",
                "",
            ]
            continue
        why = [
            f"{r['config']} ({r['why'].removeprefix(r['config'] + ' ')})" for _, r in g.iterrows()
        ]
        lines += [f"No speedup at {w.label(target)}: {names(why)}.", ""]
    return lines


def scaling_section(w: Workload, plot: str | None) -> list[str]:
    lines = ["### Scaling with env runners", ""]
    tp = w.throughput
    if tp.empty:
        return lines + ["No algorithm was benchmarked at two or more runner counts.", ""]
    scaled = (
        tp[tp["num_env_runners"] >= 1].groupby("algo")["num_env_runners"].nunique() >= 2
    ).any()
    lines += [
        "0 remote env runners means sampling in the learner's own process: its own row, not "
        "one runner. "
        + (
            "Speedup is against the fewest remote runners n_ref of each algorithm; parallel "
            "efficiency = speedup / (n / n_ref)."
            if scaled
            else "Only one remote runner count was measured: no speedup or efficiency to show."
        ),
        "",
        "#### Throughput",
        "",
    ]
    header = ["algorithm", "env runners", "seeds", STEPS_PER_S]
    header += ["speedup", "efficiency"] if scaled else []
    rows = []
    for _, r in tp.iterrows():
        med = (r["steps_per_s_median"], r["steps_per_s_min"], r["steps_per_s_max"])
        row = [r["algo"], _runners(r["num_env_runners"]), str(r["seeds"]), fmt_spread(med, fmt_int)]
        if scaled:
            row += [fmt_ratio(r["speedup"]), fmt_pct(100.0 * r["efficiency"])]
        rows.append(row)
    lines += [markdown_table(header, rows), ""]
    sc = w.scaling
    if len(sc) and scaled:
        header = ["algorithm", TARGET, "env runners", REACHED, TIME, SPEEDUP, "efficiency"]
        rows = []
        for _, r in sc.iterrows():
            row = [r["algo"], w.label(r["target"]), _runners(r["num_env_runners"])]
            row += [f"{r['reached']}/{r['seeds']}"]
            row += [fmt_bounded(r["time_median_s"], r["time_lower_bound"], fmt_time)]
            speedup = fmt_estimate(r["speedup"], r["speedup_low"], r["speedup_high"], fmt_ratio)
            rows.append(row + [speedup, fmt_pct(100.0 * r["efficiency"])])
        lines += [
            f"#### Time to target ({SIGNALS[w.signal]})",
            "",
            markdown_table(header, rows),
            "",
        ]
    if plot:
        lines += [f"![Throughput against env runners: {w.title}]({plot})", ""]
    return lines


def _runners(n: int) -> str:
    return "0 (in the learner)" if n == 0 else str(n)


# --- Sweeps and reproducibility ----------------------------------------------------------------


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

    def best(trial: str, metric: float, pct: float) -> str:
        if not trial:
            return DASH
        of_optimum = "" if is_missing(pct) else f" = {fmt_pct(pct)} of optimum"
        return f"{fmt_float(metric)}{of_optimum} (trial {trial})"

    def fate(r: pd.Series) -> str:
        if not r["full_best_under_asha"]:
            return DASH
        status = r["full_best_under_asha_status"]
        if status == COMPLETED:
            return f"trial {r['full_best_under_asha']}: ran to its budget"
        steps = fmt_int(r["full_best_under_asha_env_steps"])
        return f"trial {r['full_best_under_asha']}: {status.replace('_', ' ')} at {steps} env steps"

    rows = []
    for _, r in check.iterrows():
        trials = str(r["trials_asha"]) + (
            "" if r["trials_asha"] == r["trials_full"] else f" / {r['trials_full']}"
        )
        rows.append(
            [
                r["asha"],
                r["full"],
                f"{trials} ({r['pruned']} pruned by ASHA)",
                "yes" if r["same_configs"] else "no",
                best(r["best_trial_asha"], r["best_metric_asha"], r["best_pct_asha"]),
                best(r["best_trial_full"], r["best_metric_full"], r["best_pct_full"]),
                fmt_pct(100 * r["best_ratio"]),
                fmt_int(r["env_steps_asha"]),
                fmt_int(r["env_steps_full"]),
                fmt_pct(100 * r["spent_ratio"]),
                fate(r),
            ]
        )
    lines += [markdown_table(header, rows), ""]
    for _, r in check.iterrows():
        met = {True: "met", False: "not met"}
        verdict = (
            f"**{r['asha']}**: ASHA's best reached {fmt_pct(100 * r['best_ratio'])} of the "
            f"full-budget best (goal ≥ {100 * (1 - BEST_GAP):g}%: "
            f"{met[bool(r['best_goal_met'])]}) with {fmt_pct(100 * r['spent_ratio'])} of its env "
            f"steps (goal ≤ {share}: {met[bool(r['spent_goal_met'])]})."
        )
        if not r["same_configs"]:
            verdict += " The two sweeps' configurations differ: no like-for-like comparison."
        lines += [verdict, ""]
    for _, r in check.iterrows():
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
        lines += [
            f"#### What ASHA kept and cut: {r['asha']} against {r['full']}",
            "",
            "Each configuration, best first at full budget, beside its trial under ASHA.",
            "",
            markdown_table(header, rows),
            "",
        ]
    return lines


@dataclass(frozen=True)
class SweepHparams:
    """What a sweep says of its hyperparameters (``analysis.report`` computes it)."""

    importance: pd.Series  # name -> PED-ANOVA importance, highest first (empty: too few trials)
    chart: str | None  # its bar chart's file name
    command: str | None  # the best trial again, as a command line
    json_name: str | None  # the best trial's settings, a JSON file beside the report


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


def sweep_section(
    runs: pd.DataFrame,
    asha: pd.DataFrame,
    plot_for: dict[str, str],
    hparams_for: dict[str, SweepHparams] | None = None,
) -> list[str]:
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
    rows = []
    for _, r in asha.iterrows():
        errored = str(r[ERRORED]) + (f" (+{r[INCOMPLETE]} incomplete)" if r[INCOMPLETE] else "")
        rows.append(
            [
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
        )
    lines += [markdown_table(header, rows), ""]
    for experiment in asha["experiment"]:
        trials = tables.sweep_trials(runs, experiment)
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
        lines += [f"#### {experiment}", "", markdown_table(header, rows), ""]
        if experiment in plot_for:
            lines += [f"![Trial curves of {experiment}]({plot_for[experiment]})", ""]
        lines += _hparams_lines(experiment, len(trials), (hparams_for or {}).get(experiment))
    return lines


def _fmt_hp(value) -> str:
    return DASH if is_missing(value) else readable(value)


def _commit_cell(experiment: pd.Series, width: int | None = None) -> str:
    """A run's commit, flagged when it ran from a modified working tree (run.json git_dirty)."""
    commit = experiment["git_commit"]
    if not commit:
        return DASH
    dirty = str(experiment.get("git_dirty", "")) == "true"
    return f"`{commit[:width]}`" + (" + uncommitted changes" if dirty else "")


def reproducibility_section(
    runs: pd.DataFrame,
    skipped: Sequence[str],
    deduped: Sequence[str] = (),
    repaired: Sequence[str] = (),
) -> list[str]:
    exps = runs.drop_duplicates("experiment").sort_values(["env", "variant", "kind", "experiment"])
    n_trials = runs.groupby("experiment")["trial_id"].nunique()
    header = ["experiment", "kind", "algorithm", "env", "variant", "trials", "status"]
    header += ["started", "ended", "load (1 min)", "git commit"]
    rows = [
        [
            e["experiment"],
            e["kind"],
            e["algo"],
            e["env"],
            e["variant"] or DASH,
            str(n_trials[e["experiment"]]),
            e["run_status"] or DASH,
            e["started_at"] or DASH,
            e["ended_at"] or DASH,
            e.get("load") if isinstance(e.get("load"), str) and e.get("load") else DASH,
            _commit_cell(e, 12),
        ]
        for _, e in exps.iterrows()
    ]
    lines = ["## Reproducibility", "", "### Runs", "", markdown_table(header, rows), ""]
    lines += ["### Commands", "", "The exact command that produced each run (from run.json):", ""]
    lines += ["```bash"]
    for _, e in exps.iterrows():
        lines += [f"# {e['experiment']}", e["command"] or "# (command not recorded)"]
    lines += ["```", ""]

    def grouped(cols: list[str]) -> list[list[str]]:
        out = []
        for keys, g in exps.groupby(cols, sort=True):
            keys = keys if isinstance(keys, tuple) else (keys,)
            out.append([*(str(k) if str(k) else DASH for k in keys), ", ".join(g["experiment"])])
        return out

    machine_cols = ["cpus", "gpus", "cpu_model", "platform"]
    lines += ["### Machines", ""]
    lines += [
        markdown_table(
            ["CPUs", "GPUs", "CPU model", "platform", "experiments"],
            [[fmt_int(r[0]) if r[0] != DASH else DASH, *r[1:]] for r in grouped(machine_cols)],
        ),
        "",
    ]
    version_cols = ["ray_version", "torch_version", "python_version"]
    lines += ["### Package versions", ""]
    lines += [markdown_table(["ray", "torch", "python", "experiments"], grouped(version_cols)), ""]
    commits = sorted({_commit_cell(e) for _, e in exps.iterrows() if e["git_commit"]})
    lines += ["### Git commits", ""] + [f"- {c}" for c in commits] + [""]
    if skipped:
        lines += ["### Skipped while collecting", ""] + [f"- {s}" for s in skipped] + [""]
    if deduped:
        lines += (
            [
                "### Rows reported twice",
                "",
                "A trial restored from a checkpoint reports the iterations after it again; each "
                "(trial, iteration) is counted once, from its last report.",
                "",
            ]
            + [f"- {d}" for d in deduped]
            + [""]
        )
    if repaired:
        lines += (
            [
                "### Training clocks repaired",
                "",
                "These trials were restored from a checkpoint by a version of the suite whose "
                "training clock started again from zero at a restore; their clock (time to "
                "target, env steps/s) was continued from its value at the checkpoint.",
                "",
            ]
            + [f"- {r}" for r in repaired]
            + [""]
        )
    return lines


def appendix_section(w: Workload, plot: str | None) -> list[str]:
    """The secondary signal of one workload: its time to target and its curves."""
    heading = f"### {w.title}: {SIGNALS[w.secondary]}"
    lines = ttt_section(w, w.secondary, heading)
    if plot:
        lines += [f"![{SIGNALS[w.secondary].capitalize()}: {w.title}]({plot})", ""]
    return lines

"""The report's detail sections of one workload as Markdown lines: final performance, time to
target, speedup and the appendix (scaling with env runners is in :mod:`analysis.scaling`, the
sweeps' sections in :mod:`analysis.sweep_sections`, reproducibility in
:mod:`analysis.reproducibility`). Every cell that compares configurations is formatted here,
once: the summary (:mod:`analysis.summary`) shows the same strings for the same numbers, and
tests/test_analysis.py checks it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from analysis import stats
from analysis.fmt import (
    DASH,
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
from analysis.tables import CONFIRMED, LIBRARY_NAME, SIGNAL_NAMES
from analysis.tables import spread as spread_of
from analysis.workload import Workload
from sweeps.harness.files import HELD_OUT_SEED

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
# The confirmed target (sweeps/harness/confirm.py) beside the first crossing
CROSSING_KM = "first crossing: time, Kaplan–Meier median [95% interval]"
CROSSING_STEPS_KM = "first crossing: env steps, Kaplan–Meier median [95% interval]"
CHECK = "confirming evaluation, median of seeds (min–max) ± 95% half-width"
CHECKS = "checks run, median of seeds (min–max)"
POLICY_NOTE = (
    "the policy whose figure judged the crossing: DQN's and Ape-X's greedy one; IMPALA's and "
    "APPO's sampled as they act in training where the training return judges, greedy where the "
    "greedy evaluation does, the other figure beside"
)


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
        TIME_KM: km_cell(r["km_time_s"], r["km_time_low_s"], r["km_time_high_s"], fmt_time),
        STEPS_KM: km_cell(r["km_steps"], r["km_steps_low"], r["km_steps_high"], fmt_int),
    }


def km_cell(value, low, high, fmt) -> str:
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
    "with a handful of seeds it is wide, and honest about it."
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


EVAL_SHARE = "periodic evaluation, % of training clock"
NO_SPREAD = (math.nan, math.nan, math.nan)


def _has_eval_share(configs: pd.DataFrame) -> bool:
    """Whether the runs measured periodic evaluation's cost (runs before it did not)."""
    if "eval_share" not in configs:
        return False
    return any(not is_missing(v[0]) and v[0] > 0 for v in configs["eval_share"])


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
        EVAL_SHARE: fmt_spread(tuple(100.0 * v for v in c.get("eval_share", NO_SPREAD)), fmt_pct),
    }


def speedup_cell(w: Workload, config: str, target: float, library: bool = False) -> str:
    """Speedup against the single-runner DQN (``library``: against the library baseline) at
    the primary signal and ``target``."""
    s = w.library_speedup if library else w.speedup
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


def _has_sampled_eval(w: Workload) -> bool:
    """Whether a configuration's final policy also played sampled episodes (``--sampled``)."""
    if w.configs.empty or "final_eval_sampled" not in w.configs:
        return False
    return any(not is_missing(spread[0]) for spread in w.configs["final_eval_sampled"])


def _apex_return_note(configs: pd.DataFrame) -> str:
    """Ape-X's games each explore at their own fixed ε; a sweep may count only the near-greedy
    ones in the training return (``ApexDQNConfig.training_return_max_epsilon``)."""
    if configs.empty or "algo" not in configs or not (configs["algo"] == "apex").any():
        return ""
    return (
        " Ape-X's games each explore at their own fixed ε; where its sweep sets "
        "`training_return_max_epsilon` (Pong: DQN's final ε, 0.01), Ape-X's training return "
        "counts only the games at or below it, and RLlib's mean over all games is in the "
        "results as `env_runners/rllib_episode_return_mean`."
    )


def performance_section(w: Workload, references: pd.DataFrame | None) -> list[str]:
    header = [CONFIG, "seeds", "env steps", "training time", SIGNALS["return_mean"]]
    header += [SIGNALS["greedy_return"], PCT, STEPS_PER_S]
    episodes = _final_eval_episodes(w)
    final_eval = f"final policy, greedy ({episodes} episodes)"
    sampled_eval = f"final policy, sampled ({episodes} episodes)"
    sampled = bool(episodes) and _has_sampled_eval(w)
    if episodes:
        header[5:5] = [final_eval, *([sampled_eval] if sampled else [])]
    final_evals = {final_eval: "final_eval", sampled_eval: "final_eval_sampled"}
    shares = _has_eval_share(w.configs)
    if shares:
        header.append(EVAL_SHARE)
    rows = [
        [
            c["config"],
            *(
                fmt_spread(c[final_evals[h]]) if h in final_evals else final_cells(c)[h]
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
                    extra = int(shares)  # the evaluation-cost column, after the steps/s one
                    cells = [DASH] * (len(header) - 4 - extra)
                    cells += [fmt_float(r[name]), fmt_pct(pct), DASH] + [DASH] * extra
                    rows.append([label, *cells])
    return [
        "### Final performance",
        "",
        "Final values per configuration: median over seeds (min–max); from "
        f"{stats.IQM_MIN_SEEDS} seeds on, the interquartile mean (IQM, rliable's estimator: the "
        "mean of the middle half of the seeds) with its 95% percentile bootstrap interval. "
        "The training return is "
        "the exploring policy's; the greedy return is the latest greedy evaluation."
        + _apex_return_note(w.configs)
        + (
            f" The final policy's greedy return is the mean of {episodes} greedy episodes of "
            "each trial's last checkpoint, seeded the same for every trial "
            "(`python -m sweeps.evaluate`)."
            if episodes
            else ""
        )
        + (
            " The sampled return is the mean of the same episodes played with the actions drawn "
            "from the policy's distribution, as it acts in training (`--sampled`; policy-gradient "
            "methods only: a Q-learner's policy is its greedy one). A policy-gradient method "
            "trains the distribution, not its arg-max: where the greedy figure falls far below "
            "the sampled one, the arg-max policy locks into games the sampled one does not play."
            if sampled
            else ""
        )
        + (
            " Periodic evaluation's cost is its seconds (the confirming checks' left out) over "
            "the training clock's, at the end of each seed (`--eval-share` caps it: an "
            "evaluation that would take it over is skipped)."
            if shares
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


def crossing_cells(w: Workload, r: pd.Series) -> dict[str, str]:
    """The first crossing's cells of the configuration of the confirmed-signal row ``r`` (its
    Kaplan–Meier medians of time and env steps), and its confirming checks' figures."""
    first = w.at(w.crossing, r["target"])
    first = first[first["config"] == r["config"]]
    cells = {CROSSING_KM: NOT_REACHED, CROSSING_STEPS_KM: NOT_REACHED}
    if len(first):
        f = ttt_cells(first.iloc[0])
        cells = {CROSSING_KM: f[TIME_KM], CROSSING_STEPS_KM: f[STEPS_KM]}
    return {**cells, **check_cells(r)}


def check_cells(r: pd.Series) -> dict[str, str]:
    """A confirmed-signal row's checks: the confirming check's mean over the seeds that
    confirmed (median, min–max, the widest 95% half-width), the other policy's figure on the
    same episodes (greedy where the sampled policy judged, sampled where the greedy one did),
    and how many checks ran."""
    values = r.get("check_returns")
    if not isinstance(values, tuple):
        return {CHECK: DASH, CHECKS: DASH}
    reached = [bool(x) for x in r["reached_flags"]]
    picked = [v for v, hit in zip(values, reached, strict=True) if hit]
    halves = [h for h, hit in zip(r["check_ci95s"], reached, strict=True) if hit]
    greedy = [g for g, hit in zip(r["check_greedys"], reached, strict=True) if hit]
    sampled = [g for g, hit in zip(r["check_sampleds"], reached, strict=True) if hit]
    check = DASH
    if picked:
        widest = max((h for h in halves if not is_missing(h)), default=float("nan"))
        check = fmt_spread(spread_of(pd.Series(picked)), fmt_float) + f" ± {fmt_float(widest)}"
        # the other policy beside: greedy where the sampled one judged, else sampled
        on_greedy = all(g == v for g, v in zip(greedy, picked, strict=True))
        other, name = (sampled, "sampled") if on_greedy else (greedy, "greedy")
        if any(not is_missing(x) for x in other):
            check += f"; {name} {fmt_spread(spread_of(pd.Series(other)), fmt_float)}"
    checks = fmt_spread(spread_of(pd.Series(r["checks_values"])), fmt_int)
    return {CHECK: check, CHECKS: checks}


def confirmed_section(w: Workload) -> list[str]:
    """Per configuration that confirmed its target: the first crossing and the confirmed
    target side by side (Kaplan–Meier medians of time and env steps), the confirming checks'
    figures and how many checks ran; '' for runs that stopped at the first crossing."""
    part = w.at(CONFIRMED)
    if part.empty:
        return []
    lines = [
        "### Confirmed target against the first crossing",
        "",
        "Per configuration: the first training wall-clock and env-step count at which the "
        f"{SIGNALS[w.crossing]} crossed the target (*first crossing*), and at which a check "
        "confirmed it (the policy's mean over the seeded episodes of a check reached the "
        "target; the check ran after that iteration, off the training clock). The confirming "
        "evaluation is each confirmed seed's check, played by " + POLICY_NOTE + ". A seed whose "
        "checks all fell short is counted as not reached at its budget. " + INTERVALS_NOTE,
        "",
    ]
    header = [CONFIG, TARGET, REACHED, TIME_KM, STEPS_KM, CROSSING_KM, CROSSING_STEPS_KM]
    header += [CHECK, CHECKS]
    rows = []
    for _, r in part.iterrows():
        cells = {**ttt_cells(r), **crossing_cells(w, r)}
        rows.append([r["config"], w.label(r["target"]), *(cells[h] for h in header[2:])])
    return lines + [markdown_table(header, rows), ""]


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
    # A configuration whose runs never recorded the signal (Pong's greedy evaluation return:
    # periodic evaluation off) had nothing to reach: said so, not counted as a miss.
    if not rows and len(folded) and folded["config"].map(w.finals(signal)).isna().all():
        return [
            heading,
            "",
            f"Not measured in training: no run recorded the {SIGNALS[signal]}.",
            "",
        ]
    if len(folded):
        items = [f"{r['config']} (0/{r['seeds']}, {_budget(r)})" for _, r in folded.iterrows()]
        lead = "Reached no target within budget" if rows else "No configuration reached a target"
        lines += [f"{lead}: {names(items)}.", ""]
    return lines


def speedup_section(w: Workload, library: bool = False) -> list[str]:
    """Every configuration against the single-runner DQN, or (``library``) against the library a
    user would pick instead (``Workload.library``: Stable-Baselines3's best; nothing where the
    runs hold none)."""
    if library:
        if w.library is None:
            return []
        title = f"### Speedup against {LIBRARY_NAME} ({SIGNAL_NAMES[w.signal]})"
        s, base = w.library_speedup, w.library
        lead = (
            f"Baseline: `{base}`, the library a user would pick instead (one process, one "
            "thread, rl-zoo3's tuned hyperparameters where the zoo has the env: "
            "`sweeps/baselines/`), its best configuration here. "
        )
    else:
        title = f"### Speedup against single-runner DQN ({SIGNAL_NAMES[w.signal]})"
        s, base = w.speedup, w.baseline
        lead = f"Baseline: `{base}`. "
    if base is None or s.empty:
        return [title, "", "No single-runner DQN configuration (1 env runner) in the runs.", ""]
    s = s[s["signal"] == w.signal]
    lines = [
        title,
        "",
        lead + "Speedup = baseline median time to target / configuration "
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


def appendix_section(w: Workload, plot: str | None) -> list[str]:
    """The secondary signal of one workload: its time to target and its curves."""
    heading = f"### {w.title}: {SIGNALS[w.secondary]}"
    lines = ttt_section(w, w.secondary, heading)
    if plot:
        lines += [f"![{SIGNALS[w.secondary].capitalize()}: {w.title}]({plot})", ""]
    return lines

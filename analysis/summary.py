"""The summary that opens a report: per workload, each algorithm's best configuration at the
target on the primary metric, one computed sentence naming the winner and by how much, and the
time-to-target plot. Its cells come from :mod:`analysis.sections`, the same strings as the
detail tables below it."""

from __future__ import annotations

import math

import pandas as pd

from analysis import stability, stats, tables
from analysis.fmt import (
    SIGNAL_NOTES,
    SIGNALS,
    fmt_bounded,
    fmt_estimate,
    fmt_float,
    fmt_ratio,
    fmt_time,
    is_missing,
    markdown_table,
)
from analysis.sections import (
    CHECK,
    CONFIG,
    CROSSING_KM,
    CROSSING_STEPS_KM,
    INTERVALS_NOTE,
    PCT,
    POLICY_NOTE,
    REACHED,
    SPEEDUP,
    STEPS,
    STEPS_PER_S,
    TIME,
    TIME_KM,
    TIME_RANGE,
    crossing_cells,
    final_cells,
    held_out_note,
    names,
    speedup_cell,
    ttt_cells,
)
from analysis.workload import Workload


def summary_section(
    w: Workload,
    plot: str | None,
    references: pd.DataFrame | None = None,
    km_plot: str | None = None,
) -> list[str]:
    """The workload's answer: each algorithm's best configuration at the target, one computed
    sentence naming the winner and by how much, the time-to-target plot; on an env without a
    target, each configuration's final returns instead. ``references``: the random policy a
    generic env's runs measured, stated under the table."""
    lines = [f"### {w.title}", ""]
    if is_missing(w.target):
        if w.kind.has_targets:
            return lines + ["No reward targets in run.json: nothing to summarise.", ""]
        return (
            lines
            + stability.collapse_line(w, references)
            + _without_target(w)
            + _random_line(references)
        )
    if w.best.empty:
        why = "no benchmark, and no sweep with a best trial (a finite final search metric)"
        return lines + [f"Nothing to compare: {why}.", ""] + _missed_note(w)
    answer = library_verdict(w)
    if answer:  # said first: is the suite worth it over the library a user would pick?
        lines += [answer, ""]
    lines += stability.collapse_line(w, references)
    lines += [_how_judged(w), ""]
    lines += _reached_table(w)
    lines += _not_reached(w)
    lines += [verdict(w), ""]
    lines += _machines_note(w)
    lines += _speed_note(w)
    lines += _random_line(references)
    lines += w.kind.rules_note()
    lines += _missed_note(w)
    if plot:
        lines += [f"![Time to {w.label(w.target)}: {w.title}]({plot})", ""]
    if km_plot:
        lines += [
            f"![Fraction of seeds at {w.label(w.target)} by training time and env steps "
            f"(Kaplan–Meier): {w.title}]({km_plot})",
            "",
        ]
    return lines


def _how_judged(w: Workload) -> str:
    """What the table judges by, its target, how a row is chosen and what its cells mean."""
    fallback = w.crossing == "return_mean" and w.selected["greedy_return"].notna().any()
    baseline = w.baseline
    judged = (
        f"Judged by the **{SIGNALS[w.crossing]}** ({SIGNAL_NOTES[w.crossing]}"
        + ("; greedy evaluation did not run for every configuration" if fallback else "")
        + ")"
    )
    if w.confirmed:
        judged = f"{confirmed_note(w)} The first crossing is that of the {SIGNALS[w.crossing]}"
    return (
        judged + "; target "
        f"**{w.label(w.target)}**, the highest of the workload's targets. One row per "
        "algorithm: its best configuration (most seeds reaching the target, then fastest). "
        "Times are training wall-clock, evaluation excluded; a median marked ≥ counts seeds that "
        "missed at their budget. "
        + (
            f"Speedup: against `{baseline}`, only where both reached the target on every seed."
            if baseline
            else "No single-runner DQN in these runs: no speedup column."
        )
        + f" {INTERVALS_NOTE}"
    )


def _final_value(w: Workload) -> str:
    """The final figure the summary shows: % of optimum where the optimum is known (and above
    0: a share of a negative one reads backwards)."""
    return PCT if not is_missing(w.optimum) and w.optimum > 0 else SIGNALS[w.crossing]


def confirmed_note(w: Workload) -> str:
    """How a confirmed target is reached, in the words of the runs' records."""
    episodes = w.selected["confirm_episodes"].dropna()
    n = f"{int(episodes.min())}" if len(episodes) else "the"
    if len(episodes) and episodes.min() != episodes.max():
        n = f"{int(episodes.min())}–{int(episodes.max())}"
    return (
        f"A target counts **when the policy plays it**: where the {SIGNALS[w.crossing]} "
        f"crossed it, the policy played {n} seeded episodes (the same in every run; off the "
        "training clock), and the target was reached where their mean reached it, else "
        "training went on to the next crossing. The policy that plays is " + POLICY_NOTE + ". "
        "The time to the confirmed target is the training time of the iteration the "
        "confirming check followed; the first crossing's is beside it."
    )


def _reached_table(w: Workload) -> list[str]:
    """One row per algorithm that reached the target: its time to target, final figure and
    speedup; how a held-out figure was made under it."""
    configs = w.configs.set_index("config")
    reached = w.best[w.best["reached"] > 0]
    final = f"final {_final_value(w)}"
    baseline = w.baseline
    header = [CONFIG, REACHED, TIME, TIME_KM, TIME_RANGE, STEPS, final, STEPS_PER_S]
    if w.confirmed:
        header[6:6] = [CROSSING_KM, CROSSING_STEPS_KM, CHECK]
    header += [f"{SPEEDUP} vs {baseline}"] if baseline else []
    library = w.library
    header += [f"{SPEEDUP} vs {library}"] if library else []
    rows = []
    for _, r in reached.iterrows():
        cells = {CONFIG: r["config"], **ttt_cells(r), **final_cells(configs.loc[r["config"]])}
        if w.confirmed:
            cells.update(crossing_cells(w, r))
        cells[final] = cells[_final_value(w)]
        cells[f"{SPEEDUP} vs {baseline}"] = speedup_cell(w, r["config"], w.target)
        if library:
            cells[f"{SPEEDUP} vs {library}"] = speedup_cell(w, r["config"], w.target, True)
        rows.append([cells[h] for h in header])
    if not rows:
        return []
    return [
        markdown_table(header, rows),
        "",
        *held_out_note(w.configs[w.configs["config"].isin(reached["config"])]),
    ]


def _not_reached(w: Workload) -> list[str]:
    """The algorithms whose best configuration missed the target, with their final figure."""
    missed = w.best[w.best["reached"] == 0]
    if not len(missed):
        return []
    configs = w.configs.set_index("config")
    value = _final_value(w)
    items = [
        f"{r['config']} ({r['reached']}/{r['seeds']} seeds; final {value} "
        f"{final_cells(configs.loc[r['config']])[value]})"
        for _, r in missed.iterrows()
    ]
    lead = (
        "Not reached within budget"
        if (w.best["reached"] > 0).any()
        else f"No algorithm reached {w.label(w.target)} within budget"
    )
    return [f"{lead}: {names(items)}.", ""]


def _random_line(references: pd.DataFrame | None) -> list[str]:
    """A generic env's random-policy reference, in words (the detail table has its row)."""
    if references is None or references.empty or "episodes" not in references:
        return []
    r = references.iloc[0]
    return [
        f"A uniformly random policy scores {fmt_float(r['random'])} (mean of {r['episodes']} "
        "seeded episodes, measured by these runs).",
        "",
    ]


def _without_target(w: Workload) -> list[str]:
    """No target (no --target, no reward_threshold in the env's spec): say so, and show each
    configuration's final returns; the learning curves are in the detail below."""
    lines = [
        "No reward target: the runs were given no `--target` and the env's spec has no "
        "`reward_threshold`, so there is no time to target to compare. Final returns per "
        "configuration (median over seeds, min–max) instead; the learning curves are under "
        "*detail*.",
        "",
    ]
    if w.configs.empty:
        return lines + ["No configuration reported a result.", ""]
    header = [CONFIG, "seeds", "env steps", "training time"]
    header += [SIGNALS["greedy_return"], SIGNALS["return_mean"], STEPS_PER_S]
    rows = [
        [c["config"], *(final_cells(c)[h] for h in header[1:])] for _, c in w.configs.iterrows()
    ]
    lines += [markdown_table(header, rows), ""]
    finals = w.finals(w.crossing).dropna()
    if len(finals):
        top = finals.sort_values(ascending=False, kind="stable").index[0]
        lines += [
            f"**Highest final {SIGNALS[w.crossing]}: {top}** ({fmt_float(finals[top])}, median "
            "over seeds); without a target this is not a time-to-reward answer.",
            "",
        ]
    return lines


def verdict(w: Workload) -> str:
    """One sentence naming the best configuration and by how much, computed from the table."""
    best, target = w.best, w.label(w.target)
    if w.confirmed:
        target = f"{target} (confirmed)"
    everywhere = best[best["reached"] == best["seeds"]]
    if everywhere.empty:
        partial = best[best["reached"] > 0]
        if len(partial):
            r = partial.iloc[0]
            return (
                f"**No configuration reached {target} on every seed**; {r['config']} came "
                f"closest ({r['reached']}/{r['seeds']} seeds)."
            )
        finals = w.finals(w.crossing).dropna()
        if finals.empty:
            return f"**No configuration reached {target}** within its budget."
        top = finals.sort_values(ascending=False, kind="stable").index[0]
        return (
            f"**No configuration reached {target}** within its budget; the highest final "
            f"{SIGNALS[w.crossing]} was {fmt_float(finals[top])} ({top})."
        )
    win = everywhere.iloc[0]
    n = int(win["seeds"])
    median = f"median {fmt_time(win['time_all_median_s'])} of training over {n}/{n} seeds"
    others = best[best["config"] != win["config"]]
    if others.empty:
        text = f"**{win['config']} reaches {target}**: {median}"
    else:
        nxt = others.iloc[0]
        text = _against_next(win, nxt, target, median, w.baseline)
    if w.baseline == win["config"]:
        text += " (it is the single-runner DQN baseline)"
    elif w.baseline and (others.empty or others.iloc[0]["config"] != w.baseline):
        text += _against_baseline(w, win)
    return text + "."


def library_verdict(w: Workload) -> str:
    """One sentence: which is faster to the target, the suite's fastest configuration or the
    library a user would pick instead (``Workload.library``), and whether the seeds can tell;
    "" where the runs hold no library baseline."""
    library = w.library
    if library is None or w.best.empty:
        return ""
    target = w.label(w.target) + (" (confirmed)" if w.confirmed else "")
    at = w.at(w.signal, w.target).set_index("config")
    if library not in at.index:
        return ""
    lib = at.loc[library]
    suite = w.best[~w.best["algo"].map(tables.is_library)]
    lead = f"**Is Ray worth it here?** Against {tables.LIBRARY_NAME} (`{library}`)"
    if suite.empty:
        return f"{lead}: no configuration of the suite's four in these runs to compare."
    ours = suite.iloc[0]

    def said(r: pd.Series) -> str:
        median = fmt_bounded(r["time_all_median_s"], r["time_all_lower_bound"], fmt_time)
        return f"{r['config']} (median {median}, {r['reached']}/{r['seeds']} seeds)"

    if ours["reached"] == 0 and lib["reached"] == 0:
        return f"{lead}: neither it nor the suite's best reached {target}."
    lib_row = lib.copy()
    lib_row["config"] = library
    missed = (ours["seeds"] - ours["reached"], lib_row["seeds"] - lib_row["reached"])
    times = (float(ours["time_all_median_s"]), float(lib_row["time_all_median_s"]))
    suite_first = (missed[0], times[0]) <= (missed[1], times[1])
    faster, slower = (ours, lib_row) if suite_first else (lib_row, ours)
    c = tables.compare(faster, slower)
    ratio, p = c["ratio"], c["p"]
    if not is_missing(ratio.value):
        how = f"{fmt_estimate(ratio.value, ratio.low, ratio.high, fmt_ratio)} as fast as"
        why = f"{how} the other"
    else:
        how = "faster than"
        why = f"log-rank p = {p:.2g}" if not is_missing(p) else "one seed each: no interval"
    if not c["separated"]:
        text = (
            f"{lead}: the suite's fastest, {said(ours)}, and {said(lib_row)} can't be told "
            f"apart on time to {target} ({why})."
        )
        # The library ahead on the medians: whether more cores would put the suite ahead.
        return text if suite_first else " ".join(filter(None, [text, crossover(w, library)]))
    if suite_first:
        text = f"{lead}: **yes**, the suite's fastest, {said(ours)}, is {how} {said(lib_row)}"
        return text + (f" ({why})." if is_missing(ratio.value) else f" to {target}.")
    text = (
        f"{lead}: **not on this machine**: {said(lib_row)} is {how} the suite's fastest, "
        f"{said(ours)}"
    )
    text += f" ({why})." if is_missing(ratio.value) else f" to {target}."
    return " ".join(filter(None, [text, crossover(w, library)]))


def crossover(w: Workload, library: str) -> str:
    """Where the library is faster as run (or ahead on the medians, the seeds unable to tell):
    the fewest cores on which one of the suite's
    configurations is predicted to overtake it, on the clock of a core per process
    (``analysis/predicted.py``: each trial's CPU time, at the env steps to target measured at
    its runner count); "" where the runs carry no predicted figures."""
    table = w.on_cores
    if table.empty:
        return ""
    lib = table[table["config"] == library]
    suite = table[~table["algo"].map(tables.is_library)]
    if lib.empty or suite.empty or is_missing(lib.iloc[0]["predicted"].value):
        return ""
    lib_time = lib.iloc[0]["predicted"]
    ahead = [
        r for _, r in suite.iterrows()
        if not is_missing(r["predicted"].value) and r["predicted"].value < lib_time.value
    ]  # fmt: skip
    most = int(suite["num_env_runners"].max())
    lead = "Predicted on a machine with a core per process (from the runs' CPU time)"
    theirs = f"{library}'s {fmt_time(lib_time.value)}"

    def said(r: pd.Series) -> str:
        e = r["predicted"]
        return f"{r['config']} on {r['cores']:g} cores, " + fmt_estimate(
            e.value, e.low, e.high, fmt_time
        )

    if not ahead:
        best = suite.loc[suite["predicted"].map(lambda e: e.value).fillna(math.inf).idxmin()]
        return (
            f"{lead}: no configuration measured here (up to {most} env runners) overtakes "
            f"{theirs}; the fastest predicted is {said(best)}."
        )
    first = min(ahead, key=lambda r: (r["cores"], r["predicted"].value))
    return (
        f"{lead}: **the crossover is at {first['cores']:g} cores**, where {said(first)} "
        f"overtakes {theirs} (one process and one thread: more cores do not speed it up)."
    )


def _against_next(
    win: pd.Series, nxt: pd.Series, target: str, median: str, baseline: str | None
) -> str:
    """The verdict between the two fastest algorithms: a winner only where the seeds separate
    them (the ratio's 95% interval excludes 1; where seeds missed, a log-rank p < 0.05)."""
    c = tables.compare(win, nxt)
    ratio, p = c["ratio"], c["p"]
    tag = "the single-runner DQN baseline; " if nxt["config"] == baseline else ""
    nxt_median = fmt_bounded(nxt["time_all_median_s"], nxt["time_all_lower_bound"], fmt_time)
    other = f"{nxt['config']} ({tag}median {nxt_median}, {nxt['reached']}/{nxt['seeds']} seeds)"
    if not is_missing(ratio.value):
        how = f"{fmt_estimate(ratio.value, ratio.low, ratio.high, fmt_ratio)} as fast"
    elif not is_missing(p):
        how = f"log-rank p = {p:.2g}"
    else:
        how = "one seed each: no interval"
    if c["separated"]:
        lead = f"**{win['config']} reaches {target} fastest**: {median}"
        if is_missing(ratio.value):
            return f"{lead}; the next algorithm's best, {other}, is slower ({how})"
        return f"{lead}, {how} as the next algorithm's best, {other}"
    seeds = int(min(win["seeds"], nxt["seeds"]))
    text = (
        f"**{win['config']} and {nxt['config']} can't be told apart at {seeds} "
        f"seed{'' if seeds == 1 else 's'}** on time to {target}: {win['config']} {median}, "
        f"against {other}; {how}"
    )
    needed = c["seeds_needed"]
    if needed is not None:
        text += (
            f"; roughly {needed} seeds each would separate a ratio this size"
            if needed <= 100
            else "; a ratio this close to 1 would take over 100 seeds each to separate"
        )
    return text


def _against_baseline(w: Workload, win: pd.Series) -> str:
    """The winner against the single-runner DQN, where a ratio exists, with its interval."""
    s = w.speedup
    row = s[(s["config"] == win["config"]) & (s["signal"] == w.signal) & (s["target"] == w.target)]
    if row.empty or is_missing(row["speedup"].iloc[0]):
        return ""
    r = row.iloc[0]
    ratio = stats.Estimate(r["speedup"], r["speedup_low"], r["speedup_high"])
    cell = fmt_estimate(ratio.value, ratio.low, ratio.high, fmt_ratio)
    if stats.separated(ratio):
        return f", and {cell} as fast as the single-runner DQN ({w.baseline})"
    return f"; against the single-runner DQN ({w.baseline}) the seeds can't tell: {cell}"


def _machines_note(w: Workload) -> list[str]:
    """A sentence where the compared runs ran on more than one CPU model (run.json's machine):
    their training times compare only roughly; env steps do not depend on the machine."""
    if "cpu_model" not in w.selected.columns:
        return []
    runs = w.selected.drop_duplicates("experiment")
    counts = runs["cpu_model"].fillna("").replace("", "unknown").value_counts()
    if len(counts) < 2:
        return []
    named = "; ".join(
        f"{model}: {n} run{'s' if n > 1 else ''}" for model, n in sorted(counts.items())
    )
    return [
        f"The runs compared here ran on {len(counts)} CPU models ({named}; *Machines* under "
        "Reproducibility names each run's): their training times compare across machines only "
        "roughly, their env steps do not depend on the machine.",
        "",
    ]


# Raw env rates further apart than this (fastest / slowest) are said under the summary: on a
# 2-core VM whose host was busy, the cab env's rate measured by one process varied 1.6x within a
# few seconds (Pong's C++ env by 1.06x), while the host that slowed the Pong runs 3x did so for
# hours; this flags the second without crying wolf at the first.
SPEED_SPREAD = 1.5


def _speed_note(w: Workload) -> list[str]:
    """A sentence where the machine's speed (its raw env rate at the start and end of each run
    compared, run.json's machine) varied by more than ``SPEED_SPREAD``: a throttled host slows
    training time and shows in no load average; env steps do not depend on it."""
    if "raw_env_start" not in w.selected.columns:
        return []
    runs = w.selected.drop_duplicates("experiment")
    rates = runs.melt("experiment", ["raw_env_start", "raw_env_end"]).dropna(subset=["value"])
    if rates.empty:
        return []
    slow, fast = rates.loc[rates["value"].idxmin()], rates.loc[rates["value"].idxmax()]
    if fast["value"] < SPEED_SPREAD * slow["value"]:
        return []
    unmeasured = int((runs["raw_env_start"].isna() & runs["raw_env_end"].isna()).sum())
    return [
        f"**The machine's speed varied** between the runs compared here: its raw env rate, "
        f"measured at each run's start and end, went from {fast['value']:,.0f} env steps/s "
        f"(`{fast['experiment']}`) down to {slow['value']:,.0f} (`{slow['experiment']}`), "
        f"{fast['value'] / slow['value']:.1f}× slower (*Runs* under Reproducibility has each "
        "run's). Training times from runs made at different speeds do not compare; env steps "
        "do not depend on the machine."
        + (f" {unmeasured} run(s) compared predate the measurement." if unmeasured else ""),
        "",
    ]


def _missed_note(w: Workload) -> list[str]:
    """What the workload says where its target was missed (Pong without a GPU: what to run)."""
    reached_everywhere = bool(len(w.best)) and bool((w.best["reached"] == w.best["seeds"]).all())
    return w.kind.missed_note(w.runs, reached_everywhere)

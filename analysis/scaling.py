"""The report's "Scaling with env runners" section of one workload as Markdown lines: throughput
and time to target against the number of env runners, and, where the runs report their CPU time
per process, time to target on a core per process (predicted) beside the time as run (measured).

Why the prediction: on a machine with fewer cores than a trial has busy processes, the processes
take turns and every second of training takes longer; a measured time to target then says more
about the machine than about how the algorithm scales. The prediction (``sweeps/harness/
cpu_time.py``, the model and where it was checked in ``docs/scaling.md``; the table in
:mod:`analysis.predicted`) says how long the same training would have taken with a core per CPU
bundle. Its seconds are never in a column with measured ones: every predicted figure is labelled
"(predicted)", every time as run "(measured)". Where no run reports CPU figures (runs made before
them) the section is as it was: throughput, and the measured time to target.
"""

from __future__ import annotations

import pandas as pd

from analysis import predicted, stats
from analysis import scaling_words as words
from analysis.fmt import (
    DASH,
    fmt_bounded,
    fmt_estimate,
    fmt_int,
    fmt_number,
    fmt_pct,
    fmt_ratio,
    fmt_spread,
    fmt_time,
    is_missing,
    markdown_table,
)
from analysis.sections import REACHED, SPEEDUP, STEPS_PER_S, TARGET, TIME, km_cell
from analysis.tables import SIGNAL_NAMES
from analysis.workload import Workload

# Column headers of the table on a core per process: which clock each time is on, always said.
STEPS_KM = "env steps to target, KM median [95%]"
CORES = "cores (predicted machine)"
PREDICTED_TIME = "time to target (predicted), KM median [95%]"
MEASURED_TIME = "time to target as run (measured), KM median [95%]"
BUSIEST = "busiest process, its utilisation"
SLOWDOWN = "slowdown"


def scaling_section(w: Workload, plot: str | None) -> list[str]:
    lines = ["### Scaling with env runners", ""]
    tp = w.throughput
    if tp.empty:
        lines += ["No algorithm was benchmarked at two or more runner counts.", ""]
        return lines + words.bound_lines(w.throughput_on_cores) + _throughput_on_cores_lines(w)
    on_cores = w.on_cores
    one_machine, rates = w.one_machine
    on_one = _has_speedup(one_machine)
    lines += words.lead_lines(w, one_machine if on_one else on_cores, on_one)
    lines += words.bound_lines(w.throughput_on_cores)
    lines += words.claim_lines(w, one_machine, on_cores)
    lines += words.rule_lines(w)
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
        measured = ", measured as run" if len(on_cores) else ""
        lines += [
            f"#### Time to target ({SIGNAL_NAMES[w.signal]}){measured}",
            "",
            markdown_table(header, rows),
            "",
        ]
    lines += _throughput_on_cores_lines(w)
    lines += _one_machine_lines(w, one_machine, rates)
    lines += _cpu_per_step_lines(rates)
    lines += _on_cores_lines(w, on_cores)
    if plot:
        lines += [f"![Throughput against env runners: {w.title}]({plot})", ""]
    return lines


def _runners(n: int) -> str:
    return "0 (in the learner)" if n == 0 else str(n)


# --- Throughput on a core per process ----------------------------------------------------------


def _throughput_on_cores_lines(w: Workload) -> list[str]:
    """Env steps/s as run and on a core per process (predicted), and what bounds it: shown for
    every benchmark configuration with CPU figures, one runner count or several."""
    table = w.throughput_on_cores
    if table.empty:
        return []
    header = [
        "algorithm", "env runners", "seeds", "env steps/s as run (measured)",
        "env steps/s on a core per process (predicted)", CORES, BUSIEST, SLOWDOWN,
    ]  # fmt: skip
    rows = []
    for _, r in table.iterrows():
        busiest = str(r["busiest"]) + (
            f" ({r['busiest_seeds']}/{r['seeds']})" if r["busiest_seeds"] < r["seeds"] else ""
        )
        util = fmt_spread(tuple(100.0 * v for v in r["utilisation"]), fmt_pct)
        rows.append(
            [
                r["algo"],
                _runners(r["num_env_runners"]),
                str(r["seeds"]),
                fmt_spread(r["measured"], fmt_int),
                fmt_spread(r["predicted"], fmt_int),
                fmt_number(r["cores"]),
                f"{busiest}, {util}",
                fmt_spread(r["slowdown"], fmt_ratio),
            ]
        )
    return [
        "#### Throughput on a core per process (predicted)",
        "",
        "Env steps per second of training at each trial's end, median (min–max) over seeds: as "
        "the runs ran on this machine (measured), and on a machine with a core per process of "
        "the trial (predicted from each process's CPU time, `docs/scaling.md`). The busiest "
        "process bounds the prediction where its utilisation as run times the slowdown reaches "
        "100% (of the cores its threads used at once): more runners cannot go faster than it.",
        "",
        markdown_table(header, rows),
        "",
    ]


# --- Time to target on a core per process of one machine (rate runs) ----------------------------


def _sitting_words(rates: pd.DataFrame, sitting: int) -> str:
    """'sitting 1: AMD EPYC, raw env 2,158–2,224 steps/s, 2026-12-05'."""
    r = rates[rates["sitting"] == sitting]
    raw = (r["raw_env"].median(), r["raw_env"].min(), r["raw_env"].max())
    speed = (
        f", raw env {fmt_spread(raw, fmt_int)} steps/s at their starts"
        if r["raw_env"].notna().any()
        else ""
    )
    day = r["started_at"].min()
    when = day.strftime("%Y-%m-%d") if not pd.isna(day) else "an unrecorded day"
    model = r["cpu_model"].iloc[0] or "an unrecorded CPU"
    return f"sitting {sitting}: {len(r)} rate run(s) on {model}{speed}, {when}"


def _one_machine_lines(w: Workload, table: pd.DataFrame, rates: pd.DataFrame) -> list[str]:
    """Time to the target on a core per process of one machine: env steps to it (the runs of
    record, any machine) over env steps/s (predicted, rate runs of one sitting); nothing
    without rate runs."""
    if table.empty:
        if len(w.rates):
            return [
                "Rate runs were given, but none matched a configuration compared here (its "
                "algorithm, env runners and hyperparameters) with CPU figures over its second "
                "half: no time on one machine to show.",
                "",
            ]
        return []
    refs = sorted({int(n) for n in table["reference_runners"].dropna()})
    own = words.plural(refs[0], "runner") if len(refs) == 1 else "the fewest runners"
    baseline = next((b for b in table["baseline"] if b), "")
    header = ["algorithm", "env runners", REACHED, STEPS_KM, "env steps/s (predicted)"]
    header += [CORES, PREDICTED_TIME, f"speedup vs {own} (predicted) [95%]"]
    header += [f"speedup vs {baseline} (predicted) [95%]"] if baseline else []
    header += ["busiest process, its utilisation", SLOWDOWN, "sitting"]
    rows = []
    for _, r in table.iterrows():
        row = [r["algo"], _runners(r["num_env_runners"]), f"{r['reached']}/{r['seeds']}"]
        row += [_km(r["steps"], fmt_int), fmt_int(r["rate"]), fmt_int(r["cores"])]
        row += [_km(r["predicted"], fmt_time), words.estimate(r["speedup_own"], fmt_ratio)]
        row += [words.estimate(r["speedup_dqn"], fmt_ratio)] if baseline else []
        busiest = f"{r['busiest']}, {fmt_pct(100.0 * r['utilisation'])}" if r["busiest"] else "—"
        rows.append(row + [busiest, fmt_ratio(r["slowdown"]), str(r["sitting"])])
    used = sorted(set(table["sitting"]))
    missing = sorted(set(w.on_cores["config"]) - set(table["config"])) if len(w.on_cores) else []
    lines = [
        f"#### Time to target on a core per process of one machine, predicted "
        f"({SIGNAL_NAMES[w.signal]})",
        "",
        f"At {w.label(w.target)}. The runs of record ran on whatever machine each stretch had, "
        "and a run's predicted seconds carry its machine's speed; its env steps to the target "
        "do not. Here each configuration's time is its **env steps to the target** (Kaplan–Meier "
        "median [95%] over the runs' seeds, measured) over its **env steps per second on a core "
        "per process**, predicted (`docs/scaling.md`) from a short *rate run* of the same "
        "configuration: the second half of its training clock, after the learner warmed up. A "
        "speedup is the runs' env-steps ratio [95% bootstrap interval over seeds] times the two "
        "configurations' rates, both from one sitting (rate runs one after another on one "
        "machine); a dash where no sitting measured both, or not every seed of both reached "
        "the target. The interval comes from the seeds; a rate is one measurement, its own "
        "noise not in it. Rate runs: " + "; ".join(_sitting_words(rates, s) for s in used) + ".",
        "",
        markdown_table(header, rows),
        "",
    ]
    if missing:
        lines += [f"No rate run of: {', '.join(missing)}.", ""]
    return lines


def _cpu_per_step_lines(rates: pd.DataFrame) -> list[str]:
    """What an env step costs in CPU, by kind of process, in each rate run (one machine per
    sitting), and against the same algorithm's fewest runners of the sitting; nothing without
    rate runs."""
    if rates.empty or "ms_per_step" not in rates.columns:
        return []
    present = set().union(*rates["ms_per_step"])
    kinds = [k for k, _ in predicted.PROCESS_KINDS if k in present]
    header = ["algorithm", "env runners", *(f"{k} (ms)" for k in kinds)]
    header += [f"{predicted.ALL_PROCESSES} (ms)", "vs the fewest runners", "sitting"]
    rows = []
    table = rates.sort_values(["algo", "num_env_runners", "sitting"], kind="stable")
    for _, r in table.iterrows():
        same = table[(table["algo"] == r["algo"]) & (table["sitting"] == r["sitting"])]
        fewest = same.loc[same["num_env_runners"].idxmin()]
        ratio = float(r["ms_per_step_all"]) / float(fewest["ms_per_step_all"])
        row = [r["algo"], _runners(r["num_env_runners"])]
        row += [_ms(r["ms_per_step"].get(k)) for k in kinds]
        row += [_ms(r["ms_per_step_all"])]
        row += [fmt_ratio(ratio) if fewest["num_env_runners"] < r["num_env_runners"] else DASH]
        rows.append(row + [str(r["sitting"])])
    return [
        "#### CPU time per env step, by process (rate runs, measured)",
        "",
        "CPU milliseconds each kind of process of a trial spent per env step over the second "
        "half of its rate run, as the kernel counted them (`docs/scaling.md`, *The accounting*), "
        "on the machine of its sitting; *vs the fewest runners*: all processes' CPU per env step "
        "over that of the same algorithm at its fewest runners in the same sitting. An env step "
        "costs this much CPU whatever the cores: on a machine with fewer cores than busy "
        "processes, env steps per second can be at most cores × 1,000 / all processes' ms, so "
        "CPU per env step that rises with the runners is what the extra runners cost there, not "
        "time spent waiting.",
        "",
        markdown_table(header, rows),
        "",
    ]


def _ms(x: float | None) -> str:
    return DASH if x is None or is_missing(x) else f"{float(x):,.2f}"


# --- Time to target on a core per process -------------------------------------------------------


def _has_speedup(table: pd.DataFrame) -> bool:
    """Whether a configuration of ``table`` past its algorithm's fewest runners has a speedup."""
    if table.empty:
        return False
    more = table[table["num_env_runners"] > table["reference_runners"]]
    return bool(more["speedup_own"].map(lambda e: not is_missing(e.value)).any())


def _km(e: stats.Estimate, fmt) -> str:
    return km_cell(e.value, e.low, e.high, fmt)


def _span(values: list[float], word: str) -> str:
    """'2 cores', '1–2 cores'."""
    if not values:
        return f"an unrecorded number of {word}s"
    if values[0] == values[-1]:
        return words.plural(values[0], word)
    return f"{fmt_number(values[0])}–{fmt_number(values[-1])} {word}s"


def _machine_note(w: Workload) -> str:
    """Where the runs were measured, what Ray was told, and what each clock is."""
    cores, cpus = predicted.machines(w.selected)
    oversubscribed = bool(cores and cpus) and max(cpus) > min(cores)
    return (
        f"The runs were measured on {_span(cores, 'core')}, Ray declaring "
        f"{_span(cpus, 'CPU')} to them"
        + (
            " (more CPUs than cores, on purpose: a trial's processes took turns on the cores)"
            if oversubscribed
            else ""
        )
        + ". *Predicted* seconds are predictions, not measurements: each trial's training time "
        "on a machine with one core per process of the trial (*cores*; at least one per CPU "
        "bundle it asked Ray for), predicted from the CPU time of each of its processes as the "
        "kernel counted it (`docs/scaling.md`). "
        "*Measured* seconds are the training wall-clock as the runs ran, on that machine. KM: "
        "the Kaplan–Meier median over seeds, a seed that missed the target censored at its last "
        "iteration (on the same clock, for times). A speedup is the reference's median predicted "
        "time over the configuration's, only where both reached the target on every seed (the "
        "same seeds), with its 95% percentile bootstrap interval; the env-steps ratio is the same "
        "for env steps (> 1: fewer samples than the reference). *Busiest*: the kind of process "
        "that ran longest on a core over the trial (on how many seeds, where not on all) and its "
        "CPU seconds per second of wall-clock as run (above 100%: its threads ran on more than one "
        "core at once); *slowdown*: how much slower than on a core of its own the trial's "
        "processes ran (1 + time waiting for a core / time on one); both median (min–max) over "
        "seeds."
    )


def _on_cores_lines(w: Workload, table: pd.DataFrame) -> list[str]:
    """The table of time to target on a core per process (predicted) beside the time as run
    (measured), per algorithm and env-runner count; nothing where no run has CPU figures."""
    if table.empty:
        return []
    refs = sorted({int(n) for n in table["reference_runners"].dropna()})
    own = words.plural(refs[0], "runner") if len(refs) == 1 else "the fewest runners"
    baseline = next((b for b in table["baseline"] if b), "")
    header = ["algorithm", "env runners", REACHED, STEPS_KM, CORES, PREDICTED_TIME]
    header += [MEASURED_TIME, f"speedup vs {own} (predicted) [95%]"]
    header += [f"env-steps ratio vs {own} [95%]"]
    header += [f"speedup vs {baseline} (predicted) [95%]"] if baseline else []
    header += [BUSIEST, SLOWDOWN]
    rows = []
    for _, r in table.iterrows():
        row = [r["algo"], _runners(r["num_env_runners"]), f"{r['reached']}/{r['seeds']}"]
        row += [_km(r["steps"], fmt_int), fmt_int(r["cores"]), _km(r["predicted"], fmt_time)]
        row += [_km(r["measured"], fmt_time), words.estimate(r["speedup_own"], fmt_ratio)]
        row += [words.estimate(r["steps_ratio_own"], fmt_ratio)]
        row += [words.estimate(r["speedup_dqn"], fmt_ratio)] if baseline else []
        rows.append(row + [_busiest_cell(r), fmt_spread(r["slowdown"], fmt_ratio)])
    lines = [
        f"#### Time to target on a core per process, predicted ({SIGNAL_NAMES[w.signal]})",
        "",
        f"At {w.label(w.target)}. " + _machine_note(w),
        "",
        markdown_table(header, rows),
        "",
        "A dash for a speedup: not every seed of both reached the target (no ratio rests on a "
        "seed that missed), or the algorithm ran at one remote runner count only.",
        "",
    ]
    left_out = predicted.without_figures(w.selected)
    if left_out:
        lines += [
            f"{left_out} benchmark seed(s) compared here ran before runs reported their CPU time "
            "and are left out of this table.",
            "",
        ]
    return lines


def _busiest_cell(r: pd.Series) -> str:
    """'driver, 59% (55–62%)'; 'driver (2/3), …' where another kind was busiest on some seeds."""
    if not r["busiest"]:
        return "—"
    seeds = int(r["seeds"])
    on = "" if r["busiest_seeds"] == seeds else f" ({r['busiest_seeds']}/{seeds})"
    utilisation = tuple(100.0 * x for x in r["utilisation"])
    return f"{r['busiest']}{on}, {fmt_spread(utilisation, fmt_pct)}"

"""Write ``REPORT.md`` (+ PNG plots + ``runs.csv``) for one or more Tune experiments.

    python -m analysis report ray_results/dqn_cabs ray_results/apex_cabs --out results/cabs

Inputs are experiment folders, parents of experiment folders, or ``runs.csv`` tables written by
``python -m analysis collect``. The report is generated, never hand-edited: re-running it on the
same inputs gives the same file apart from the one "Generated on" line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from analysis import plots, tables
from analysis.collect import (
    COMPLETED,
    ERRORED,
    INCOMPLETE,
    RUNS_CSV,
    STOPPED_EARLY,
    UsageError,
    add_inputs,
    check_writable,
    gather,
    read_runs_csv,
    write_runs_csv,
)

REPORT_FILE = "REPORT.md"
# What to run where Pong's targets are in reach (the seed articles' GPU-learner setting).
PONG_GPU_COMMAND = (
    "python -m sweeps.benchmark --env pong --algos impala,appo,apex --seeds 3 "
    "--time-budget-s 3600 --num-env-runners 8"
)
DATE_PREFIX = "Generated on "
REFERENCE_EPISODES = 200
REFERENCE_SEED = 0
DASH = "—"

# --- Formatting (fixed, so reruns are byte-identical) -----------------------------------------


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or pd.isna(x)


def fmt_float(x, digits: int = 1) -> str:
    return DASH if _nan(x) else f"{float(x):,.{digits}f}"


def fmt_int(x) -> str:
    return DASH if _nan(x) else f"{round(float(x)):,d}"


def fmt_time(seconds) -> str:
    if _nan(seconds):
        return DASH
    return f"{seconds:,.1f} s" if seconds < 1000 else f"{seconds:,.0f} s"


def fmt_ratio(x) -> str:
    return DASH if _nan(x) else f"{float(x):.2f}×"


def fmt_bounded(x, bound: str | bool, fmt: Callable = fmt_float) -> str:
    """A value that may be a bound: '≥ 60.9 s', '≤ 0.12×' (``bound`` True means '≥')."""
    if not isinstance(bound, str):  # a lower-bound flag (bool or numpy bool)
        bound = "≥" if bool(bound) else ""
    return DASH if _nan(x) else (f"{bound} " if bound else "") + fmt(x)


def fmt_pct(x) -> str:
    return DASH if _nan(x) else f"{float(x):.1f}%"


def fmt_spread(spread: tuple[float, float, float], fmt: Callable = fmt_float) -> str:
    """'median (min–max)'; just the value when min == max."""
    med, lo, hi = spread
    if _nan(med):
        return DASH
    if lo == hi:
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}–{fmt(hi)})"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


# --- Reference returns (cabs) -----------------------------------------------------------------


def reference_returns(runs: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    """Random / heuristic / optimal returns for every cab variant and tm_seed in the table.

    From ``envs.policies.reference_returns`` (imported lazily); when it is unavailable or fails
    the rows are omitted and the returned note says why.
    """
    cabs = runs[runs["env"] == "cabs"]
    if cabs.empty:
        return None, None
    variants = zip(cabs["variant"], cabs["tm_seed"], strict=True)
    pairs = sorted({(v or "base", 0 if pd.isna(t) else int(t)) for v, t in variants})
    try:
        from envs.policies import reference_returns as compute
    except ImportError as err:
        return None, f"reference rows omitted: envs.policies.reference_returns unavailable ({err})"
    rows = []
    for variant, tm_seed in pairs:
        try:
            ref = compute(
                variant, tm_seed=tm_seed, episodes=REFERENCE_EPISODES, seed=REFERENCE_SEED
            )
        except Exception as err:  # a broken reference must not lose the report
            return None, f"reference rows omitted: reference_returns({variant!r}) failed: {err}"
        rows.append({"variant": variant, "tm_seed": tm_seed, **{k: float(ref[k]) for k in ref}})
    return pd.DataFrame(rows), None


# --- Sections ---------------------------------------------------------------------------------


def _performance_section(configs: pd.DataFrame, references: pd.DataFrame | None) -> list[str]:
    header = [
        "configuration",
        "seeds",
        "env steps",
        "training time",
        "training return",
        "greedy return",
        "% of optimum",
        "env steps/s",
    ]
    rows = [
        [
            c["config"],
            str(c["seeds"]),
            fmt_spread(c["env_steps"], fmt_int),
            fmt_spread(c["train_time_s"], fmt_time),
            fmt_spread(c["final_return"]),
            fmt_spread(c["final_greedy"]),
            fmt_spread(c["final_pct_of_optimum"], fmt_pct),
            fmt_spread(c["env_steps_per_s"], fmt_int),
        ]
        for _, c in configs.iterrows()
    ]
    if references is not None:
        for _, r in references.iterrows():
            optimum = r.get("optimum", math.nan)
            for name in ("random", "heuristic", "optimum"):
                if name in r:
                    pct = 100.0 * r[name] / optimum if optimum else math.nan
                    label = f"*{name} (reference, tm_seed {r['tm_seed']})*"
                    rows.append([label, DASH, DASH, DASH, DASH, fmt_float(r[name])])
                    rows[-1] += [fmt_pct(pct), DASH]
    return [
        "### Final performance",
        "",
        "Final values per configuration: median over seeds (min–max). Training return is the "
        "exploring policy's episode return mean; greedy return is the latest greedy evaluation.",
        "",
        markdown_table(header, rows),
        "",
    ]


def _ttt_cells(r: pd.Series) -> list[str]:
    reached = f"{int(r['reached'])}/{int(r['seeds'])}"
    all_seeds = [
        fmt_bounded(r["time_all_median_s"], r["time_all_lower_bound"], fmt_time),
        fmt_bounded(r["steps_all_median"], r["steps_all_lower_bound"], fmt_int),
    ]
    if r["reached"] == 0:
        budget = f"within budget (ran ≤ {fmt_time(r['budget_train_time_s'])}, "
        budget += f"{fmt_int(r['budget_env_steps'])} env steps)"
        return [reached, *all_seeds, "not reached " + budget, "not reached"]
    time = fmt_spread((r["time_median_s"], r["time_min_s"], r["time_max_s"]), fmt_time)
    steps = fmt_spread((r["steps_median"], r["steps_min"], r["steps_max"]), fmt_int)
    return [reached, *all_seeds, time, steps]


def _ttt_section(summary: pd.DataFrame) -> list[str]:
    lines = [
        "### Time to reward",
        "",
        "First training wall-clock (evaluation excluded) and env-step count at which the return "
        "reaches each target. *reached* counts seeds; a seed that never reached the target "
        "within its budget is counted there and never dropped. *Median, all seeds* counts such a "
        "seed at its budget (how long it ran): '≥' marks a median that is only a lower bound "
        "because a seed at or below the middle missed the target. *Seeds that reached it*: "
        "median (min–max) over those seeds only.",
        "",
    ]
    header = ["configuration", "target", "reached", "median time, all seeds"]
    header += ["median env steps, all seeds", "time, seeds that reached it"]
    header += ["env steps, seeds that reached it"]
    for signal, title in tables.SIGNALS.items():
        part = summary[summary["signal"] == signal]
        rows = [[r["config"], fmt_float(r["target"]), *_ttt_cells(r)] for _, r in part.iterrows()]
        lines += [f"#### {title.capitalize()}", "", markdown_table(header, rows), ""]
    return lines


def _no_gpu_note(env: str, part: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Pong run without a GPU and short of its targets: say so, and what to run instead."""
    if env != "pong" or part["gpus"].fillna(0).max() > 0:
        return []
    if not summary.empty and (summary["reached"] == summary["seeds"]).all():
        return []
    cpus = part["cpus"].dropna()
    machine = f"{fmt_int(cpus.max())} CPUs" if not cpus.empty else "CPUs only"
    return [
        f"These runs had no GPU ({machine}): a target not reached here says how far CPU-only "
        "training gets within the budget, not how fast the algorithms reach it. On a machine "
        "with a GPU and at least 10 CPUs, measure time to 18 and 20 with:",
        "",
        f"```bash\n{PONG_GPU_COMMAND}\n```",
        "",
    ]


def _speedup_section(speedup: pd.DataFrame) -> list[str]:
    lines = ["### Speedup against single-runner DQN", ""]
    if speedup.empty:
        return lines + ["No single-runner DQN configuration (num_env_runners ≤ 1) in the runs.", ""]
    lines += [
        f"Baseline: `{speedup['baseline'].iloc[0]}`. Speedup = baseline median time to target / "
        "configuration median time to target (training wall-clock); env-steps ratio = the same "
        "for env steps (> 1: fewer samples than the baseline). Medians are over all seeds, a "
        "seed that missed the target counted at its budget (see *Time to reward*): where most "
        "baseline seeds missed, the speedup is a lower bound (≥); where most of the "
        "configuration's seeds missed, an upper bound (≤); where both, unknown (—).",
        "",
    ]
    header = ["configuration", "signal", "target", "median time", "baseline median time"]
    header += ["speedup", "env-steps ratio", "note"]
    rows = [
        [
            r["config"],
            tables.SIGNALS[r["signal"]],
            fmt_float(r["target"]),
            fmt_bounded(r["time_median_s"], r["time_lower_bound"], fmt_time),
            fmt_bounded(r["baseline_time_median_s"], r["baseline_time_lower_bound"], fmt_time),
            fmt_bounded(r["speedup"], r["speedup_bound"], fmt_ratio),
            fmt_bounded(r["steps_ratio"], r["steps_bound"], fmt_ratio),
            r["note"],
        ]
        for _, r in speedup.iterrows()
    ]
    return lines + [markdown_table(header, rows), ""]


def _scaling_section(throughput: pd.DataFrame, ttt_scaling: pd.DataFrame, plot: str | None):
    lines = ["### Scaling with env runners", ""]
    if throughput.empty:
        return lines + ["No algorithm was benchmarked at two or more runner counts.", ""]
    lines += [
        "Speedup is relative to the fewest runners n_min of each algorithm; parallel efficiency "
        "= speedup / (n / n_min), counting 0 env runners (sampling on the local runner) as 1.",
        "",
        "#### Throughput",
        "",
    ]
    header = ["algorithm", "env runners", "seeds", "env steps/s", "speedup", "efficiency"]
    rows = [
        [
            r["algo"],
            str(r["num_env_runners"]),
            str(r["seeds"]),
            fmt_spread(
                (r["steps_per_s_median"], r["steps_per_s_min"], r["steps_per_s_max"]), fmt_int
            ),
            fmt_ratio(r["speedup"]),
            fmt_pct(100.0 * r["efficiency"]),
        ]
        for _, r in throughput.iterrows()
    ]
    lines += [markdown_table(header, rows), ""]
    if not ttt_scaling.empty:
        header = ["algorithm", "signal", "target", "env runners", "reached", "median time"]
        header += ["speedup", "efficiency"]
        rows = [
            [
                r["algo"],
                tables.SIGNALS[r["signal"]],
                fmt_float(r["target"]),
                str(r["num_env_runners"]),
                f"{r['reached']}/{r['seeds']}",
                fmt_bounded(r["time_median_s"], r["time_lower_bound"], fmt_time),
                fmt_bounded(r["speedup"], r["speedup_bound"], fmt_ratio),
                fmt_bounded(100.0 * r["efficiency"], r["speedup_bound"], fmt_pct),
            ]
            for _, r in ttt_scaling.iterrows()
        ]
        lines += ["#### Time to reward", "", markdown_table(header, rows), ""]
    if plot:
        lines += [f"![Throughput and speedup vs env runners]({plot})", ""]
    return lines


def _sweep_section(runs: pd.DataFrame, asha: pd.DataFrame, plot_for: dict[str, str]) -> list[str]:
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
        header = ["rank", "trial", "seed", *(c[3:] for c in hp), f"final `{metric}`"]
        header += ["final greedy return", "env steps", "training time", "status"]
        rows = [
            [
                str(t["rank"]),
                t["trial_id"],
                fmt_int(t["seed"]),
                *(_fmt_hp(t[c]) for c in hp),
                fmt_float(t["final_metric"]),
                fmt_float(t["final_greedy"]),
                fmt_int(t["env_steps"]),
                fmt_time(t["train_time_s"]),
                t["trial_status"].replace("_", " "),
            ]
            for _, t in trials.iterrows()
        ]
        lines += [f"#### {experiment}", "", markdown_table(header, rows), ""]
        if experiment in plot_for:
            lines += [f"![Trial curves of {experiment}]({plot_for[experiment]})", ""]
    return lines


def _fmt_hp(value) -> str:
    if _nan(value):
        return DASH
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _commit_cell(experiment: pd.Series, width: int | None = None) -> str:
    """A run's commit, flagged when it ran from a modified working tree (run.json git_dirty)."""
    commit = experiment["git_commit"]
    if not commit:
        return DASH
    dirty = str(experiment.get("git_dirty", "")) == "true"
    return f"`{commit[:width]}`" + (" + uncommitted changes" if dirty else "")


def _reproducibility_section(runs: pd.DataFrame, skipped: Sequence[str]) -> list[str]:
    exps = runs.drop_duplicates("experiment").sort_values(["env", "variant", "kind", "experiment"])
    n_trials = runs.groupby("experiment")["trial_id"].nunique()
    header = ["experiment", "kind", "algorithm", "env", "variant", "trials", "status"]
    header += ["started", "ended", "git commit"]
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
    return lines


# --- The report -------------------------------------------------------------------------------


def render_report(
    runs: pd.DataFrame,
    out_dir: Path,
    *,
    command: str,
    skipped: Sequence[str] = (),
    references: pd.DataFrame | None = None,
    reference_note: str | None = None,
    generated_on: str | None = None,
) -> str:
    """The Markdown text of the report; writes its PNGs into ``out_dir``."""
    if generated_on is None:
        generated_on = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    envs = sorted(runs["env"].unique())
    lines = [
        "<!-- Generated by `python -m analysis report`. Do not edit by hand: re-run it. -->",
        "",
        f"# Results: {', '.join(envs)}",
        "",
        f"Generated by `{command}` from the runs listed under *Reproducibility*; do not edit by "
        "hand, re-run the command instead.",
        "",
        f"{DATE_PREFIX}{generated_on}.",
        "",
        "Configurations compared: in a benchmark, every seed of one algorithm at one number of "
        "env runners; in a sweep, its best trial by the final search metric. Training time is "
        "wall-clock spent training, greedy evaluation excluded.",
        "",
    ]
    if reference_note:
        lines += [f"Note: {reference_note}.", ""]

    selected = tables.select_configurations(runs)
    for (env, variant), part in runs.groupby(["env", "variant"], sort=True):
        title = f"{env} · {variant}" if variant else env
        sel = selected[(selected["env"] == env) & (selected["variant"] == variant)]
        refs = None
        if references is not None and env == "cabs":
            refs = references[references["variant"] == (variant or "base")]
        lines += [f"## {title}", ""]

        configs = tables.configurations(sel)
        lines += _performance_section(configs, refs)
        unscored = sorted(
            set(part.loc[part["kind"] == "sweep", "experiment"]) - set(sel["experiment"])
        )
        if unscored:
            lines += [
                "Sweeps without a best trial (no trial reported a finite final search metric), "
                f"left out of the comparisons: {', '.join(unscored)}.",
                "",
            ]

        ttt = tables.time_to_target(sel)
        summary = tables.summarize_time_to_target(ttt) if not ttt.empty else pd.DataFrame()
        if summary.empty:
            lines += ["### Time to reward", "", "No reward targets in run.json.", ""]
        else:
            lines += _ttt_section(summary)
        lines += _no_gpu_note(env, part, summary)
        curves = plots.plot_learning_curves(
            sel,
            out_dir / f"curves_{_slug(title)}.png",
            title,
            plots.references_for_plot(refs, variant or "base"),
        )
        if curves:
            lines += [f"![Learning curves: {title}]({curves.name})", ""]

        if not summary.empty:
            lines += _speedup_section(tables.speedup_vs_baseline(summary))
        throughput = tables.scaling_throughput(sel)
        ttt_scaling = (
            tables.scaling_time_to_target(summary) if not summary.empty else pd.DataFrame()
        )
        scaling_plot = plots.plot_scaling(
            throughput, ttt_scaling, out_dir / f"scaling_{_slug(title)}.png", title
        )
        lines += _scaling_section(
            throughput, ttt_scaling, scaling_plot.name if scaling_plot else None
        )

        asha = tables.asha_savings(part)
        sweep_plots = {}
        for experiment in asha.get("experiment", []):
            path = plots.plot_sweep(part, experiment, out_dir / f"sweep_{_slug(experiment)}.png")
            if path:
                sweep_plots[experiment] = path.name
        lines += _sweep_section(part, asha, sweep_plots)

    lines += _reproducibility_section(runs, skipped)
    return "\n".join(lines).rstrip() + "\n"


# --- CLI --------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser)
    parser.add_argument(
        "--out",
        required=True,
        help="folder to write REPORT.md, runs.csv and the PNG plots into (e.g. results/cabs)",
    )
    parser.add_argument(
        "--no-references",
        action="store_true",
        help="skip the cab reference rows (random / heuristic policy, exact optimum)",
    )


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    check_writable(out)
    collection = gather(args.inputs)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / RUNS_CSV
    write_runs_csv(collection.runs, csv_path)
    runs = read_runs_csv(csv_path)  # the report reads only the table, exactly as written
    references, note = (None, None) if args.no_references else reference_returns(runs)
    command = shlex.join(["python", "-m", "analysis", "report", *args.inputs, "--out", args.out])
    text = render_report(
        runs,
        out,
        command=command,
        skipped=collection.skipped,
        references=references,
        reference_note=note,
    )
    report = out / REPORT_FILE
    tmp = report.with_name(report.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(report)
    print(f"wrote {report} ({runs['experiment'].nunique()} experiments, {len(runs)} rows)")
    return 0

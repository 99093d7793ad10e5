"""Write ``REPORT.md`` (+ PNG plots + ``runs.csv``) for one or more Tune experiments.

    python -m analysis report runs/benchmark runs/apex-default --out results/cabs
    python -m analysis report results/cabs/runs/*.csv.gz --out results/cabs   # from tables alone

Inputs are experiment folders, parents of experiment folders, or ``runs.csv`` tables written by
``python -m analysis collect`` (or by an earlier report). The report opens with a summary per
workload (env + variant): each algorithm's best configuration at the workload's target on its
primary metric, and one computed sentence naming the winner; the detail, reproducibility and
an appendix of secondary metrics follow. It is generated, never hand-edited: re-running it on
the same inputs gives the same file apart from the one "Generated on" line. Its table of every
run is ``runs.csv`` (``runs.csv.gz`` where an input table is gzipped) where any input is a run
folder: a copy of the rows the report read, which regenerates it once the folders are gone.
Where every input is a table already (runs of record, kept one ``*.csv.gz`` per run), no copy
is written: the report's first lines name the tables, and that command regenerates it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis import (
    asha,
    family,
    hparams,
    plots,
    predicted,
    reproducibility,
    scaling,
    sections,
    stability,
    summary,
    sweep_sections,
    tables,
)
from analysis.collect import (
    GZIPPED,
    RUNS_CSV,
    add_inputs,
    gather,
    is_table,
    read_runs_csv,
    tidy,
    write_runs_csv,
)
from analysis.fmt import slug
from analysis.workload import Workload, workloads
from sweeps.harness.errors import UsageError
from sweeps.harness.files import HELD_OUT_SEED, atomic_write_text, check_writable
from sweeps.workloads import NAMED

REPORT_FILE = "REPORT.md"
DATE_PREFIX = "Generated on "
# The reference policies play the held-out episodes the sweeps' final figure is made on
# (sweeps.evaluate): this many when no run in the table has a held-out figure.
REFERENCE_EPISODES = 100
# The plots a report writes; older ones of these names in its folder are removed.
PLOT_PREFIXES = ("summary_", "km_", "curves_", "scaling_", "sweep_", "importance_")
# A sweep's best trial as settings, beside the report (analysis.hparams.best_config).
BEST_PREFIX = "best_"


def reference_returns(runs: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    """The reference policies' mean returns that a workload computes itself (the cab env's
    random, heuristic and optimal policies, ``sweeps.workloads.cabs``) for its rows of the
    table, each policy played on the held-out episodes (``HELD_OUT_SEED`` on; as many as the
    runs' held-out figures used, else ``REFERENCE_EPISODES``). None, and a note saying why when
    they could not be computed."""
    for name, kind in NAMED.items():
        part = runs[runs["env"] == name]
        if part.empty or not kind.computes_references():
            continue
        held_out = part.get("final_eval_episodes", pd.Series(dtype=float)).dropna()
        episodes = int(held_out.max()) if len(held_out) else REFERENCE_EPISODES
        return kind.reference_rows(part, episodes, HELD_OUT_SEED)
    return None, None


def measured_references(runs: pd.DataFrame) -> pd.DataFrame:
    """The random-policy reference of every other env (and config) in the table, as its runs
    measured it (``random_return``, ``random_episodes``): one row per (env, variant), the
    median over its experiments (they play the same seeded episodes)."""
    other = runs[runs["random_return"].notna()]
    rows = []
    for (env, variant), part in other.groupby(["env", "variant"], sort=True):
        per_run = part.drop_duplicates("experiment")
        rows.append(
            {
                "env": env,
                "variant": variant,
                "random": float(per_run["random_return"].median()),
                "episodes": int(per_run["random_episodes"].max()),
            }
        )
    return pd.DataFrame(rows, columns=["env", "variant", "random", "episodes"])


def workload_references(
    w: Workload, cabs: pd.DataFrame | None, measured: pd.DataFrame
) -> pd.DataFrame | None:
    """The reference rows of one workload: the cab env's computed ones, or the random policy
    its runs measured (None: none)."""
    if w.kind.computes_references():
        return None if cabs is None else cabs[cabs["variant"] == (w.variant or "base")]
    part = measured[(measured["env"] == w.env) & (measured["variant"] == w.variant)]
    return part if len(part) else None


class _Plots:
    """Draws a report's plots into its folder, in the report's one palette; remembers names."""

    def __init__(self, out_dir: Path, runs: pd.DataFrame, references: pd.DataFrame | None):
        self.out_dir = out_dir
        self.references = references
        self.measured = measured_references(runs)
        self.colours = plots.palette(tables.configurations(tables.select_configurations(runs)))
        self.written: list[str] = []

    def _keep(self, path: Path | None) -> str | None:
        if path is None:
            return None
        self.written.append(path.name)
        return path.name

    def _refs(self, w: Workload) -> dict[str, float]:
        if not w.kind.computes_references():
            refs = workload_references(w, None, self.measured)
            return {} if refs is None else {"random policy": float(refs["random"].iloc[0])}
        if self.references is None:
            return {}
        return plots.references_for_plot(self.references, w.variant or "base")

    def curves(self, w: Workload, signal: str, suffix: str = "") -> str | None:
        path = self.out_dir / f"curves_{w.slug}{suffix}.png"
        targets = {t: w.label(t) for t in w.targets}
        return self._keep(
            plots.plot_learning_curves(
                w.selected, path, w.title, signal, self.colours, targets, self._refs(w)
            )
        )

    def _at_target(self, w: Workload, prefix: str, plot) -> str | None:
        """A plot of each algorithm's best configuration at the workload's target."""
        if w.best.empty:
            return None
        ttt = w.ttt[(w.ttt["signal"] == w.signal) & (w.ttt["target"] == w.target)]
        title = f"{w.title}: time to {w.label(w.target)} ({tables.SIGNAL_NAMES[w.signal]})"
        path = self.out_dir / f"{prefix}_{w.slug}.png"
        return self._keep(plot(ttt, list(w.best["config"]), path, title, self.colours))

    def summary(self, w: Workload) -> str | None:
        return self._at_target(w, "summary", plots.plot_time_to_target)

    def kaplan_meier(self, w: Workload) -> str | None:
        return self._at_target(w, "km", plots.plot_kaplan_meier)

    def scaling(self, w: Workload) -> str | None:
        path = self.out_dir / f"scaling_{w.slug}.png"
        return self._keep(plots.plot_scaling(w.throughput, w.scaling, path, w.title, self.colours))

    def sweeps(self, w: Workload, asha: pd.DataFrame) -> dict[str, str]:
        drawn = {}
        for experiment, algo in zip(asha.get("experiment", []), asha.get("algo", []), strict=True):
            colour = self.colours.of(tables.config_label("sweep", algo, 0, experiment))
            path = self.out_dir / f"sweep_{slug(experiment)}.png"
            targets = {t: w.label(t) for t in w.targets}
            name = self._keep(plots.plot_sweep(w.runs, experiment, path, colour, targets))
            if name:
                drawn[experiment] = name
        return drawn

    def hparams(self, w: Workload, savings: pd.DataFrame) -> dict[str, sweep_sections.SweepHparams]:
        """Per sweep: its hyperparameters' importance (a chart) and its best trial as a command
        and as a JSON file ``best_<sweep>.json`` beside the report."""
        found = {}
        for experiment, algo in zip(
            savings.get("experiment", []), savings.get("algo", []), strict=True
        ):
            part = w.runs[w.runs["experiment"] == experiment]
            trials = tables.sweep_trials(w.runs, experiment)
            importance = hparams.importances(trials, str(part["mode"].iloc[0]))
            colour = self.colours.of(tables.config_label("sweep", algo, 0, experiment))
            title = f"{experiment}: which hyperparameters mattered ({len(trials)} trials)"
            chart = self._keep(
                plots.plot_importance(
                    importance, self.out_dir / f"importance_{slug(experiment)}.png", title, colour
                )
            )
            best = tables.best_trials(tables.trial_summary(part))
            command = json_name = None
            if len(best):
                row, sweep = best.iloc[0], str(part["sweep"].iloc[0])
                command = hparams.best_command(sweep, row)
                json_name = f"{BEST_PREFIX}{slug(experiment)}.json"
                record = {
                    "sweep": sweep,
                    "experiment": experiment,
                    "trial_id": row["trial_id"],
                    "config": hparams.best_config(row),
                    "command": command,
                }
                cut = _cut_short_text(part)
                if cut:  # the best of the trials that ran, not of the planned search
                    record["cut_short"] = cut
                text = json.dumps(record, indent=2, sort_keys=True, default=str) + "\n"
                atomic_write_text(self.out_dir / json_name, text)
                self.written.append(json_name)
            found[experiment] = sweep_sections.SweepHparams(importance, chart, command, json_name)
        return found

    def remove_stale(self) -> None:
        for path in [*self.out_dir.glob("*.png"), *self.out_dir.glob(f"{BEST_PREFIX}*.json")]:
            prefixes = (*PLOT_PREFIXES, BEST_PREFIX)
            if path.name.startswith(prefixes) and path.name not in self.written:
                path.unlink()


def render_report(
    runs: pd.DataFrame,
    out_dir: Path,
    *,
    command: str,
    skipped: Sequence[str] = (),
    deduped: Sequence[str] = (),
    repaired: Sequence[str] = (),
    references: pd.DataFrame | None = None,
    reference_note: str | None = None,
    generated_on: str | None = None,
    held_out: Sequence[str] = (),
) -> str:
    """The Markdown text of the report; writes its PNGs into ``out_dir`` (and removes plots of
    an earlier report there that this one no longer draws)."""
    if generated_on is None:
        generated_on = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    every_run, runs = runs, runs[runs["kind"] != predicted.RATE]  # rate runs: scaling only
    draw = _Plots(out_dir, runs, references)
    loads = workloads(every_run)
    lines = _front_matter(runs, command, generated_on, reference_note)
    lines += family.family_section(
        loads, lambda w: workload_references(w, references, draw.measured), held_out
    )
    lines += ["## Summary", ""]
    for w in loads:
        computed = w.kind.computes_references()
        refs = None if computed else workload_references(w, references, draw.measured)
        lines += summary.summary_section(w, draw.summary(w), refs, draw.kaplan_meier(w))
    for w in loads:
        lines += _detail(w, draw, workload_references(w, references, draw.measured))
    replaced = tables.superseded(runs, pd.concat([w.selected for w in loads]))
    lines += reproducibility.reproducibility_section(
        every_run, skipped, deduped, repaired, replaced
    )
    lines += [
        "## Appendix: secondary metrics",
        "",
        "The signal each workload is not judged by, for completeness.",
        "",
    ]
    for w in loads:
        suffix = "_" + tables.SIGNALS[w.secondary].replace(" ", "_")
        lines += sections.appendix_section(w, draw.curves(w, w.secondary, suffix))
    draw.remove_stale()
    return "\n".join(lines).rstrip() + "\n"


def _front_matter(
    runs: pd.DataFrame, command: str, generated_on: str, reference_note: str | None
) -> list[str]:
    """The title, how the report was made and when, what a configuration is."""
    lines = [
        "<!-- Generated by `python -m analysis report`. Do not edit by hand: re-run it. -->",
        "",
        f"# Results: {', '.join(sorted(runs['env'].unique()))}",
        "",
        *_cut_short_lines(runs),
        f"Generated by `{command}` from the runs listed under *Reproducibility*; do not edit by "
        "hand, re-run the command instead.",
        "",
        f"{DATE_PREFIX}{generated_on}.",
        "",
        "Configurations compared: in a benchmark, every seed of one algorithm at one number of "
        "env runners with the same recorded hyperparameters (runs whose recipe differs are "
        "labelled by what differs); in a sweep, its best trial by the final search metric.",
        "",
    ]
    if reference_note:
        lines += [f"Note: {reference_note}.", ""]
    return lines


def _cut_short_text(part: pd.DataFrame) -> str:
    """One experiment's "9 of 24 trials ran" where its wall-clock cap cut it short, else ""."""
    cells = part.get("cut_short", pd.Series(dtype=str)).dropna().astype(str)
    cells = cells[cells != ""]
    return str(cells.iloc[0]) if len(cells) else ""


def _cut_short_lines(runs: pd.DataFrame) -> list[str]:
    """The report's first words where a sweep in it was cut short by its wall-clock cap: which,
    how far it got, and that its answer is the best of what ran."""
    lines = []
    for experiment, part in runs.groupby("experiment", sort=True):
        cut = _cut_short_text(part)
        if cut:
            lines.append(
                f"**Cut short: {experiment}**: {cut} before its wall-clock cap; its figures are "
                "those of the trials that ran, not of the planned search (finish it with the "
                "`--resume` command its summary printed)."
            )
    return [*lines, ""] if lines else []


def _detail(w: Workload, draw: _Plots, refs: pd.DataFrame | None) -> list[str]:
    """One workload's detail: final performance, time to target and its curves, speedup,
    scaling, its sweeps and the ASHA check."""
    lines = [f"## {w.title}: detail", ""]
    lines += sections.performance_section(w, refs)
    unscored = sorted(
        set(w.runs.loc[w.runs["kind"] == "sweep", "experiment"]) - set(w.selected["experiment"])
    )
    if unscored:
        lines += [
            "Sweeps without a best trial (no trial reported a finite final search metric), "
            f"left out of the comparisons: {', '.join(unscored)}.",
            "",
        ]
    signal = tables.SIGNALS[w.crossing]  # the first crossing of each target
    lines += sections.ttt_section(w, w.crossing, f"### Time to target: {signal}")
    lines += sections.confirmed_section(w)
    curves = draw.curves(w, w.crossing)
    if curves:
        lines += [f"![Learning curves ({signal}): {w.title}]({curves})", ""]
    # the random policy a generic env's runs measured (the cab env's training return explores)
    lines += stability.stability_section(w, None if w.kind.computes_references() else refs)
    lines += sections.speedup_section(w)
    lines += sections.speedup_section(w, library=True)
    lines += scaling.scaling_section(w, draw.scaling(w))
    savings = asha.asha_savings(w.runs)
    lines += sweep_sections.sweep_section(
        w.runs, savings, draw.sweeps(w, savings), draw.hparams(w, savings)
    )
    lines += sweep_sections.asha_check_section(w.runs, asha.asha_check(w.runs))
    return lines


# --- CLI --------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(
        parser,
        "folder to write REPORT.md, the PNG plots and, where an input is a run folder, the "
        "table of the rows it read (runs.csv; runs.csv.gz where an input table is gzipped) into "
        "(e.g. results/cabs)",
    )
    parser.add_argument(
        "--no-references",
        action="store_true",
        help="skip the cab reference rows (random / heuristic policy, exact optimum)",
    )
    parser.add_argument(
        "--held-out",
        nargs="+",
        default=[],
        metavar="ENV",
        help="envs never tuned on (the env family's, sweeps/env_family.py): the table across "
        "the envs shows them apart",
    )
    parser.add_argument(
        "--before",
        nargs="+",
        default=[],
        metavar="RUNS",
        help="runs of the defaults as they stood before a change (folders or tables, as the "
        f"inputs): each algorithm's named '<algo>{family.BEFORE}' throughout, beside the "
        "inputs' own",
    )
    parser.add_argument(
        "--rates",
        nargs="+",
        default=[],
        metavar="RUN_DIR",
        help="short runs of the same configurations in one sitting on one machine (folders or "
        "tables, as the inputs): the scaling section's time on one machine with a core per "
        "process, their env steps/s against the runs' env steps to the target (docs/scaling.md)",
    )


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    check_writable(out)
    collection = gather(args.inputs)
    if args.before:  # the same algorithms before a change: named apart in every table
        before = gather(args.before).runs
        before = before.assign(algo=before["algo"].astype(str) + family.BEFORE)
        collection.runs = tidy(pd.concat([collection.runs, before], ignore_index=True))
    if args.rates:  # the rate runs' rows, apart from the compared ones in the same table
        rates = gather(args.rates).runs.assign(kind=predicted.RATE)
        collection.runs = tidy(pd.concat([collection.runs, rates], ignore_index=True))
    out.mkdir(parents=True, exist_ok=True)
    gzipped = any(str(i).endswith(GZIPPED) for i in args.inputs)
    csv_path = out / (f"{RUNS_CSV}.gz" if gzipped else RUNS_CSV)
    # Its rows already live in tables (runs of record, one per run): the command line below,
    # which names them, regenerates the report, and a copy of them all beside it would only
    # grow the repository by the whole table at each run's report.
    copy = not all(is_table(i) for i in [*args.inputs, *args.before, *args.rates])
    # The table lands beside its report only once the report rendered: a report that fails
    # leaves the table and the report before it as they were, in step.
    pending = csv_path.with_name(f".pending-{os.getpid()}-{csv_path.name}")
    try:
        write_runs_csv(collection.runs, pending)
        runs = read_runs_csv(pending)  # the report reads only the table, exactly as written
        references, note = (None, None) if args.no_references else reference_returns(runs)
        held_out = ["--held-out", *args.held_out] if args.held_out else []
        before_ = ["--before", *args.before] if args.before else []
        rates = ["--rates", *args.rates] if args.rates else []
        command = shlex.join(
            ["python", "-m", "analysis", "report", *args.inputs, *held_out, *before_, *rates]
            + ["--out", args.out]
        )
        text = render_report(
            runs,
            out,
            command=command,
            skipped=collection.skipped,
            deduped=collection.deduped,
            repaired=collection.repaired,
            references=references,
            reference_note=note,
            held_out=args.held_out,
        )
        if copy:
            os.replace(pending, csv_path)
        elif csv_path.exists() and not _is_input(csv_path, args):
            csv_path.unlink()  # an earlier report's copy, of rows the inputs now hold
    finally:
        pending.unlink(missing_ok=True)
    report = out / REPORT_FILE
    atomic_write_text(report, text)
    where = csv_path if copy else "its input tables"
    print(
        f"wrote {report} ({runs['experiment'].nunique()} experiments, {len(runs)} rows; "
        f"the rows: {where})"
    )
    return 0


def _is_input(path: Path, args: argparse.Namespace) -> bool:
    given = [*args.inputs, *args.before, *args.rates]
    return any(Path(i).resolve() == path.resolve() for i in given)

"""``python -m analysis scaling-check``: the prediction checked where this box can measure it.

The same recipe, the same seeds, run once squeezed onto one core (``taskset -c 0 ... --num-cpus
2``) and once on two: the one-core run's prediction of its time on a core per process
(``predicted_train_time_s``, ``sweeps/harness/cpu_time.py``) against the time the two-core run
measured, per seed, at the target (the first iteration whose judged return reached it), and the
env steps to it on each (the model says they agree), and the env steps per second at the end of
training (predicted from one core, measured on two). Runs are told apart by the cores they could
use (``run.json`` ``machine.cores``); a two-core run begun soon after its one-core run ended ran
in its *sitting*, on the same box, and is checked beside the run of record. Writes ``CHECK.md``
(generated; do not edit it by hand).

How to run: ``docs/scaling.md``, "The check: one core against two".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.collect import add_inputs, gather, is_table, write_runs_csv
from analysis.fmt import fmt_int, fmt_time, markdown_table
from sweeps.harness.errors import UsageError
from sweeps.harness.files import atomic_write_text

GOAL = 0.25  # the prediction's goal: within +-25% of the measurement
CHECK_MD = "CHECK.md"
CHECK_RUNS = "check-runs.csv.gz"  # rows read from run folders, kept: it regenerates from them
PAIR = ["algo", "num_env_runners", "seed"]
# A two-core run begun within this long after its one-core run ended ran in its sitting: on the
# same box, in the same stretch (benchmarks/pong_records.py runs it right after).
SITTING_S = 3 * 3600.0
RECORD, SITTING = "of record", "same sitting"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(
        parser,
        out_help=f"folder for {CHECK_MD} and, where an input is a run folder, the table of its "
        f"rows ({CHECK_RUNS}), which regenerates the check with the input tables",
    )


def _target(runs: pd.DataFrame) -> float:
    """The highest target the runs were recorded with (their stop reward)."""
    targets = [max(json.loads(t)) for t in runs["targets"].dropna().unique() if t and t != "[]"]
    if not targets:
        raise UsageError("the runs hold no target (run.json targets): nothing to time")
    return max(targets)


def first_reaching(trial: pd.DataFrame, target: float) -> pd.Series | None:
    """The first iteration whose judged return reached ``target``; None if none did."""
    hit = trial[trial["metric_value"] >= target]
    return None if hit.empty else hit.iloc[0]


def at_steps(trial: pd.DataFrame, column: str, steps: float) -> float:
    """``column`` when the trial had sampled ``steps`` env steps (linear between iterations)."""
    ordered = trial.sort_values("env_steps")
    return float(np.interp(steps, ordered["env_steps"], ordered[column]))


def replay_ratio(trial: pd.DataFrame) -> float:
    """Each sample trained on how many times, over the run: the learners' samples trained on
    (one per sample per pass) over the env steps sampled, at its last iteration; NaN where the
    run's table predates the ``steps_trained`` column. An asynchronous learner's ratio is set by
    its speed against its runners', which is what the core count changes: where it differs
    between the two runs, so may their env steps to a target."""
    if "steps_trained" not in trial.columns:
        return math.nan
    last = trial.sort_values("env_steps").iloc[-1]
    return (
        float(last["steps_trained"]) / float(last["env_steps"]) if last["env_steps"] else math.nan
    )


def learner_share(trial: pd.DataFrame, steps: float) -> float:
    """The learner side's CPU seconds (the trial's driver, where the learner trains with
    ``num_learners`` 0, and any remote learners) over the env runners', when the trial had
    sampled ``steps`` env steps; NaN where the table has no CPU accounting. A run squeezed onto
    one core is the same run in slow motion only where this matches the two-core run's: the
    processes then shared the core in the proportions they use their own, and an asynchronous
    learner trained on each sample as often."""
    columns = ("cpu_driver_s", "cpu_env_runners_s")
    if any(c not in trial.columns or trial[c].isna().all() for c in columns):
        return math.nan
    learner = at_steps(trial.dropna(subset=["cpu_driver_s"]), "cpu_driver_s", steps)
    if "cpu_learners_s" in trial.columns and trial["cpu_learners_s"].notna().any():
        learner += at_steps(trial.dropna(subset=["cpu_learners_s"]), "cpu_learners_s", steps)
    runners = at_steps(trial.dropna(subset=["cpu_env_runners_s"]), "cpu_env_runners_s", steps)
    return learner / runners if runners > 0 else math.nan


def machine_speed(trial: pd.DataFrame) -> float:
    """The run's machine speed: its raw env steps/s at the start (``run.json``), NaN unknown."""
    if "raw_env_start" not in trial.columns:
        return math.nan
    speeds = trial["raw_env_start"].dropna()
    return float(speeds.median()) if len(speeds) else math.nan


def _longest(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of one seed's run on one number of cores, in order: where it ran more than once
    (a short probe, then a run to the target), the run that sampled the most env steps."""
    steps = runs.groupby("experiment")["env_steps"].max()
    chosen = runs[runs["experiment"] == steps.idxmax()]
    return chosen.sort_values("training_iteration")


def span(trial: pd.DataFrame) -> tuple[float, float]:
    """When a run's training began and ended (seconds since the epoch; NaN unknown): its
    ``started_at``, and that plus its last result's time."""
    if "started_at" not in trial.columns:
        return math.nan, math.nan
    started = pd.to_datetime(trial["started_at"].dropna(), utc=True, errors="coerce").dropna()
    if started.empty:
        return math.nan, math.nan
    begin = started.iloc[0].timestamp()
    return begin, begin + float(trial["time_total_s"].max())


def _sitting(one: pd.DataFrame, two_core: pd.DataFrame) -> pd.DataFrame | None:
    """The two-core run of ``one``'s sitting: the first to begin within ``SITTING_S`` after the
    one-core run ended (the queue runs it right after, on the same box); None where none did."""
    _, ended = span(one)
    near = []
    for _, trial in two_core.groupby("experiment"):
        begin, _ = span(trial)
        if 0.0 <= begin - ended <= SITTING_S:
            near.append((begin, trial.sort_values("training_iteration")))
    return min(near, key=lambda pair: pair[0])[1] if near else None


def seed_rows(runs: pd.DataFrame, target: float) -> pd.DataFrame:
    """One row per (algorithm, runners, seed) run on both one core and two (``_longest``), the
    two-core run of record's; and one more where a two-core run ran in the one-core run's
    sitting (``_sitting``), its ``two_core`` "same sitting"."""
    rows = []
    for key, group in runs.groupby(PAIR, sort=True):
        if not {1, 2} <= set(group["cores"].astype(int)):
            continue
        one = _longest(group[group["cores"] == 1])
        two_core = group[group["cores"] == 2]
        sitting = _sitting(one, two_core)
        others = two_core
        if sitting is not None:
            others = two_core[two_core["experiment"] != sitting["experiment"].iloc[0]]
        pairs = [] if others.empty else [(RECORD, _longest(others))]
        pairs += [] if sitting is None else [(SITTING, sitting)]
        for kind, two in pairs:
            rows.append({**dict(zip(PAIR, key, strict=True)), **_pair(one, two, target, kind)})
    return pd.DataFrame(rows)


def _pair(one: pd.DataFrame, two: pd.DataFrame, target: float, kind: str) -> dict[str, Any]:
    """One core's run against two cores' (``kind``: of record, or of the same sitting)."""
    row: dict[str, Any] = {"two_core": kind}
    hit_one, hit_two = first_reaching(one, target), first_reaching(two, target)
    row["steps_one"] = hit_one["env_steps"] if hit_one is not None else math.nan
    row["steps_two"] = hit_two["env_steps"] if hit_two is not None else math.nan
    row["measured_one"] = hit_one["train_time_s"] if hit_one is not None else math.nan
    row["predicted"] = hit_one["predicted_train_time_s"] if hit_one is not None else math.nan
    row["measured_two"] = hit_two["train_time_s"] if hit_two is not None else math.nan
    row["time_error"] = row["predicted"] / row["measured_two"] - 1.0
    # The same env steps on both (the fewer the two runs sampled): the time to them,
    # predicted from one core against measured on two; any run reaches it, target or not.
    steps = float(min(one["env_steps"].max(), two["env_steps"].max()))
    row["common_steps"] = steps
    row["to_steps_predicted"] = at_steps(one, "predicted_train_time_s", steps)
    row["to_steps_measured"] = at_steps(two, "train_time_s", steps)
    row["steps_error"] = row["to_steps_predicted"] / row["to_steps_measured"] - 1.0
    row["steps_ratio"] = row["steps_one"] / row["steps_two"]
    # The two runs' machines: a one-core run's seconds carry its box's speed, so its
    # prediction is also set at the two-core run's (raw env steps/s at each run's start)
    row["speed"] = machine_speed(one) / machine_speed(two)
    row["time_error_scaled"] = row["predicted"] * row["speed"] / row["measured_two"] - 1.0
    row["steps_error_scaled"] = (
        row["to_steps_predicted"] * row["speed"] / row["to_steps_measured"] - 1.0
    )
    row["replay_one"], row["replay_two"] = replay_ratio(one), replay_ratio(two)
    row["share_one"] = learner_share(one, steps)
    row["share_two"] = learner_share(two, steps)
    return row


def _pct(x: float) -> str:
    return "—" if not np.isfinite(x) else f"{100 * x:+.0f}%"


def _times(x: float) -> str:
    return "—" if not np.isfinite(x) else f"{x:.2f}×"


def _ratio(x: float) -> str:
    return "—" if not np.isfinite(x) else f"{x:.2f}"


def _within(errors: pd.Series) -> str:
    errors = errors.dropna()
    if errors.empty:
        return "no seed reached the target on both"
    inside = int((errors.abs() <= GOAL).sum())
    return (
        f"median error {_pct(float(errors.median()))}, {inside}/{len(errors)} seeds within "
        f"±{GOAL:.0%}"
    )


def check_lines(runs: pd.DataFrame, command: str) -> list[str]:
    """CHECK.md: what was checked and how, a section per env, and the runs."""
    lines = [
        "<!-- Generated by `python -m analysis scaling-check`. Do not edit by hand: re-run it. -->",
        "",
        "# The scaling prediction checked: one core against two",
        "",
        f"Generated by `{command}` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC from the runs "
        "listed below. The model and how to read this: `docs/scaling.md`.",
        "",
        "Each recipe ran on the same seeds squeezed onto one core (`taskset -c 0`) and on two. "
        "From its processes' CPU time the one-core run predicts its time on a core per "
        "process: the two-core run, measured. Where a seed ran more than once on the same "
        "cores, its run with the most env steps counts (a short probe gives way to a run to the "
        "target). Target: the env's highest (the first iteration whose judged return reached "
        "it: the first crossing, confirmed or not). Error = predicted / measured − 1 (goal: "
        f"within ±{GOAL:.0%}). Env steps to the target should agree (the ratio one core / two "
        "cores). Time to the same env steps (the fewer the two runs sampled), predicted from one "
        "core against measured on two: the same check on every seed, target or not. Trained per "
        "sampled: how many times the learner trained on each sample, over the run (its "
        "`steps_trained` over its env steps; — where the table predates that column): an "
        "asynchronous learner's replay is set by its speed against its runner's, and where it "
        "differs so may the env steps to the target. Learner : runners CPU: the learner side's "
        "CPU seconds (the driver, and remote learners where there are any) over the env "
        "runners', at the same env steps: where one core's matches two cores', the processes "
        "shared the one core in the proportions they used two, so the one-core run is the "
        "two-core run in slow motion (and an asynchronous learner trained on each sample as "
        "often). The two-core run *of record* may have run in another stretch, on a box of "
        "different speed: machine speed is each run's raw env steps/s at its start (one core's "
        "over two cores'), and the errors at the two-core run's speed scale the one-core "
        "prediction by it (to target, to the same env steps): a proxy for the box, one process "
        "stepping the env, not a measurement of the trial. A two-core run of the *same sitting* "
        f"began within {SITTING_S / 3600:g} hours after the one-core run ended, on the same box "
        "(the queue runs it right after): the check without the proxy.",
        "",
    ]
    for env, env_runs in runs.groupby("env", sort=True):
        target = _target(env_runs)
        lines += env_lines(str(env), seed_rows(env_runs, target), target)
    return lines + _machine_lines(runs)


def env_lines(env: str, rows: pd.DataFrame, target: float) -> list[str]:
    lines = [f"## {env}: to a judged return of {target:,g}", ""]
    if rows.empty:
        return lines + ["No (algorithm, runners, seed) ran on both one core and two.", ""]
    for algo, both in rows.groupby("algo", sort=True):
        g, sat = both[both["two_core"] == RECORD], both[both["two_core"] == SITTING]
        said = []
        if not g.empty:
            said.append(
                f"time to target {_within(g['time_error'])}; time to the same env "
                f"steps {_within(g['steps_error'])}; env steps to target one core / two cores "
                f"{_ratio_spread(g['steps_ratio'])}. At the two-core runs' machine speed: time "
                f"to target {_within(g['time_error_scaled'])}; time to the same env steps "
                f"{_within(g['steps_error_scaled'])}."
            )
        if not sat.empty:
            said.append(
                "**In one sitting** (the two-core run right after the one-core run, on the "
                f"same box; machine speed one core / two cores {_ratio_spread(sat['speed'])}): "
                f"time to target {_within(sat['time_error'])}; time to the same env steps "
                f"{_within(sat['steps_error'])}."
            )
        lines.append(f"- **{algo}**: " + " ".join(said))
    lines.append("")
    header = [
        "algorithm", "env runners", "seed", "two-core run", "env steps to target, 1 core",
        "2 cores",
        "time, 1 core (measured)", "time, 2 cores (predicted from 1 core)",
        "time, 2 cores (measured)", "error", "same env steps",
        "time to them, 2 cores (predicted from 1 core)", "(measured)", "error",
        "machine speed, 1 core / 2 cores", "errors at the 2-core run's speed",
        "trained per sampled, 1 core", "2 cores", "learner : runners CPU, 1 core", "2 cores",
    ]  # fmt: skip
    body = [
        [
            r["algo"],
            str(int(r["num_env_runners"])),
            str(int(r["seed"])),
            r["two_core"],
            fmt_int(r["steps_one"]),
            fmt_int(r["steps_two"]),
            fmt_time(r["measured_one"]),
            fmt_time(r["predicted"]),
            fmt_time(r["measured_two"]),
            _pct(r["time_error"]),
            fmt_int(r["common_steps"]),
            fmt_time(r["to_steps_predicted"]),
            fmt_time(r["to_steps_measured"]),
            _pct(r["steps_error"]),
            _times(r["speed"]),
            f"{_pct(r['time_error_scaled'])}, {_pct(r['steps_error_scaled'])}",
            _times(r["replay_one"]),
            _times(r["replay_two"]),
            _ratio(r["share_one"]),
            _ratio(r["share_two"]),
        ]
        for _, r in rows.iterrows()
    ]
    return lines + [markdown_table(header, body), ""]


def _ratio_spread(values: pd.Series) -> str:
    values = values.dropna()
    if values.empty:
        return "—"
    return f"{values.median():.2f} ({values.min():.2f}–{values.max():.2f})"


def _machine_lines(runs: pd.DataFrame) -> list[str]:
    first = runs.iloc[0]
    lines = [
        "## Runs",
        "",
        f"Machine: {first.get('cpu_model', '')}, {first.get('platform', '')}; ray "
        f"{first.get('ray_version', '')}, torch {first.get('torch_version', '')}, Python "
        f"{first.get('python_version', '')}. The machine's speed (raw env steps/s at each run's "
        "start) is beside each run: the two runs of a pair compare only where it is close.",
        "",
    ]
    experiments = runs.drop_duplicates("experiment")[["experiment", "cores", "command"]]
    speeds = runs.groupby("experiment")["raw_env_start"].median()
    for _, r in experiments.iterrows():
        speed = speeds.get(r["experiment"], math.nan)
        lines.append(
            f"- `{r['experiment']}` ({int(r['cores'])} core(s), machine speed "
            f"{fmt_int(speed)}): `{r['command']}`"
        )
    return lines + [""]


def keep_rows(
    args: argparse.Namespace, runs: pd.DataFrame
) -> tuple[list[str], pd.DataFrame | None]:
    """The tables that regenerate the check, and the rows to keep in ``CHECK_RUNS`` beside it
    (None: nothing to write, every input is a table): its run folders' rows, with those of that
    table where it is an input too; never a row another input table holds (each run of record
    keeps its own table, and a copy would grow the repository by it at each check)."""
    home = Path(args.out) / CHECK_RUNS
    same = [t for t in args.inputs if is_table(t) and Path(t).resolve() == home.resolve()]
    others = [t for t in args.inputs if is_table(t) and t not in same]
    if len(others) + len(same) == len(args.inputs):
        return list(args.inputs), None
    elsewhere = set().union(*(pd.read_csv(t, usecols=["experiment"])["experiment"] for t in others))
    return [str(home), *others], runs[~runs["experiment"].isin(elsewhere)]


def run(args: argparse.Namespace) -> int:
    collection = gather(args.inputs)
    runs = collection.runs
    missing = [c for c in ("cores", "predicted_train_time_s") if c not in runs.columns]
    if missing or runs["predicted_train_time_s"].isna().all():
        raise UsageError("the runs hold no CPU accounting (run before per-process CPU time)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tables, kept = keep_rows(args, runs)
    command = shlex.join(["python", "-m", "analysis", "scaling-check", *tables])
    command += f" --out {shlex.quote(str(out))}"
    text = "\n".join(check_lines(runs, command))
    # The check rendered before its table changes: one that fails leaves both as they were.
    if kept is not None:
        write_runs_csv(kept, out / CHECK_RUNS)
    atomic_write_text(out / CHECK_MD, text)
    print(text)
    return 0

"""Collect Tune experiment folders into one tidy table: one row per trial and training iteration.

    python -m analysis collect ray_results/apex_cabs ray_results/dqn_cabs \
        --out results/mine/runs.csv.gz
    python -m analysis collect runs/mainjob-s0 --out results/cabs/runs/mainjob-s0.csv.gz

An experiment folder is ``<storage_path>/<name>/`` with our runner's ``run.json`` and one folder per
trial (``params.json`` + ``result.json``). A parent folder holding several experiments is accepted
too: experiments are found by their ``run.json``. Everything downstream (tables, plots, the report)
reads only the table built here, never the folders.

Here: the table's schema (columns, dtypes, order), finding the experiment folders, the table
itself (also read from and written to ``runs.csv``) and the command line. One folder's rows are
read by :mod:`analysis.run_folder`, which fills these columns.

A table named ``*.csv.gz`` is written and read gzipped (about a twentieth of the size: the
``command``, ``stop`` and platform columns repeat on every row), e.g. the Pong probes' tables in
``results/pong/candidates/``.

Broken pieces (truncated ``result.json`` lines, empty or half-written trial folders, a missing
``params.json``) are skipped and listed in one warning; what is valid is still collected.

One file (over 500 lines): the table's columns, how each is read from a result, and the table's
own file (written, read, gathered from folders and tables alike) are one contract; one folder's
reading is ``run_folder.py``.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.run_folder import HP_PREFIX, RUN_FILE, read_experiment
from sweeps.harness.errors import UsageError
from sweeps.harness.files import atomic_write_bytes, atomic_write_text, check_writable

RUNS_CSV = "runs.csv"
GZIPPED = ".csv.gz"  # a runs table written and read gzipped
TABLE_SUFFIXES = (".csv", GZIPPED)


def is_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a runs table (``.csv`` or ``.csv.gz``) rather than a folder."""
    return Path(path).name.endswith(TABLE_SUFFIXES)


# Column order of the tidy table; hyperparameter columns (``hp/<dotted path>``, sorted) go between
# the identity columns and the per-iteration columns.
ID_COLUMNS = [
    "sweep",
    "kind",
    "algo",
    "env",
    "variant",
    "experiment",
    "trial_id",
    "seed",
    "num_env_runners",
    "tm_seed",
]
# The trial's CPU time per process (result suite/cpu, sweeps/harness/cpu_time.py), lifetime sums
# at each iteration; NaN in results written before it, or without /proc to read.
CPU_COLUMNS = [
    # train_time_s on a machine with a core per process of the trial: a prediction
    "predicted_train_time_s",
    "cpu_wall_s",  # the wall-clock the figures span (evaluation included)
    "cpu_trial_s",  # CPU seconds of all the trial's processes
    "cpu_machine_s",  # the machine's busy CPU seconds on the run's cores, everything
    "cpu_slowdown",  # 1 + waited / ran: how much slower than on a core each
    "cpu_predicted_factor",  # predicted / measured wall-clock
    "cpu_busiest_utilisation",  # the busiest process's CPU seconds / cpu_wall_s
    "cpu_trial_cpus",  # the trial's CPU bundles
    "cpu_cores_predicted",  # the cores of the predicted machine: a core per process
    # CPU seconds per kind of process; NaN where the trial has none of that kind
    "cpu_driver_s",  # the trial's own process (the learner too with num_learners 0)
    "cpu_env_runners_s",  # summed over the env runners
    "cpu_env_runner_max_s",  # the busiest env runner's
    "cpu_learners_s",  # remote learners
    "cpu_aggregators_s",  # IMPALA's and APPO's aggregator actors
    "cpu_replay_shards_s",  # Ape-X's replay shards
]
# The confirmed target's checks (sweeps/harness/confirm.py): each check's figures on the row of
# the iteration it followed, NaN on the others (and in runs that stopped at the first crossing).
CONFIRM_COLUMNS = [
    "confirm_return",  # the seeded episodes' mean return, the judged policy's (harness/confirm)
    "confirm_ci95",  # half-width of its 95% interval
    "confirm_greedy_return",  # the greedy policy on the same episodes
    "confirm_sampled_return",  # the sampled policy on them (NaN for a Q-learner)
    "confirm_checks",  # checks so far, lifetime
    "confirm_cut",  # of the check's episodes, those ended at the env's time limit
]
ITERATION_COLUMNS = [
    "training_iteration",
    "env_steps",  # env steps sampled, lifetime
    "train_time_s",  # training wall-clock, evaluation excluded (the suite's clock)
    "eval_time_s",  # wall-clock spent in greedy evaluation, cumulative
    "periodic_eval_s",  # of it, periodic greedy evaluation (the checks excluded), cumulative
    "evaluations",  # periodic greedy evaluations run, lifetime (--eval-share thins them)
    # 1 where this iteration's periodic evaluation counted each episode once from its own seeded
    # start (keys.PERIODIC_ONCE); NaN where none ran, or RLlib's first-N-to-end count made it
    "periodic_once",
    "time_total_s",  # Tune's total wall-clock (includes evaluation)
    "return_mean",  # training episodes (exploring policy)
    "return_min",
    "return_max",
    # the training games return_mean is the mean of: the last 20 to end over all env runners
    # (keys.RETURN_WINDOW_GAMES); NaN in runs made before it, whose return_mean was the mean over
    # the runners of each runner's own last 20 (the same figure at one runner)
    "return_window_games",
    "greedy_return",  # latest greedy evaluation return, carried forward
    "pct_of_optimum",  # greedy_return / optimum * 100 (cabs)
    "env_steps_per_s",  # env steps / train_time_s, lifetime
    "metric_value",  # the sweep's search metric (run.json "metric") at this iteration
    "entropy",  # the policy's entropy (nats), policy-gradient learners; NaN for Q-learners
    # samples the learners trained on, lifetime, each counted once per pass (keys.trained_steps):
    # over env_steps, how many times each sample was trained on (APPO's replay of its batches,
    # DQN's training intensity), which the processes' speeds set where learning is asynchronous
    "steps_trained",
    *CONFIRM_COLUMNS,
    *CPU_COLUMNS,
]
# Iteration columns that tables written before them lack (read as NaN there).
OPTIONAL_COLUMNS = [
    "return_window_games",
    "periodic_eval_s",
    "evaluations",
    "periodic_once",
    "entropy",
    "steps_trained",
    *CONFIRM_COLUMNS,
    *CPU_COLUMNS,
]
TRIAL_COLUMNS = [
    "trial_status",
    # ``python -m sweeps.evaluate``: the final checkpoint's greedy episodes (final_evaluation.json)
    "final_eval_return",  # their mean return
    "final_eval_ci95",  # half-width of its 95% confidence interval
    "final_eval_episodes",
    "final_eval_pct",  # cabs: % of the optimal policy's mean return on the same episodes
    # cabs base variant: the greedy policy's exact % of the optimum (DP, no episodes), and the
    # direct-ride heuristic's (envs.optimum.evaluate_policy)
    "final_eval_exact_pct",
    "final_eval_exact_heuristic_pct",
    # ``sweeps.evaluate --sampled`` (IMPALA, APPO): the same episodes with the actions sampled
    # from the policy's distribution, as in training; their mean return and its 95% half-width
    "final_eval_sampled_return",
    "final_eval_sampled_ci95",
    # The kind of the process that ran longest on a core over the whole trial (its last result's
    # suite/cpu busiest, the index dropped: "env_runner_3" -> "env_runner"; "" without figures).
    # A trial column: the figures are lifetime sums, so the last result's busiest is the trial's,
    # and each kind's seconds at every iteration are in the cpu_*_s columns.
    "cpu_busiest",
]
EXPERIMENT_COLUMNS = [
    "metric",
    "mode",
    "scheduler",
    "time_attr",
    "max_t",
    "budget_env_steps",  # env-step budget of one trial (stop criterion and/or scheduler max_t)
    "configs_from",  # --configs-from: the experiment whose sampled configurations this one re-ran
    "stop",  # run.json "stop" as JSON
    "optimum",
    # A uniformly random policy's mean return and its episode count, measured by the run itself
    # (run.json "references"; any env but the cab env, whose references the report computes).
    "random_return",
    "random_episodes",
    "targets",  # run.json "targets" as a JSON list
    # The target a trial's checks confirmed (its stop on suite/confirm_return) and the seeded
    # episodes of each check; NaN where the first crossing stopped the run
    "confirm_target",
    "confirm_episodes",
    "command",
    # The run's --set settings outside its recorded hyperparameters ("key=JSON; ..."; "" for
    # none): they tell recipes apart as the hp/ columns do
    "overrides",
    "git_commit",
    "git_dirty",  # "true" when run from a modified working tree, "" when unknown
    "ray_version",
    "torch_version",
    "python_version",
    "cpus",  # the CPUs Ray declared (may be more than the cores, on purpose)
    "cores",  # the cores the run's processes could use (run.json machine.cores; NA before it)
    "gpus",
    "cpu_model",
    "platform",
    "load",  # the machine's 1-minute load average at start -> end ("" when not recorded)
    # The machine's speed, its raw env rate in env steps/s at the run's start and end
    # (sweeps/harness/machine_speed.py; NaN where not measured, as before it was)
    "raw_env_start",
    "raw_env_end",
    "started_at",
    "ended_at",
    "run_status",
    # "9 of 24 trials ran" where the sweep's wall-clock cap cut it short, else ""
    "cut_short",
]
INT_COLUMNS = [
    "seed",
    "num_env_runners",
    "tm_seed",
    "training_iteration",
    "env_steps",
    "budget_env_steps",
    "cpus",
    "cores",
    "gpus",
    "final_eval_episodes",
    "random_episodes",
]
FLOAT_COLUMNS = ITERATION_COLUMNS + [
    "max_t",
    "confirm_target",
    "confirm_episodes",
    "raw_env_start",
    "raw_env_end",
    "optimum",
    "random_return",
    "final_eval_return",
    "final_eval_ci95",
    "final_eval_pct",
    "final_eval_exact_pct",
    "final_eval_exact_heuristic_pct",
    "final_eval_sampled_return",
    "final_eval_sampled_ci95",
]
# Every other column is text ("" when missing).
STR_COLUMNS = [
    c
    for c in ID_COLUMNS + TRIAL_COLUMNS + EXPERIMENT_COLUMNS
    if c not in INT_COLUMNS and c not in FLOAT_COLUMNS
]
WARNING_ITEMS = 5  # skipped items named in the warning line
SORT_COLUMNS = ["env", "variant", "kind", "algo", "experiment", "trial_id", "training_iteration"]


@dataclass
class Collection:
    """The tidy table and what was skipped while building it."""

    runs: pd.DataFrame
    skipped: list[str] = field(default_factory=list)
    # Trials whose result.json reported an iteration more than once (a restore from a checkpoint
    # in a folder written before the runner trimmed it): the last report of each was kept.
    deduped: list[str] = field(default_factory=list)
    # Trials whose training clock went back at a restore (folders written before the clock was
    # checkpointed): their clock was continued from the row before each restore.
    repaired: list[str] = field(default_factory=list)

    def warning(self) -> str | None:
        """One warning line naming what was skipped, the first few by name (None when nothing
        was); the report lists them all."""
        if not self.skipped:
            return None
        more = len(self.skipped) - WARNING_ITEMS
        named = "; ".join(self.skipped[:WARNING_ITEMS]) + (f"; and {more} more" if more > 0 else "")
        return f"warning: skipped {len(self.skipped)} item(s): {named}"

    def require_runs(self, inputs: Sequence[str | os.PathLike[str]]) -> None:
        """Raise ``UsageError`` (one line) when nothing valid was collected."""
        if self.runs.empty:
            why = f" (skipped {len(self.skipped)} item(s), first: {self.skipped[0]})"
            raise UsageError(
                "no valid trial results in "
                + ", ".join(map(str, inputs))
                + (why if self.skipped else "")
            )


# --- Finding experiments ----------------------------------------------------------------------


def find_experiments(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Experiment folders (holding ``run.json``) named by, or found below, each path.

    Raises ``UsageError`` for a path that does not exist or holds no experiment.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        if not path.is_dir():
            raise UsageError(f"{path}: not a directory (expected a Tune experiment folder)")
        experiments = _experiments_below(path)
        if not experiments:
            raise UsageError(
                f"{path}: not a Tune experiment (no {RUN_FILE} in it or in its sub-folders)"
            )
        found.extend(experiments)
    unique: dict[Path, Path] = {}
    for exp in found:
        unique.setdefault(exp.resolve(), exp)
    return list(unique.values())


def _experiments_below(root: Path) -> list[Path]:
    if (root / RUN_FILE).is_file():
        return [root]
    experiments = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if RUN_FILE in filenames:
            experiments.append(Path(dirpath))
            dirnames.clear()  # trials live below; never walk into them
        else:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
    return experiments


# --- The table --------------------------------------------------------------------------------


def column_order(columns: Iterable[str]) -> list[str]:
    """The table's fixed column order; ``hp/*`` columns sorted between ids and iterations."""
    hp = sorted(c for c in set(columns) if c.startswith(HP_PREFIX))
    return ID_COLUMNS + hp + ITERATION_COLUMNS + TRIAL_COLUMNS + EXPERIMENT_COLUMNS


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """Fixed column order, dtypes and row order (so the CSV is byte-for-byte reproducible)."""
    frame = frame.reindex(columns=column_order(frame.columns))
    for col in INT_COLUMNS:
        frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype("Int64")
    for col in STR_COLUMNS:
        frame[col] = frame[col].astype("str").where(frame[col].notna(), "")
    for col in FLOAT_COLUMNS:
        if col not in INT_COLUMNS:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    frame = frame.sort_values(SORT_COLUMNS, kind="stable", na_position="last")
    return frame.reset_index(drop=True)


def collect(paths: Sequence[str | os.PathLike[str]]) -> Collection:
    """Read experiment folders (or parents of them) into the tidy table.

    Raises ``UsageError`` for a path that does not exist or holds no experiment; broken trials and
    lines are skipped and listed in ``Collection.skipped``. The table may be empty.
    """
    skipped: list[str] = []
    deduped: list[str] = []
    repaired: list[str] = []
    rows: list[dict[str, Any]] = []
    for exp_dir in find_experiments(paths):
        rows.extend(read_experiment(exp_dir, skipped, deduped, repaired))
    frame = pd.DataFrame(rows, columns=None if rows else column_order([]))
    return Collection(tidy(frame), skipped, deduped, repaired)


def gather(inputs: Sequence[str]) -> Collection:
    """Experiment folders (collected) and ``runs.csv`` tables (read) as one table, for the
    command line: raises ``UsageError`` (one line) when nothing valid is in them, and prints the
    one warning line naming what was skipped."""
    csvs = [p for p in inputs if is_table(p)]
    for path in csvs:
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such file")
    dirs = [p for p in inputs if p not in csvs]
    collection = collect(dirs) if dirs else Collection(tidy(pd.DataFrame()), [])
    frames = [f for f in [*map(read_runs_csv, csvs), collection.runs] if not f.empty]
    if frames:
        runs = pd.concat(frames, ignore_index=True)
        # The same experiment given twice (its folder and a table holding it): one row each,
        # the folder's (it is the source; the table may predate a later final evaluation).
        keys = ["experiment", "trial_id", "training_iteration"]
        collection.runs = tidy(runs.drop_duplicates(keys, keep="last"))
    collection.require_runs(inputs)
    if collection.warning():
        print(collection.warning(), file=sys.stderr)
    return collection


def write_runs_csv(runs: pd.DataFrame, path: Path) -> None:
    """Write the table (atomically: a half-written runs.csv is never left behind), gzipped
    where ``path`` ends in ``.csv.gz`` (no timestamp inside: the same table, the same bytes)."""
    text = runs.to_csv(index=False, lineterminator="\n")
    if Path(path).name.endswith(GZIPPED):
        atomic_write_bytes(path, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    else:
        atomic_write_text(path, text)


def read_runs_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a table written by ``write_runs_csv`` back with the same dtypes."""
    try:
        frame = pd.read_csv(
            path, dtype={c: "str" for c in STR_COLUMNS}, keep_default_na=True, low_memory=False
        )
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as e:  # pandas' parse errors too
        raise UsageError(f"{path}: not a readable runs table ({type(e).__name__}: {e})") from e
    required = [c for c in ID_COLUMNS + ITERATION_COLUMNS if c not in OPTIONAL_COLUMNS]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise UsageError(f"{path}: not a runs table written by analysis (missing {missing[0]!r})")
    return tidy(predicted_by_the_model_now(frame))


# The CPU figures a row's prediction is derived from (cpu_time.predicted_factor's arguments).
_MODEL_COLUMNS = [
    "train_time_s",
    "cpu_wall_s",
    "cpu_slowdown",
    "cpu_busiest_utilisation",
    "cpu_trial_s",
    "cpu_cores_predicted",
]


def predicted_by_the_model_now(frame: pd.DataFrame) -> pd.DataFrame:
    """``predicted_train_time_s`` derived again from a table's CPU columns by the model as it
    stands (``cpu_time.predicted_factor``), as a run folder's results are when collected: a table
    collected under an earlier form of the model is read by this one. Rows without the figures
    keep what they have."""
    from sweeps.harness.cpu_time import predicted_factor

    if frame.empty or any(c not in frame.columns for c in _MODEL_COLUMNS):
        return frame
    has = frame["cpu_wall_s"].notna() & frame["train_time_s"].notna()
    if not has.any():
        return frame
    rows = frame.loc[has, _MODEL_COLUMNS].astype("float64")
    factors = [
        predicted_factor(wall, slowdown, utilisation * wall, trial, cores)
        for _, wall, slowdown, utilisation, trial, cores in rows.itertuples(index=False)
    ]
    now = pd.Series(rows["train_time_s"].to_numpy() * factors, index=rows.index)
    recorded = pd.to_numeric(
        frame.loc[has, "predicted_train_time_s"]
        if "predicted_train_time_s" in frame.columns
        else pd.Series(float("nan"), index=rows.index),
        errors="coerce",
    )
    # A row the model now gives the same figure (to rounding) keeps its bytes.
    changed = ~((now - recorded).abs() <= 1e-9 * recorded.abs().clip(lower=1.0))
    frame = frame.copy()
    frame.loc[changed[changed].index, "predicted_train_time_s"] = now[changed]
    return frame


# --- CLI --------------------------------------------------------------------------------------


def add_inputs(parser: argparse.ArgumentParser, out_help: str | None) -> None:
    """The arguments the analysis commands share: the inputs, and ``--out`` (``out_help`` says
    what it names; None: the command writes nothing)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="RUN_DIR",
        help="Tune experiment folder (with run.json), a folder containing several, or a runs.csv "
        "(or .csv.gz) written by `python -m analysis collect`",
    )
    if out_help is not None:
        parser.add_argument("--out", required=True, help=out_help)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(
        parser,
        "CSV file to write (e.g. results/cabs/runs.csv; a name ending in .csv.gz is gzipped); a "
        "folder gets runs.csv inside it",
    )
    parser.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out the experiments whose name matches GLOB (fnmatch, e.g. "
        "'cabs-base-5seeds-*': runs of record that later runs replaced); repeatable; a GLOB "
        "that matches no experiment is an error",
    )


def drop_experiments(runs: pd.DataFrame, globs: Sequence[str]) -> pd.DataFrame:
    """``runs`` without the experiments whose name matches one of ``globs`` (fnmatch); a
    UsageError (nothing written) for a glob that matches none, or one that leaves no row."""
    names = pd.Series(runs["experiment"].unique())
    gone: set[str] = set()
    for glob in globs:
        matched = {n for n in names if fnmatch.fnmatchcase(n, glob)}
        if not matched:
            raise UsageError(f"--drop {glob!r} matches no experiment of the inputs")
        gone |= matched
    kept = runs[~runs["experiment"].isin(gone)]
    if globs and kept.empty:
        raise UsageError("--drop leaves out every experiment: nothing to write")
    return kept.reset_index(drop=True)


def csv_target(out: str) -> Path:
    path = Path(out)
    return path if is_table(path) else path / RUNS_CSV


def run(args: argparse.Namespace) -> int:
    out = csv_target(args.out)
    if out.is_dir():
        raise UsageError(f"{out}: is a directory")
    check_writable(out)
    collection = gather(args.inputs)
    runs = drop_experiments(collection.runs, args.drop)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_runs_csv(runs, out)
    n_trials = runs.groupby(["experiment", "trial_id"]).ngroups
    dropped = collection.runs["experiment"].nunique() - runs["experiment"].nunique()
    print(
        f"wrote {out}: {len(runs)} rows, {n_trials} trials"
        + (f" ({dropped} experiment(s) left out by --drop)" if dropped else "")
    )
    return 0

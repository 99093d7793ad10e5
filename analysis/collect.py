"""Collect Tune experiment folders into one tidy table: one row per trial and training iteration.

    python -m analysis collect ray_results/apex_cabs ray_results/dqn_cabs \
        --out results/cabs/runs.csv

An experiment folder is ``<storage_path>/<name>/`` with our runner's ``run.json`` and one folder per
trial (``params.json`` + ``result.json``). A parent folder holding several experiments is accepted
too: experiments are found by their ``run.json``. Everything downstream (tables, plots, the report)
reads only the table built here, never the folders.

This module runs past ~500 lines on purpose: the table's schema (columns, dtypes, order) sits
beside the one reader of Tune's files that fills it, so that the two change together.

Broken pieces (truncated ``result.json`` lines, empty or half-written trial folders, a missing
``params.json``) are skipped and listed in one warning; what is valid is still collected.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeps.harness.common import (
    EVALUATION_FILE,
    UsageError,
    atomic_write_text,
    check_writable,
    dotted,
    number,
)
from sweeps.harness.record import RECORD_FILE, Machine, RunRecord

RUN_FILE = RECORD_FILE
PARAMS_FILE = "params.json"
RESULT_FILE = "result.json"
ERROR_FILE = "error.txt"
RUNS_CSV = "runs.csv"
HP_PREFIX = "hp/"

# Trial status, from the files (Tune's own trial state is not read).
COMPLETED = "completed"  # reached a stop criterion (or the scheduler's max_t)
STOPPED_EARLY = "stopped_early"  # ended below budget without error: stopped by the scheduler
ERRORED = "errored"  # error.txt exists
INCOMPLETE = "incomplete"  # below budget in an experiment still running or interrupted

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
ITERATION_COLUMNS = [
    "training_iteration",
    "env_steps",  # env steps sampled, lifetime
    "train_time_s",  # training wall-clock, evaluation excluded (the suite's clock)
    "eval_time_s",  # wall-clock spent in greedy evaluation, cumulative
    "time_total_s",  # Tune's total wall-clock (includes evaluation)
    "return_mean",  # training episodes (exploring policy)
    "return_min",
    "return_max",
    "greedy_return",  # latest greedy evaluation return, carried forward
    "pct_of_optimum",  # greedy_return / optimum * 100 (cabs)
    "env_steps_per_s",  # env steps / train_time_s, lifetime
    "metric_value",  # the sweep's search metric (run.json "metric") at this iteration
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
    "command",
    "git_commit",
    "git_dirty",  # "true" when run from a modified working tree, "" when unknown
    "ray_version",
    "torch_version",
    "python_version",
    "cpus",
    "gpus",
    "cpu_model",
    "platform",
    "load",  # the machine's 1-minute load average at start -> end ("" when not recorded)
    "started_at",
    "ended_at",
    "run_status",
]
INT_COLUMNS = [
    "seed",
    "num_env_runners",
    "tm_seed",
    "training_iteration",
    "env_steps",
    "budget_env_steps",
    "cpus",
    "gpus",
    "final_eval_episodes",
    "random_episodes",
]
FLOAT_COLUMNS = ITERATION_COLUMNS + [
    "max_t",
    "optimum",
    "random_return",
    "final_eval_return",
    "final_eval_ci95",
    "final_eval_pct",
    "final_eval_exact_pct",
    "final_eval_exact_heuristic_pct",
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


# --- Reading one experiment -------------------------------------------------------------------


def _read_object(path: Path) -> dict[str, Any]:
    """A JSON object from a file; ``OSError`` / ``ValueError`` when it is not one."""
    with path.open(encoding="utf-8") as f:
        value = json.load(f)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _first(*values: Any) -> float:
    for value in values:
        x = number(value)
        if not math.isnan(x):
            return x
    return math.nan


def _cell(value: Any) -> Any:
    """A hyperparameter value as a CSV cell: scalars as they are, containers as JSON."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True)


def _split(flat_key: str) -> tuple[str, ...]:
    return tuple(flat_key.split("/"))


@dataclass
class _Experiment:
    """What one ``run.json`` says, reduced to what the table needs."""

    path: Path
    info: RunRecord

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def stop(self) -> dict[str, Any]:
        return dict(self.info.stop)

    @property
    def scheduler(self) -> dict[str, Any]:
        return dict(self.info.scheduler)

    def budget_env_steps(self) -> float:
        """One trial's env-step budget: the smallest env-step stop criterion or ASHA max_t."""
        from sweeps.harness import keys

        step_keys = {keys.flat(keys.ENV_STEPS), keys.flat(keys.ENV_STEPS_SAMPLED)}
        budgets = [number(v) for k, v in self.stop.items() if k in step_keys]
        scheduler = self.scheduler
        if scheduler.get("time_attr") in step_keys:
            budgets.append(number(scheduler.get("max_t")))
        budgets = [b for b in budgets if not math.isnan(b)]
        return min(budgets) if budgets else math.nan

    def configs_from(self) -> str:
        """The experiment (folder name) whose configurations this sweep re-ran, or ""."""
        source = (self.info.args or {}).get("configs_from")
        return Path(str(source)).name if source else ""

    def reached_budget(self, last: Mapping[str, Any]) -> bool:
        """Whether a trial's last result met a stop criterion (Tune stops on any) or max_t."""
        from sweeps.harness import keys

        criteria = dict(self.stop)
        scheduler = self.scheduler
        if scheduler.get("time_attr") and scheduler.get("max_t") is not None:
            criteria.setdefault(scheduler["time_attr"], scheduler["max_t"])
        for flat_key, limit in criteria.items():
            value, limit = number(keys.get(last, _split(flat_key))), number(limit)
            if not (math.isnan(value) or math.isnan(limit)) and value >= limit:
                return True
        return False

    def columns(self) -> dict[str, Any]:
        info = self.info
        versions, machine = info.versions, info.machine
        command = info.command
        if not command and info.argv:
            command = shlex.join(info.argv)
        random = (info.references or {}).get("random") or {}
        return {
            "sweep": info.sweep or self.name,
            "kind": info.kind or "",
            "algo": info.algo or "",
            "env": info.env or "",
            "variant": info.variant or "",
            "experiment": self.name,
            "metric": info.metric or "",
            "mode": info.mode or "max",
            "scheduler": self.scheduler.get("type") or "",
            "time_attr": self.scheduler.get("time_attr") or "",
            "max_t": number(self.scheduler.get("max_t")),
            "budget_env_steps": self.budget_env_steps(),
            "configs_from": self.configs_from(),
            "stop": json.dumps(self.stop, sort_keys=True),
            "optimum": number(info.optimum),
            "random_return": number(random.get("mean")),
            "random_episodes": number(random.get("episodes")),
            "targets": json.dumps([number(t) for t in info.targets]),
            "command": command or "",
            "git_commit": info.git_commit or "",
            "git_dirty": {True: "true", False: "false"}.get(info.git_dirty, ""),
            "ray_version": versions.get("ray") or "",
            "torch_version": versions.get("torch") or "",
            "python_version": versions.get("python") or "",
            "cpus": number(machine.cpus),
            "gpus": number(machine.gpus),
            "cpu_model": machine.cpu_model or "",
            "platform": machine.platform or "",
            "load": _load(machine),
            "started_at": info.started_at or "",
            "ended_at": info.ended_at or "",
            "run_status": info.status or "",
        }


def _load(machine: Machine) -> str:
    """``"1.1 -> 2.6"``: the 1-minute load average at a run's start and end, as recorded."""
    ends = [machine.load_at_start, machine.load_at_end]
    if all(v is None for v in ends):
        return ""
    return " -> ".join("?" if v is None else f"{float(v):.1f}" for v in ends)


def _read_results(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """Valid result lines (dicts with a training_iteration), one per iteration (the last
    report of each), the number of corrupt lines and of reports dropped as re-reported."""
    results: list[dict[str, Any]] = []
    corrupt = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                corrupt += 1
                continue
            if not isinstance(result, dict) or math.isnan(number(result.get("training_iteration"))):
                corrupt += 1
                continue
            results.append(result)
    # A trial restored from a checkpoint reports the iterations after it again: keep the last
    # report of each, so that no (trial, iteration) row is counted twice.
    by_iteration = {int(number(r["training_iteration"])): r for r in results}
    repeated = len(results) - len(by_iteration)
    return [by_iteration[i] for i in sorted(by_iteration)], corrupt, repeated


def repair_clock(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """A trial's results (one per iteration, in order) with its training clock continued across
    restores, and the number of restores repaired.

    Before the suite checkpointed its clocks (``sweeps/harness/callbacks.py``), a trial restored
    from a checkpoint started ``suite/train_time_s`` and ``suite/eval_time_s`` again from zero:
    the clock went back while the iteration rose, and time to target after the restore came out
    short. Each drop is a restore from the checkpoint at the row before it (the runner trims
    the rows after a checkpoint), so the clocks from there on are offset by their values at that
    row, and env steps/s is recomputed from the continued clock."""
    from sweeps.harness import keys

    out: list[dict[str, Any]] = []
    restores = 0
    prev_raw = -math.inf
    prev = {"train": 0.0, "eval": 0.0}
    offset = {"train": 0.0, "eval": 0.0}
    for result in results:
        raw_train = number(keys.get(result, keys.TRAIN_TIME_S))
        if math.isnan(raw_train):
            out.append(result)
            continue
        raw_eval = number(keys.get(result, keys.EVAL_TIME_S))
        raw_eval = 0.0 if math.isnan(raw_eval) else raw_eval
        if raw_train < prev_raw:
            restores += 1
            offset = dict(prev)
        prev_raw = raw_train
        prev = {"train": raw_train + offset["train"], "eval": raw_eval + offset["eval"]}
        if offset["train"] or offset["eval"]:
            suite = dict(result.get(keys.SUITE) or {})
            suite[keys.TRAIN_TIME_S[-1]] = prev["train"]
            suite[keys.EVAL_TIME_S[-1]] = prev["eval"]
            steps = number(keys.get(result, keys.ENV_STEPS))
            suite[keys.ENV_STEPS_PER_S[-1]] = steps / prev["train"] if prev["train"] else math.nan
            flat = {k: v for k, v in result.items() if not k.startswith(keys.SUITE + "/")}
            result = {**flat, keys.SUITE: suite}
        out.append(result)
    return out, restores


def _iteration_row(result: Mapping[str, Any], metric: str, optimum: float) -> dict[str, Any]:
    from sweeps.harness import keys

    env_steps = _first(keys.get(result, keys.ENV_STEPS), keys.get(result, keys.ENV_STEPS_SAMPLED))
    eval_time = number(keys.get(result, keys.EVAL_TIME_S))
    total_time = number(keys.get(result, keys.TIME_TOTAL_S))
    # Without the suite's clock, fall back to Tune's total minus the evaluation time it knows of.
    train_time = _first(
        keys.get(result, keys.TRAIN_TIME_S),
        total_time - (0.0 if math.isnan(eval_time) else eval_time),
    )
    greedy = _first(keys.get(result, keys.GREEDY_RETURN), keys.get(result, keys.EVAL_RETURN_MEAN))
    pct = number(keys.get(result, keys.PCT_OF_OPTIMUM))
    if math.isnan(pct) and optimum and not math.isnan(optimum):
        pct = 100.0 * greedy / optimum
    steps_per_s = number(keys.get(result, keys.ENV_STEPS_PER_S))
    if math.isnan(steps_per_s) and train_time > 0:
        steps_per_s = env_steps / train_time
    return {
        "training_iteration": number(result.get("training_iteration")),
        "env_steps": env_steps,
        "train_time_s": train_time,
        "eval_time_s": eval_time,
        "time_total_s": total_time,
        "return_mean": number(keys.get(result, keys.RETURN_MEAN)),
        "return_min": number(keys.get(result, keys.RETURN_MIN)),
        "return_max": number(keys.get(result, keys.RETURN_MAX)),
        "greedy_return": greedy,
        "pct_of_optimum": pct,
        "env_steps_per_s": steps_per_s,
        "metric_value": number(keys.get(result, _split(metric))) if metric else math.nan,
    }


def _final_evaluation(trial_dir: Path, skipped: list[str], where: str) -> dict[str, Any]:
    """The trial's final greedy evaluation (``sweeps.evaluate``), when it has one."""
    path = trial_dir / EVALUATION_FILE
    if not path.is_file():
        return {}
    try:
        record = _read_object(path)
        return {
            "final_eval_return": float(record["mean"]),
            "final_eval_ci95": number(record.get("ci95_half_width")),
            "final_eval_episodes": int(record["episodes"]),
            "final_eval_pct": number(record.get("pct_of_optimum")),
            "final_eval_exact_pct": number((record.get("exact") or {}).get("pct_of_optimum")),
            "final_eval_exact_heuristic_pct": number(
                (record.get("exact") or {}).get("heuristic_pct_of_optimum")
            ),
        }
    except (OSError, ValueError, KeyError, TypeError) as err:
        skipped.append(f"{where}/{EVALUATION_FILE} (unreadable: {err})")
        return {}


def _trial_dirs(exp_dir: Path) -> list[Path]:
    return sorted(d for d in exp_dir.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))


def read_experiment(
    exp_dir: Path,
    skipped: list[str],
    deduped: list[str] | None = None,
    repaired: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Rows (one per trial and iteration) of one experiment folder; appends what it skipped,
    the trials with iterations reported twice to ``deduped`` and those whose clock went back
    at a restore (``repair_clock``) to ``repaired``."""
    try:
        info = RunRecord.read(exp_dir / RUN_FILE)
    except (OSError, ValueError) as err:
        skipped.append(f"{exp_dir.name} (unreadable {RUN_FILE}: {err})")
        return []
    exp = _Experiment(exp_dir, info)
    experiment_cols = exp.columns()
    hyperparameters = info.hyperparameters
    # "failed" means Tune ran to the end but some trial errored; "running" / "interrupted" mean
    # a trial below budget may simply not have got further.
    run_ended = experiment_cols["run_status"] in ("", "finished", "failed")

    rows: list[dict[str, Any]] = []
    trial_dirs = _trial_dirs(exp_dir)
    if not trial_dirs:
        skipped.append(f"{exp_dir.name} (no trial folders)")
    for trial_dir in trial_dirs:
        where = f"{exp_dir.name}/{trial_dir.name}"
        if not any(trial_dir.iterdir()):
            skipped.append(f"{where} (empty trial folder)")
            continue
        if not (trial_dir / PARAMS_FILE).is_file():
            skipped.append(f"{where} (no {PARAMS_FILE})")
            continue
        try:
            params = _read_object(trial_dir / PARAMS_FILE)
        except (OSError, ValueError) as err:
            skipped.append(f"{where} (unreadable {PARAMS_FILE}: {err})")
            continue
        if not (trial_dir / RESULT_FILE).is_file():
            skipped.append(f"{where} (no {RESULT_FILE})")
            continue
        results, corrupt, repeated = _read_results(trial_dir / RESULT_FILE)
        if corrupt:
            skipped.append(f"{where}/{RESULT_FILE} ({corrupt} corrupt line(s))")
        if repeated and deduped is not None:
            deduped.append(f"{where}: {repeated} iteration(s) reported twice, last report kept")
        if not results:
            skipped.append(f"{where} (no valid results)")
            continue
        results, restores = repair_clock(results)
        if restores and repaired is not None:
            repaired.append(
                f"{where}: the training clock restarted at {restores} restore(s); continued "
                "from the checkpoint's value"
            )

        if (trial_dir / ERROR_FILE).is_file():
            status = ERRORED
        elif exp.reached_budget(results[-1]):
            status = COMPLETED
        else:
            status = STOPPED_EARLY if run_ended else INCOMPLETE
        env_config = params.get("env_config") if isinstance(params.get("env_config"), dict) else {}
        trial_cols = {
            "trial_id": str(results[-1].get("trial_id") or trial_dir.name),
            "seed": number(params.get("seed")),
            "num_env_runners": number(params.get("num_env_runners")),
            "tm_seed": number(env_config.get("tm_seed")),
            "trial_status": status,
            **_final_evaluation(trial_dir, skipped, where),
            **{HP_PREFIX + h: _cell(dotted(params, h)) for h in hyperparameters},
        }
        for result in results:
            row = _iteration_row(result, experiment_cols["metric"], experiment_cols["optimum"])
            rows.append({**experiment_cols, **trial_cols, **row})
    return rows


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
    csvs = [p for p in inputs if Path(p).suffix == ".csv"]
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
    """Write the table (atomically: a half-written runs.csv is never left behind)."""
    atomic_write_text(path, runs.to_csv(index=False, lineterminator="\n"))


def read_runs_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a table written by ``write_runs_csv`` back with the same dtypes."""
    frame = pd.read_csv(path, dtype={c: "str" for c in STR_COLUMNS}, keep_default_na=True)
    missing = [c for c in ID_COLUMNS + ITERATION_COLUMNS if c not in frame.columns]
    if missing:
        raise UsageError(f"{path}: not a runs table written by analysis (missing {missing[0]!r})")
    return tidy(frame)


# --- CLI --------------------------------------------------------------------------------------


def add_inputs(parser: argparse.ArgumentParser, out_help: str | None) -> None:
    """The arguments the analysis commands share: the inputs, and ``--out`` (``out_help`` says
    what it names; None: the command writes nothing)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="RUN_DIR",
        help="Tune experiment folder (with run.json), a folder containing several, or a runs.csv "
        "written by `python -m analysis collect`",
    )
    if out_help is not None:
        parser.add_argument("--out", required=True, help=out_help)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(
        parser, "CSV file to write (e.g. results/cabs/runs.csv); a folder gets runs.csv inside it"
    )


def csv_target(out: str) -> Path:
    path = Path(out)
    return path if path.suffix == ".csv" else path / RUNS_CSV


def run(args: argparse.Namespace) -> int:
    out = csv_target(args.out)
    if out.is_dir():
        raise UsageError(f"{out}: is a directory")
    check_writable(out)
    collection = gather(args.inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_runs_csv(collection.runs, out)
    n_trials = collection.runs.groupby(["experiment", "trial_id"]).ngroups
    print(f"wrote {out}: {len(collection.runs)} rows, {n_trials} trials")
    return 0

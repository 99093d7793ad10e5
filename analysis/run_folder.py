"""One Tune experiment folder (a run folder) read into rows of the tidy table
(:mod:`analysis.collect`): one row per trial and training iteration.

A run folder holds our runner's ``run.json`` and one folder per trial (``params.json`` +
``result.json``, ``error.txt`` when it errored, ``final_evaluation.json`` after
``python -m sweeps.evaluate``). Broken pieces (truncated ``result.json`` lines, empty or
half-written trial folders, a missing ``params.json``) are skipped and named; what is valid is
still read. A trial's status is decided here, from its files.

One file (over 500 lines): every file of a run folder is read here, and what one says (a
restart's trimmed rows, an evaluation after the end, an error) decides how the others are read.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.harness.files import EVALUATION_FILE, json_lines
from sweeps.harness.record import RECORD_FILE, Machine, RunRecord
from sweeps.harness.values import dotted, number

RUN_FILE = RECORD_FILE
PARAMS_FILE = "params.json"
RESULT_FILE = "result.json"
ERROR_FILE = "error.txt"
HP_PREFIX = "hp/"  # a hyperparameter's column: hp/<dotted path in the trial's params>

# Trial status, from the files (Tune's own trial state is not read).
COMPLETED = "completed"  # reached a stop criterion (or the scheduler's max_t)
STOPPED_EARLY = "stopped_early"  # ended below budget without error: stopped by the scheduler
ERRORED = "errored"  # error.txt exists
INCOMPLETE = "incomplete"  # below budget in an experiment still running or interrupted


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
    # "failed" means Tune ran to the end but some trial errored; "running" / "interrupted" mean
    # a trial below budget may simply not have got further.
    run_ended = experiment_cols["run_status"] in ("", "finished", "failed")

    rows: list[dict[str, Any]] = []
    trial_dirs = _trial_dirs(exp_dir)
    if not trial_dirs:
        skipped.append(f"{exp_dir.name} (no trial folders)")
    for trial_dir in trial_dirs:
        where = f"{exp_dir.name}/{trial_dir.name}"
        trial = _read_trial(trial_dir, where, skipped, deduped, repaired)
        if trial is None:
            continue
        params, results = trial
        status = _trial_status(exp, trial_dir, results[-1], run_ended)
        trial_cols = _trial_columns(exp, trial_dir, params, results[-1], status, skipped, where)
        for result in results:
            row = _iteration_row(result, experiment_cols["metric"], experiment_cols["optimum"])
            rows.append({**experiment_cols, **trial_cols, **row})
    return rows


def _trial_dirs(exp_dir: Path) -> list[Path]:
    return sorted(d for d in exp_dir.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))


def _read_trial(
    trial_dir: Path,
    where: str,
    skipped: list[str],
    deduped: list[str] | None,
    repaired: list[str] | None,
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A trial's params and its results (one per iteration, the clock repaired), or None
    when the folder has none to read (said in ``skipped``)."""
    if not any(trial_dir.iterdir()):
        skipped.append(f"{where} (empty trial folder)")
        return None
    if not (trial_dir / PARAMS_FILE).is_file():
        skipped.append(f"{where} (no {PARAMS_FILE})")
        return None
    try:
        params = _read_object(trial_dir / PARAMS_FILE)
    except (OSError, ValueError) as err:
        skipped.append(f"{where} (unreadable {PARAMS_FILE}: {err})")
        return None
    if not (trial_dir / RESULT_FILE).is_file():
        skipped.append(f"{where} (no {RESULT_FILE})")
        return None
    results, corrupt, repeated = _read_results(trial_dir / RESULT_FILE)
    if corrupt:
        skipped.append(f"{where}/{RESULT_FILE} ({corrupt} corrupt line(s))")
    if repeated and deduped is not None:
        deduped.append(f"{where}: {repeated} iteration(s) reported twice, last report kept")
    if not results:
        skipped.append(f"{where} (no valid results)")
        return None
    results, restores = repair_clock(results)
    if restores and repaired is not None:
        repaired.append(
            f"{where}: the training clock restarted at {restores} restore(s); continued "
            "from the checkpoint's value"
        )
    return params, results


def _trial_status(
    exp: _Experiment, trial_dir: Path, last: Mapping[str, Any], run_ended: bool
) -> str:
    """ERRORED (error.txt), COMPLETED (its last result met the budget), else STOPPED_EARLY
    in a run that ended, INCOMPLETE in one still running or interrupted."""
    if (trial_dir / ERROR_FILE).is_file():
        return ERRORED
    if exp.reached_budget(last):
        return COMPLETED
    return STOPPED_EARLY if run_ended else INCOMPLETE


def _trial_columns(
    exp: _Experiment,
    trial_dir: Path,
    params: dict[str, Any],
    last: Mapping[str, Any],
    status: str,
    skipped: list[str],
    where: str,
) -> dict[str, Any]:
    """What a trial's rows share: its id, seed, runners, status, final evaluation and
    hyperparameters."""
    env_config = params.get("env_config") if isinstance(params.get("env_config"), dict) else {}
    return {
        "trial_id": str(last.get("trial_id") or trial_dir.name),
        "seed": number(params.get("seed")),
        "num_env_runners": number(params.get("num_env_runners")),
        "tm_seed": number(env_config.get("tm_seed")),
        "trial_status": status,
        "cpu_busiest": _busiest_kind(last),
        **_final_evaluation(trial_dir, skipped, where),
        **{HP_PREFIX + h: _cell(dotted(params, h)) for h in exp.info.hyperparameters},
    }


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

    def confirm_target(self) -> float:
        """The target the run's trials confirmed (its stop on the confirmation's return); NaN
        for a run that stopped at the first crossing."""
        from sweeps.harness import keys

        return number(self.stop.get(keys.flat(keys.CONFIRM_RETURN)))

    def confirm_episodes(self) -> float:
        """The seeded episodes each check played (NaN without checks)."""
        if math.isnan(self.confirm_target()):
            return math.nan
        return number((self.info.args or {}).get("confirm_episodes"))

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
            "confirm_target": self.confirm_target(),
            "confirm_episodes": self.confirm_episodes(),
            "command": command or "",
            "overrides": overrides(info.args, info.hyperparameters),
            "git_commit": info.git_commit or "",
            "git_dirty": {True: "true", False: "false"}.get(info.git_dirty, ""),
            "ray_version": versions.get("ray") or "",
            "torch_version": versions.get("torch") or "",
            "python_version": versions.get("python") or "",
            "cpus": number(machine.cpus),
            "cores": number(machine.cores),
            "gpus": number(machine.gpus),
            "cpu_model": machine.cpu_model or "",
            "platform": machine.platform or "",
            "load": _load(machine),
            "raw_env_start": number(machine.raw_env_steps_per_s_at_start),
            "raw_env_end": number(machine.raw_env_steps_per_s_at_end),
            "started_at": info.started_at or "",
            "ended_at": info.ended_at or "",
            "run_status": info.status or "",
            "cut_short": _cut_short(info.cut_short),
        }


def overrides(args: dict[str, Any] | None, hyperparameters: Sequence[str] | None) -> str:
    """The run's ``--set`` settings that are not among its recorded hyperparameters (those have
    columns of their own), as ``key=JSON`` texts joined by "; "; "" without any. Two benchmark
    runs of one algorithm that differ here ran different recipes."""
    named = set(hyperparameters or ())

    def recorded(key: str, value: Any) -> bool:  # the key, or each key inside it, has a column
        if key in named:
            return True
        return (
            isinstance(value, dict)
            and bool(value)
            and all(f"{key}.{sub}" in named for sub in value)
        )

    pairs = [(k, v) for k, v in (args or {}).get("set") or () if not recorded(k, v)]
    return "; ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in pairs)


def _cut_short(cut: dict[str, Any] | None) -> str:
    """``"9 of 24 trials ran"``: a sweep its wall-clock cap stopped (sweeps/harness/budget.py),
    as its record says; "" for any other."""
    if not cut:
        return ""
    return f"{cut.get('ran', '?')} of {cut.get('planned', '?')} trials ran"


def _load(machine: Machine) -> str:
    """``"1.1 -> 2.6"``: the 1-minute load average at a run's start and end, as recorded."""
    ends = [machine.load_at_start, machine.load_at_end]
    if all(v is None for v in ends):
        return ""
    return " -> ".join("?" if v is None else f"{float(v):.1f}" for v in ends)


def _read_results(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """Valid result lines (dicts with a training_iteration), one per iteration (the last
    report of each), the number of corrupt lines and of reports dropped as re-reported."""
    rows, corrupt = json_lines(path.read_text(encoding="utf-8", errors="replace"))
    results = [r for r in rows if not math.isnan(number(r.get("training_iteration")))]
    corrupt += len(rows) - len(results)
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
    if math.isnan(pct) and optimum and not math.isnan(optimum) and optimum > 0:
        pct = 100.0 * greedy / optimum
    steps_per_s = number(keys.get(result, keys.ENV_STEPS_PER_S))
    if math.isnan(steps_per_s) and train_time > 0:
        steps_per_s = env_steps / train_time
    return {
        "training_iteration": number(result.get("training_iteration")),
        "env_steps": env_steps,
        "train_time_s": train_time,
        "eval_time_s": eval_time,
        "periodic_eval_s": number(keys.get(result, keys.PERIODIC_EVAL_S)),
        "evaluations": number(keys.get(result, keys.EVALUATIONS)),
        "periodic_once": number(keys.get(result, keys.PERIODIC_ONCE)),
        "time_total_s": total_time,
        "return_mean": number(keys.get(result, keys.RETURN_MEAN)),
        "return_min": number(keys.get(result, keys.RETURN_MIN)),
        "return_max": number(keys.get(result, keys.RETURN_MAX)),
        "return_window_games": number(keys.get(result, keys.RETURN_WINDOW_GAMES)),
        "greedy_return": greedy,
        "pct_of_optimum": pct,
        "env_steps_per_s": steps_per_s,
        "metric_value": number(keys.get(result, _split(metric))) if metric else math.nan,
        "entropy": number(keys.get(result, keys.ENTROPY)),
        "steps_trained": keys.trained_steps(result, math.nan),
        # the confirmed target's check after this iteration, if one ran (NaN otherwise)
        "confirm_return": number(keys.get(result, keys.CONFIRM_RETURN)),
        "confirm_ci95": number(keys.get(result, keys.CONFIRM_CI95)),
        "confirm_greedy_return": number(keys.get(result, keys.CONFIRM_GREEDY_RETURN)),
        "confirm_sampled_return": number(keys.get(result, keys.CONFIRM_SAMPLED_RETURN)),
        "confirm_checks": number(keys.get(result, keys.CONFIRM_CHECKS)),
        "confirm_cut": number(keys.get(result, keys.CONFIRM_CUT)),
        **_cpu_columns(result),
    }


# Per kind of process: the cpu_* column of its slots' CPU seconds and how it sums them (slots
# ``<kind>_<index>``, sweeps/harness/cpu_time.discover); the driver is one slot.
_KIND_COLUMNS = {
    "driver": (("cpu_driver_s", sum),),
    "env_runner": (("cpu_env_runners_s", sum), ("cpu_env_runner_max_s", max)),
    "learner": (("cpu_learners_s", sum),),
    "aggregator": (("cpu_aggregators_s", sum),),
    "replay_shard": (("cpu_replay_shards_s", sum),),
}
# The figures of suite/cpu read as they are.
_CPU_FIGURES = {
    "cpu_wall_s": "wall_s",
    "cpu_trial_s": "trial_s",
    "cpu_machine_s": "machine_s",
    "cpu_slowdown": "slowdown",
    "cpu_predicted_factor": "predicted_factor",
    "cpu_busiest_utilisation": "busiest_utilisation",
    "cpu_trial_cpus": "trial_cpus",
}


def slot_kind(slot: str) -> str:
    """The kind of a process slot: its name without the index (``"env_runner_3"`` ->
    ``"env_runner"``, ``"driver"`` as it is)."""
    return re.sub(r"_\d+$", "", slot)


def _cpu_columns(result: Mapping[str, Any]) -> dict[str, float]:
    """The trial's CPU figures at this result (``suite/cpu``, lifetime sums): NaN where the
    result has none, and per kind of process where the trial has no process of that kind."""
    from sweeps.harness import cpu_time, keys

    cpu = keys.get(result, keys.CPU)
    cpu = cpu if isinstance(cpu, Mapping) else {}
    # The predicted machine's cores: a core per process, at least one per CPU bundle (as
    # cpu_time.Summary.cores_predicted; derived for runs recorded before it was)
    cores = [number(cpu.get(k)) for k in ("trial_cpus", "processes")]
    cores_predicted = max((c for c in cores if not math.isnan(c)), default=math.nan)
    # The prediction derived from the figures by the model as it stands (cpu_time.predicted_
    # factor): the result's own suite/predicted_train_time_s is the model of the day it ran.
    factor = cpu_time.predicted_factor(
        number(cpu.get("wall_s")),
        number(cpu.get("slowdown")),
        number(cpu.get("busiest_s")),
        number(cpu.get("trial_s")),
        cores_predicted,
    )
    train_time = number(keys.get(result, keys.TRAIN_TIME_S))
    row = {"predicted_train_time_s": train_time * factor if cpu else math.nan}
    row.update({column: number(cpu.get(figure)) for column, figure in _CPU_FIGURES.items()})
    row["cpu_cores_predicted"] = cores_predicted
    ran = cpu.get("ran_s") if isinstance(cpu.get("ran_s"), Mapping) else {}
    by_kind: dict[str, list[float]] = {}
    for slot, seconds in ran.items():
        by_kind.setdefault(slot_kind(str(slot)), []).append(number(seconds))
    for kind, columns in _KIND_COLUMNS.items():
        for column, combine in columns:
            row[column] = combine(by_kind[kind]) if kind in by_kind else math.nan
    return row


def _busiest_kind(last: Mapping[str, Any]) -> str:
    """The kind of the trial's busiest process over its life (its last result's lifetime
    figures), or "" where it reported none."""
    from sweeps.harness import keys

    cpu = keys.get(last, keys.CPU)
    busiest = cpu.get("busiest") if isinstance(cpu, Mapping) else None
    return slot_kind(busiest) if isinstance(busiest, str) and busiest else ""


def _final_evaluation(trial_dir: Path, skipped: list[str], where: str) -> dict[str, Any]:
    """The trial's final greedy evaluation (``sweeps.evaluate``), when it has one, and its
    sampled one (``--sampled``) where it has that too."""
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
            "final_eval_sampled_return": number((record.get("sampled") or {}).get("mean")),
            "final_eval_sampled_ci95": number((record.get("sampled") or {}).get("ci95_half_width")),
        }
    except (OSError, ValueError, KeyError, TypeError) as err:
        skipped.append(f"{where}/{EVALUATION_FILE} (unreadable: {err})")
        return {}

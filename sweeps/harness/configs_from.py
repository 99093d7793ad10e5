"""``--configs-from PATH``: run the configurations another sweep sampled, in its order, instead of
sampling new ones.

What it is for: checking ASHA. Run a sweep with ASHA, then the same configurations with
``--scheduler fifo`` to their full budget; ``python -m analysis report`` given both folders
compares the best trial and the env steps of the two (the FIFO sweep's run.json names its source).

Each trial's ``params.json`` holds the search parameters Optuna drew for it under ``hp`` (Ray's
OptunaSearch puts what the define-by-run function suggested into the config); they are enqueued
as Optuna points (``points_to_evaluate``), so the searcher suggests exactly them, one per trial.
The flags that shape a trial's config beyond its search parameters must be the source's
(``SAME_FLAGS``): a difference is one line and exit 2, before Ray starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sweeps.harness.errors import UsageError
from sweeps.harness.record import RECORD_FILE, RunRecord
from sweeps.harness.settings import Settings
from sweeps.harness.space import search_space_description
from sweeps.harness.sweep import Sweep

# Flags that change a trial's config (or its seed) beyond its search parameters.
SAME_FLAGS = (
    "variant",
    "tm_seed",
    "seed",
    "num_env_runners",
    "num_envs_per_env_runner",
    "eval_interval",
    "eval_episodes",
    "eval_share",
    "iteration_s",
    "set",
)


def _flat(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}/{key}"
        out.update(_flat(name, value) if isinstance(value, Mapping) else {name: value})
    return out


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _trial_order(trial_dir: Path) -> tuple[float, str]:
    """When a trial started (its first result's timestamp less its time so far): Tune's trial
    ids are random, so the order the searcher suggested them in is the order they ran in (one
    at a time; on a cluster, the order they started in). Trials that never reported go last."""
    try:
        with (trial_dir / "result.json").open(encoding="utf-8") as f:
            first = json.loads(f.readline())
        return (float(first["timestamp"]) - float(first.get("time_total_s") or 0.0), trial_dir.name)
    except (OSError, ValueError, KeyError, TypeError):
        return (float("inf"), trial_dir.name)


def source_points(sweep: Sweep, args: Settings) -> list[dict[str, Any]]:
    """The search-parameter values of every trial of the sweep in ``args.configs_from``, in its
    order; a UsageError (one line) when that folder is not a sweep of ``sweep`` run with the same
    config flags, or a trial's draws cannot be read."""
    source = Path(args.configs_from).expanduser()
    where = f"--configs-from {args.configs_from}"
    try:
        record = RunRecord.of_folder(source)
    except ValueError as e:
        raise UsageError(f"{where}: {e}") from None
    if record is None:
        raise UsageError(f"{where}: not a sweep folder (no readable {RECORD_FILE})")
    if record.sweep != sweep.name or record.kind != "sweep":
        raise UsageError(f"{where}: a {record.kind} of {record.sweep!r}, not a sweep")
    recorded = record.args
    differ = [f for f in SAME_FLAGS if f in recorded and recorded[f] != getattr(args, f)]
    if differ:
        flags = ", ".join(f"--{f.replace('_', '-')} {recorded[f]}" for f in differ)
        raise UsageError(f"{where}: that sweep ran with {flags}; give the same")
    wanted = set(search_space_description(sweep.sample_params))  # "hp/lr", ...
    points = []
    trials = [d for d in source.iterdir() if (d / "params.json").is_file()]
    for trial in sorted(trials, key=_trial_order):
        params = _read(trial / "params.json")
        draws = params.get("hp") if isinstance(params, dict) else None
        point = _flat("hp", draws) if isinstance(draws, Mapping) else {}
        if set(point) != wanted:
            raise UsageError(f"{where}: {trial.name}/params.json holds no search parameters")
        points.append(point)
    if not points:
        raise UsageError(f"{where}: no trials (no params.json in its trial folders)")
    return points

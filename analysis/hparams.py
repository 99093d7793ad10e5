"""Which hyperparameters mattered in a sweep, and its best trial as a command to run again.

* :func:`importances`: Optuna's PED-ANOVA importance (``optuna.importance``) of each searched
  hyperparameter for the final search metric, computed on the sweep's trials as the runs table
  holds them (an in-memory study built from Tune's files: the analysis reads nothing else).
  Hyperparameters that took one value are left out; with fewer than :data:`MIN_TRIALS` trials
  there is nothing to say.
* :func:`best_command`: the best trial's hyperparameters as ``--set KEY=VALUE`` arguments of its
  sweep file (dotted keys folded into the dict they belong to, which RLlib merges), and
  :func:`best_config`, the same as a JSON-ready dict.
"""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

import pandas as pd

from analysis.run_folder import HP_PREFIX

# PED-ANOVA compares the best trials (the top 10%, at least 3) with all of them: below this
# many trials there is no such top.
MIN_TRIALS = 10
TOP_TRIALS = 3


def _value(x: Any) -> Any:
    """A hyperparameter cell as its value (runs.csv holds lists as JSON text)."""
    if isinstance(x, str):
        try:
            return json.loads(x)
        except ValueError:
            return x
    return x


def _numeric(values: list[Any]) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )


def importances(trials: pd.DataFrame, mode: str = "max") -> pd.Series:
    """PED-ANOVA importance per searched hyperparameter (``hp/`` columns of
    ``tables.sweep_trials``), normalised to sum to 1, highest first; empty where fewer than
    :data:`MIN_TRIALS` trials have a final metric or nothing varied."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from optuna.importance import PedAnovaImportanceEvaluator

    done = trials.dropna(subset=["final_metric"])
    hp = [c for c in done.columns if c.startswith(HP_PREFIX) and done[c].notna().all()]
    if len(done) < MIN_TRIALS:
        return pd.Series(dtype=float)
    distributions: dict[str, Any] = {}
    values: dict[str, list[Any]] = {}
    for c in hp:
        column = [_value(v) for v in done[c]]
        if _numeric(column):
            lo, hi = float(min(column)), float(max(column))
            if lo == hi:
                continue
            distributions[c] = FloatDistribution(lo, hi, log=lo > 0 and hi / lo >= 10)
            values[c] = [float(v) for v in column]
        else:
            text = [json.dumps(v) if not isinstance(v, str) else v for v in column]
            if len(set(text)) < 2:
                continue
            distributions[c] = CategoricalDistribution(sorted(set(text)))
            values[c] = text
    if not distributions:
        return pd.Series(dtype=float)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize" if mode == "min" else "maximize")
    for i, metric in enumerate(done["final_metric"]):
        params = {c: values[c][i] for c in distributions}
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=distributions, value=metric)
        )
    found = optuna.importance.get_param_importances(
        study,
        evaluator=PedAnovaImportanceEvaluator(target_quantile=max(0.1, TOP_TRIALS / len(done))),
    )
    series = pd.Series(found, dtype=float)
    series.index = [c.removeprefix(HP_PREFIX) for c in series.index]
    return series.sort_values(ascending=False, kind="stable")


def best_config(trial: pd.Series) -> dict[str, Any]:
    """The trial's searched hyperparameters as AlgorithmConfig settings (``a.b`` keys folded
    into ``{"a": {"b": ...}}``)."""
    config: dict[str, Any] = {}
    for column, cell in trial.items():
        if not str(column).startswith(HP_PREFIX) or _missing(cell):
            continue
        value = _value(cell)
        if hasattr(value, "item"):  # a numpy scalar from the table
            value = value.item()
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        *parents, leaf = str(column).removeprefix(HP_PREFIX).split(".")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return config


def best_command(sweep: str, trial: pd.Series) -> str:
    """``python sweeps/<sweep>.py --num-samples 1 --set k=v ...``: the sweep's first trial then
    runs the best trial's hyperparameters (the tuned point follows --set)."""
    settings = [
        "--set " + shlex.quote(f"{k}={json.dumps(v, separators=(',', ':'))}")
        for k, v in best_config(trial).items()
    ]
    return " ".join([f"python sweeps/{sweep}.py --num-samples 1", *settings])


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))

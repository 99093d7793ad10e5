"""Time to target on the machine the runs' CPU figures predict, beside the one they ran on.

Why: the benchmark's machines have few cores, and a trial of N env runners and a learner is N+1
busy processes taking turns on them: everything runs in slow motion, and a measured time to
target says more about the machine than about the algorithm's scaling. Each result carries the
trial's CPU time per process and what it predicts (``sweeps/harness/cpu_time.py``, the model in
``docs/scaling.md``): its training time on a machine with a core per process of the trial,
``predicted_train_time_s``. Here that prediction goes through the same time-to-target tables as
the measured clock (:mod:`analysis.tables`: Kaplan–Meier medians over censored seeds, speedups
only where every seed of both reached the target), each clock on its own, never mixed.

Only benchmark trials that report the figures count: runs made before them have none, are left
out, and where no trial has them the table is empty (the report's section is then as before).
"""

from __future__ import annotations

import math

import pandas as pd

from analysis import stats, tables
from analysis.tables import TRIAL_KEY, spread

PREDICTED = "predicted_train_time_s"
MEASURED = "train_time_s"


def with_cpu_figures(selected: pd.DataFrame) -> pd.DataFrame:
    """The benchmark rows of the trials that reported CPU figures (a predicted time)."""
    if PREDICTED not in selected.columns:
        return selected.iloc[0:0]
    bench = selected[selected["kind"] == "benchmark"]
    reported = bench[PREDICTED].notna().groupby([bench[k] for k in TRIAL_KEY]).transform("any")
    return bench[reported.astype(bool)]


def time_to_target_on(rows: pd.DataFrame, signal: str, target: float, clock: str) -> pd.DataFrame:
    """:func:`tables.summarize_time_to_target` at one signal and target on ``clock`` (a column of
    seconds): per seed, ``clock`` at the first iteration that reached the target, or, for a seed
    that missed, its largest value (censored there, as the measured clock is at its budget)."""
    ttt = tables.time_to_target(rows.assign(train_time_s=rows[clock]), [signal])
    ttt = ttt[ttt["target"] == target] if len(ttt) else ttt
    return tables.summarize_time_to_target(ttt) if len(ttt) else pd.DataFrame()


def trial_figures(rows: pd.DataFrame) -> pd.DataFrame:
    """Per trial, its last CPU figures (lifetime sums: the whole trial's): the cores of the
    machine predicted for it, its busiest kind of process, that one's utilisation, the
    slowdown."""
    ordered = rows.sort_values([*TRIAL_KEY, "training_iteration"], kind="stable")
    return ordered.groupby(TRIAL_KEY, sort=False).agg(
        config=("config", "first"),
        busiest=("cpu_busiest", "first"),
        trial_cpus=("cpu_cores_predicted", "last"),  # last non-NaN
        utilisation=("cpu_busiest_utilisation", "last"),
        slowdown=("cpu_slowdown", "last"),
    )


def _busiest(kinds: pd.Series) -> tuple[str, int]:
    """The kind of process busiest on most seeds (ties: by name), and on how many."""
    counts = kinds[kinds.astype(bool)].value_counts()
    if counts.empty:
        return "", 0
    kind = sorted(counts.index, key=lambda k: (-counts[k], k))[0]
    return str(kind), int(counts[kind])


def _ratios(predicted: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The predicted clock's speedups, keyed by configuration: against each algorithm's fewest
    remote runners (:func:`tables.scaling_time_to_target`, a reference row against itself
    exactly 1) and against the single-runner DQN (:func:`tables.speedup_vs_baseline`)."""
    own = tables.scaling_time_to_target(predicted)
    if len(own):
        ref = own["num_env_runners"] == own["reference_runners"]
        for column in ("speedup", "steps_ratio"):
            own.loc[ref, column] = 1.0
            own.loc[ref, [f"{column}_low", f"{column}_high"]] = math.nan
        own = own.set_index("config")
    dqn = tables.speedup_vs_baseline(predicted)
    return own, dqn.set_index("config") if len(dqn) else dqn


def scaling_on_cores(selected: pd.DataFrame, signal: str, target: float) -> pd.DataFrame:
    """One row per benchmark configuration with CPU figures, at one signal and target: seeds
    that reached it; Kaplan–Meier medians [95% interval] of env steps, of the predicted time
    and of the measured time to it; the predicted speedup (and env-steps ratio) against the
    algorithm's fewest remote runners and the predicted speedup against the single-runner DQN
    (bootstrap intervals); the cores predicted for; the busiest kind of process (on how many
    seeds), its utilisation and the slowdown, spreads over seeds. Empty where no trial has CPU
    figures or there is no target."""
    rows = with_cpu_figures(selected)
    if rows.empty or math.isnan(target):
        return pd.DataFrame()
    predicted = time_to_target_on(rows, signal, target, PREDICTED)
    if predicted.empty:
        return pd.DataFrame()
    measured = time_to_target_on(rows, signal, target, MEASURED).set_index("config")
    own, dqn = _ratios(predicted)
    figures = trial_figures(rows)
    out = []
    for _, r in predicted.iterrows():
        config = r["config"]
        f = figures[figures["config"] == config]
        busiest, busiest_seeds = _busiest(f["busiest"])
        m = measured.loc[config]
        o = own.loc[config] if config in own.index else None
        d = dqn.loc[config] if config in dqn.index else None
        out.append(
            {
                "algo": r["algo"],
                "num_env_runners": int(r["num_env_runners"]),
                "config": config,
                "seeds": int(r["seeds"]),
                "reached": int(r["reached"]),
                "steps": stats.Estimate(r["km_steps"], r["km_steps_low"], r["km_steps_high"]),
                "predicted": _km_time(r),
                "measured": _km_time(m),
                "cores": spread(f["trial_cpus"])[0],
                "reference_runners": math.nan if o is None else o["reference_runners"],
                "speedup_own": _ratio(o, "speedup"),
                "steps_ratio_own": _ratio(o, "steps_ratio"),
                "baseline": "" if d is None else d["baseline"],
                "speedup_dqn": _ratio(d, "speedup"),
                "busiest": busiest,
                "busiest_seeds": busiest_seeds,
                "utilisation": spread(f["utilisation"]),
                "slowdown": spread(f["slowdown"]),
            }
        )
    return pd.DataFrame(out).sort_values(["algo", "num_env_runners"], kind="stable")


def _km_time(summary: pd.Series) -> stats.Estimate:
    """The Kaplan–Meier median time of a time-to-target summary row, with its interval."""
    return stats.Estimate(summary["km_time_s"], summary["km_time_low_s"], summary["km_time_high_s"])


def _ratio(row: pd.Series | None, column: str) -> stats.Estimate:
    """A ratio of ``row`` with its interval (NaN where there is no row)."""
    if row is None:
        return stats.Estimate(math.nan)
    return stats.Estimate(row[column], row[f"{column}_low"], row[f"{column}_high"])


def machines(selected: pd.DataFrame) -> tuple[list[int], list[float]]:
    """The cores the runs with CPU figures could use, and the CPUs Ray declared to them (sorted,
    distinct; a run that did not record its cores adds none)."""
    runs = with_cpu_figures(selected).drop_duplicates("experiment")
    if runs.empty:
        return [], []
    cores = sorted({int(c) for c in runs["cores"].dropna()}) if "cores" in runs else []
    return cores, sorted({float(c) for c in runs["cpus"].dropna()})


def without_figures(selected: pd.DataFrame) -> int:
    """Benchmark trials compared here that report no CPU figures (run before them)."""
    bench = selected[selected["kind"] == "benchmark"]
    total = bench.drop_duplicates(TRIAL_KEY)
    return len(total) - len(with_cpu_figures(selected).drop_duplicates(TRIAL_KEY))


def throughput_on_cores(selected: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark configuration with CPU figures (algorithm, env runners): env steps per
    second of training as run (measured) and on a core per process (predicted), at each trial's
    last iteration, median (min-max) over seeds, with the predicted machine's cores, the busiest
    kind of process (and on how many seeds), its utilisation as run and the slowdown."""
    rows = with_cpu_figures(selected)
    if rows.empty:
        return pd.DataFrame()
    ordered = rows.sort_values([*TRIAL_KEY, "training_iteration"], kind="stable")
    last = ordered.groupby(TRIAL_KEY, sort=False).last()
    last = last.assign(
        measured=last["env_steps"] / last[MEASURED],
        predicted=last["env_steps"] / last[PREDICTED],
        config=ordered.groupby(TRIAL_KEY, sort=False)["config"].first(),
        busiest=ordered.groupby(TRIAL_KEY, sort=False)["cpu_busiest"].first(),
    )
    out = []
    for (algo, runners), g in last.groupby(["algo", "num_env_runners"], sort=True):
        kinds = g["busiest"].value_counts()
        out.append(
            {
                "algo": algo,
                "config": g["config"].iloc[0],
                "num_env_runners": int(runners),
                "seeds": len(g),
                "measured": spread(g["measured"]),
                "predicted": spread(g["predicted"]),
                "cores": spread(g["cpu_cores_predicted"])[0],
                "busiest": kinds.index[0] if len(kinds) else "",
                "busiest_seeds": int(kinds.iloc[0]) if len(kinds) else 0,
                "utilisation": spread(g["cpu_busiest_utilisation"]),
                "slowdown": spread(g["cpu_slowdown"]),
            }
        )
    return pd.DataFrame(out)

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
from typing import Any

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
                "steps_ratio_dqn": _ratio(d, "steps_ratio"),
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
    kind of process (and on how many seeds), its utilisation as run, the seeds whose prediction
    it bounds (``cpu_time.bound_by``) and the slowdown."""
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
        by_busiest=[_bound_by_busiest(r) for _, r in last.iterrows()],
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
                # the seeds whose prediction that process bounds (cpu_time.bound_by)
                "bound_seeds": int(g["by_busiest"].sum()),
                "utilisation": spread(g["cpu_busiest_utilisation"]),
                "slowdown": spread(g["cpu_slowdown"]),
            }
        )
    return pd.DataFrame(out)


def _bound_by_busiest(r: pd.Series) -> bool:
    """Whether a trial's prediction is its busiest process's own CPU work (of the model's
    bounds, ``cpu_time.bound_by``), from its last row's CPU figures."""
    from sweeps.harness.cpu_time import BUSIEST, bound_by

    def figure(column: str) -> float:
        value = r.get(column, math.nan)
        return float(value) if pd.notna(value) else math.nan

    wall = figure("cpu_wall_s")
    busiest_s = figure("cpu_busiest_utilisation") * wall
    figures = (figure("cpu_slowdown"), busiest_s, figure("cpu_trial_s"))
    return bound_by(wall, *figures, figure("cpu_cores_predicted")) == BUSIEST


# --- Seconds on one machine: the rate runs --------------------------------------------------------
#
# Each run's prediction carries the speed of the machine it ran on, and the runs of record ran on
# whatever machine each stretch had (two CPU models so far, and one model's speed varies 2.5-3x
# between stretches): their predicted seconds compare across runs only roughly. Env steps to a
# target do not depend on the machine. So a time on one machine is env steps to the target
# (measured by the runs of record) over env steps per second on a core per process (predicted by
# short *rate runs* of each configuration, run one after another in one sitting on one machine):
# ``python -m analysis report <tables> --rates <rate tables>``. A ratio between two
# configurations uses the rates of a sitting that measured both.

RATE = "rate"  # the ``kind`` of a rate run's rows in the report's table
# A rate run's rows after the first half of its training clock: the learner warmed up (Ape-X and
# DQN sample before they learn), the rate of a process that has settled.
WINDOW_FROM = 0.5
# Rate runs more than this far apart (or on another CPU model) are another sitting.
SITTING_GAP_S = 3 * 3600.0


def window_rates(trial: pd.DataFrame) -> dict[str, float] | None:
    """One rate trial's env steps per second of training over the second half of its training
    clock: as run (measured) and on a core per process (predicted by the model,
    ``cpu_time.predicted_factor``, from the window's CPU figures: the differences of the
    lifetime sums the table holds at its ends), and the CPU each kind of process spent per env
    step over it (:func:`cpu_per_step`). None where the trial has no CPU figures or no two rows
    in the window."""
    from sweeps.harness.cpu_time import predicted_factor

    needed = ["env_steps", "train_time_s", "cpu_wall_s", "cpu_trial_s", "cpu_slowdown"]
    needed += ["cpu_busiest_utilisation", "cpu_cores_predicted"]
    if any(c not in trial.columns for c in needed):
        return None
    rows = trial.sort_values("training_iteration").dropna(subset=needed)
    if len(rows) < 2:
        return None
    end = rows.iloc[-1]
    start = rows[rows["train_time_s"] >= WINDOW_FROM * float(end["train_time_s"])].iloc[0]
    d = {c: float(end[c]) - float(start[c]) for c in ("env_steps", "train_time_s", "cpu_wall_s")}
    if not (d["env_steps"] > 0 and d["train_time_s"] > 0 and d["cpu_wall_s"] > 0):
        return None

    def waited(r: pd.Series) -> float:  # slowdown = 1 + waited / ran
        return (float(r["cpu_slowdown"]) - 1.0) * float(r["cpu_trial_s"])

    def busiest(r: pd.Series) -> float:
        return float(r["cpu_busiest_utilisation"]) * float(r["cpu_wall_s"])

    trial_s = float(end["cpu_trial_s"]) - float(start["cpu_trial_s"])
    if not trial_s > 0:
        return None
    slowdown = 1.0 + (waited(end) - waited(start)) / trial_s
    busiest_s = busiest(end) - busiest(start)
    cores = float(end["cpu_cores_predicted"])
    factor = predicted_factor(d["cpu_wall_s"], slowdown, busiest_s, trial_s, cores)
    return {
        **cpu_per_step(start, end, d["env_steps"]),
        "window_s": d["train_time_s"],
        "measured": d["env_steps"] / d["train_time_s"],
        "predicted": d["env_steps"] / (d["train_time_s"] * factor),
        "cores": cores,
        "utilisation": busiest_s / d["cpu_wall_s"],
        "slowdown": slowdown,
    }


# The trial's processes by kind, as the table sums their CPU seconds (analysis.collect's
# CPU_COLUMNS), in the order the report shows them.
PROCESS_KINDS = (
    ("env runners", "cpu_env_runners_s"),
    ("driver", "cpu_driver_s"),
    ("learners", "cpu_learners_s"),
    ("replay shards", "cpu_replay_shards_s"),
    ("aggregators", "cpu_aggregators_s"),
)
ALL_PROCESSES = "all processes"


def cpu_per_step(start: pd.Series, end: pd.Series, env_steps: float) -> dict[str, Any]:
    """CPU milliseconds per env step between two rows of one trial (the differences of their
    lifetime sums), per kind of process the trial has (``ms_per_step``: {kind: ms}; a kind with
    no figure at either row is left out) and over all its processes (``ms_per_step_all``)."""

    def ms(column: str) -> float:
        if column not in end.index or column not in start.index:
            return math.nan
        spent = float(end[column]) - float(start[column])
        return 1000.0 * spent / env_steps if math.isfinite(spent) and env_steps > 0 else math.nan

    kinds = {kind: ms(column) for kind, column in PROCESS_KINDS}
    return {
        "ms_per_step": {k: v for k, v in kinds.items() if math.isfinite(v)},
        "ms_per_step_all": ms("cpu_trial_s"),
    }


def rate_table(rates: pd.DataFrame) -> pd.DataFrame:
    """One row per rate trial with figures (:func:`window_rates`): its algorithm, env runners,
    experiment, machine (CPU model, raw env steps/s at its start), when it started, its sitting
    (rate runs on one CPU model, each within ``SITTING_GAP_S`` of the one before; numbered from
    1 in time) and its hyperparameters (for matching a configuration of the runs of record)."""
    if rates.empty:
        return pd.DataFrame()
    out = []
    for _, trial in rates.groupby(TRIAL_KEY, sort=False):
        figures = window_rates(trial)
        if figures is None:
            continue
        first = trial.iloc[0]
        hp = {c: first[c] for c in trial.columns if c.startswith("hp/") and pd.notna(first[c])}
        out.append(
            {
                "algo": first["algo"],
                "num_env_runners": int(first["num_env_runners"]),
                "experiment": first["experiment"],
                "cpu_model": str(first.get("cpu_model", "") or ""),
                "raw_env": float(first.get("raw_env_start", math.nan)),
                "started_at": pd.to_datetime(first.get("started_at"), utc=True, errors="coerce"),
                "busiest": str(trial["cpu_busiest"].dropna().iloc[-1])
                if "cpu_busiest" in trial and trial["cpu_busiest"].notna().any()
                else "",
                "hp": hp,
                **figures,
            }
        )
    if not out:
        return pd.DataFrame()
    table = pd.DataFrame(out).sort_values("started_at", kind="stable", na_position="last")
    sitting, previous, model = 0, None, None
    numbers = []
    for _, r in table.iterrows():
        at = r["started_at"]
        gap = math.inf if previous is None or pd.isna(at) else (at - previous).total_seconds()
        if gap > SITTING_GAP_S or r["cpu_model"] != model:
            sitting += 1
        numbers.append(sitting)
        previous, model = (at if not pd.isna(at) else previous), r["cpu_model"]
    return table.assign(sitting=numbers).reset_index(drop=True)


def _same_recipe(hp: dict[str, Any], config_rows: pd.DataFrame) -> bool:
    """Whether a rate trial's hyperparameters are those of a configuration's runs (every
    ``hp/`` setting either recorded, compared as the table holds it)."""
    first = config_rows.iloc[0]
    for column, value in hp.items():
        if column in config_rows.columns and pd.notna(first[column]) and first[column] != value:
            return False
    return True


def _rate_of(
    rates: pd.DataFrame, selected: pd.DataFrame, config: str, algo: str, runners: int
) -> pd.DataFrame:
    """The rate trials of one configuration (its algorithm, runner count and recipe), latest
    sitting first."""
    if rates.empty:
        return rates
    same = rates[(rates["algo"] == algo) & (rates["num_env_runners"] == runners)]
    rows = selected[selected["config"] == config]
    if same.empty or rows.empty:
        return rates.iloc[0:0]
    same = same[same["hp"].map(lambda hp: _same_recipe(hp, rows)).astype(bool)]
    return same.sort_values("sitting", ascending=False, kind="stable")


def _scaled(e: stats.Estimate, by: float) -> stats.Estimate:
    return stats.Estimate(e.value * by, e.low * by, e.high * by)


def on_one_machine(
    on_cores: pd.DataFrame, selected: pd.DataFrame, rate_rows: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Time to target on a core per process of one machine (predicted): per configuration of
    ``on_cores`` (:func:`scaling_on_cores`) that a rate run measured, its env steps to the target
    (Kaplan–Meier median [95%], the runs of record) over its predicted env steps/s (the latest
    sitting's rate run); speedups against the algorithm's fewest remote runners and against the
    single-runner DQN: the runs' env-steps ratio [95%] times the rates' ratio, both rates from
    one sitting (the latest that measured both; NaN where none did). Returns the table (columns
    as ``on_cores``'s where they mean the same: ``predicted``, ``cores``, ``speedup_own``,
    ``speedup_dqn``, ...) and the rate trials used (:func:`rate_table`)."""
    rates = rate_table(rate_rows)
    if on_cores.empty or rates.empty:
        return pd.DataFrame(), rates
    found = {
        r["config"]: _rate_of(rates, selected, r["config"], r["algo"], r["num_env_runners"])
        for _, r in on_cores.iterrows()
    }

    def pair_ratio(config: str, reference: str) -> float:
        """rate(config) / rate(reference) in the latest sitting that measured both."""
        mine, theirs = found.get(config), found.get(reference)
        if mine is None or theirs is None:
            return math.nan
        for _, m in mine.iterrows():
            t = theirs[theirs["sitting"] == m["sitting"]]
            if len(t):
                return float(m["predicted"]) / float(t.iloc[0]["predicted"])
        return math.nan

    out = []
    for _, r in on_cores.iterrows():
        mine = found[r["config"]]
        if mine.empty:
            continue
        rate = mine.iloc[0]
        steps = r["steps"]
        time = _scaled(steps, 1.0 / rate["predicted"])
        own = stats.Estimate(math.nan)
        # the reference the runs' env-steps ratio is against (tables.scaling_time_to_target's)
        ref = on_cores[
            (on_cores["algo"] == r["algo"])
            & (on_cores["num_env_runners"] == r["reference_runners"])
        ]
        if len(ref):
            own = _scaled(r["steps_ratio_own"], pair_ratio(r["config"], ref.iloc[0]["config"]))
        dqn = stats.Estimate(math.nan)
        if r["baseline"]:
            dqn = _scaled(r["steps_ratio_dqn"], pair_ratio(r["config"], r["baseline"]))
        out.append(
            {
                **{k: r[k] for k in ("algo", "num_env_runners", "config", "seeds", "reached")},
                **{k: r[k] for k in ("steps", "reference_runners", "baseline")},
                "rate": rate["predicted"],
                "rate_measured": rate["measured"],
                "cores": rate["cores"],
                "sitting": int(rate["sitting"]),
                "predicted": time,
                "speedup_own": own,
                "speedup_dqn": dqn,
                "busiest": rate["busiest"],
                "utilisation": rate["utilisation"],
                "slowdown": rate["slowdown"],
            }
        )
    return pd.DataFrame(out), rates

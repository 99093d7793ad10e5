"""Tables over the tidy runs table (``analysis.collect``): pure functions, DataFrame in and out.

Vocabulary:

* a *trial* is one (experiment, trial_id); its *final* value of a column is its last non-NaN one;
* a *configuration* is what is compared across algorithms: in a benchmark, every seed of one
  algorithm at one ``num_env_runners`` and one set of recorded hyperparameters (benchmark
  folders that agree on all three are pooled; a recipe that changed between runs is its own
  configuration, labelled by what changed); in a sweep, the single best trial by the final
  search metric (Tune's ``get_best_result`` rule);
* *time to reward*: the first training wall-clock (evaluation excluded) and env-step count at
  which a signal (training return mean, or greedy evaluation return) reaches a target. A seed that
  never does is "not reached within budget": counted and shown, never dropped. Spreads are over
  the seeds that reached it, always next to the count;
* the *all-seed median* counts a seed that never reached the target at its budget (how long it
  ran): its true time is longer, so that median is exact when every seed at or below the middle
  reached the target, and otherwise a lower bound (``*_lower_bound``);
* a *speedup* is shown only between two configurations that both reached the target on every
  seed, the same seeds (:func:`exact_ratio`): never a ratio with a censored median on one side;
* *scaling* is measured from the fewest remote env runners (>= 1); 0 remote runners (sampling in
  the learner's process) is its own row, not n = 1.

One file (over 500 lines): the tables share the vocabulary above and feed each other (time to
target -> summaries -> speedups); split, each part would import the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import stats
from analysis.run_folder import HP_PREFIX
from sweeps.baselines.hyperparams import ALGOS as BASELINE_ALGOS
from sweeps.harness.values import readable

TRIAL_KEY = ["experiment", "trial_id"]
CONFIG_KEY = ["env", "variant", "config"]
SIGNALS = {"return_mean": "training return", "greedy_return": "greedy evaluation return"}
# The confirmed target (sweeps/harness/confirm.py): reached where a check's seeded episodes
# reached it, the check run at a crossing of the judged signal; only the target the run confirmed.
CONFIRMED = "confirm_return"
SIGNAL_NAMES = {**SIGNALS, CONFIRMED: "confirmed target"}
BASELINE_ALGO = "dqn"
# The single-process library a user would pick instead (sweeps/baselines/): Stable-Baselines3.
LIBRARY_ALGOS = tuple(BASELINE_ALGOS)
LIBRARY_NAME = "Stable-Baselines3"


def _final(series: pd.Series) -> float:
    values = series.dropna()
    return float(values.iloc[-1]) if len(values) else math.nan


# --- Trials and configurations ----------------------------------------------------------------


def trial_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: identity, hyperparameters, final values, status."""
    hp = [c for c in runs.columns if c.startswith(HP_PREFIX)]
    first = ["sweep", "kind", "algo", "env", "variant", "config", "seed", "num_env_runners"]
    first += ["tm_seed"]
    first += hp + ["overrides"]
    first += ["trial_status", "mode", "metric", "budget_env_steps", "optimum", "targets"]
    first = [c for c in first if c in runs.columns]
    finals = ["iterations", "env_steps", "train_time_s", "time_total_s", "final_return"]
    finals += ["final_greedy", "final_pct_of_optimum", "final_metric", "env_steps_per_s"]
    finals += ["final_eval_return", "final_eval_episodes", "final_eval_pct", "pct_held_out"]
    finals += ["final_eval_exact_pct", "final_eval_exact_heuristic_pct", "final_eval_sampled"]
    finals += ["eval_share"]
    rows = []
    for (experiment, trial_id), g in runs.groupby(TRIAL_KEY, sort=True):
        g = g.sort_values("training_iteration")
        row = {"experiment": experiment, "trial_id": trial_id}
        row.update({c: g[c].iloc[0] for c in first})
        held_out_pct = _final(g.get("final_eval_pct", pd.Series(dtype=float)))
        row.update(
            iterations=int(g["training_iteration"].max()),
            env_steps=g["env_steps"].max(),
            train_time_s=g["train_time_s"].max(),
            time_total_s=g["time_total_s"].max(),
            final_return=_final(g["return_mean"]),
            final_greedy=_final(g["greedy_return"]),
            # The held-out figure (sweeps.evaluate) where the trial has one, else the last
            # periodic greedy evaluation's.
            final_pct_of_optimum=(
                held_out_pct if not math.isnan(held_out_pct) else _final(g["pct_of_optimum"])
            ),
            final_eval_pct=held_out_pct,
            pct_held_out=not math.isnan(held_out_pct),
            final_metric=_final(g["metric_value"]),
            env_steps_per_s=_final(g["env_steps_per_s"]),
            final_eval_return=_final(g.get("final_eval_return", pd.Series(dtype=float))),
            final_eval_episodes=_final(g.get("final_eval_episodes", pd.Series(dtype=float))),
            final_eval_exact_pct=_final(g.get("final_eval_exact_pct", pd.Series(dtype=float))),
            final_eval_exact_heuristic_pct=_final(
                g.get("final_eval_exact_heuristic_pct", pd.Series(dtype=float))
            ),
            final_eval_sampled=_final(g.get("final_eval_sampled_return", pd.Series(dtype=float))),
            # Periodic greedy evaluation's seconds over the training clock's, at the end
            eval_share=_final(g.get("periodic_eval_s", pd.Series(dtype=float)))
            / max(g["train_time_s"].max(), 1e-9),
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=TRIAL_KEY + first + finals)


def rank_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Trials of one experiment, best first by final search metric (run.json's mode; ties: the
    first trial id; trials without a finite metric last). The one rule for "best trial" in the
    analysis: Tune's ``ResultGrid.get_best_result(metric, mode)`` over the last results."""
    if trials.empty:
        return trials
    ascending = trials["mode"].iloc[0] == "min"
    return trials.sort_values("trial_id", kind="stable").sort_values(
        "final_metric", ascending=ascending, kind="stable", na_position="last"
    )


def best_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Per sweep experiment, its best trial: the highest held-out mean (``final_eval_return``,
    the sweep's own pick, ``sweeps/harness/held_out_pick.py``) where trials have one, else
    :func:`rank_trials`; sweeps where no trial has a finite final metric have none."""
    best = []
    for _, g in trials[trials["kind"] == "sweep"].groupby("experiment", sort=True):
        held_out = g.dropna(subset=["final_eval_return"])
        if not held_out.empty:
            ranked = held_out.sort_values("trial_id", kind="stable").sort_values(
                "final_eval_return", ascending=False, kind="stable"
            )
            best.append(ranked.iloc[[0]])
            continue
        ranked = rank_trials(g.dropna(subset=["final_metric"]))
        if not ranked.empty:
            best.append(ranked.iloc[[0]])
    return pd.concat(best) if best else trials.iloc[0:0]


def config_label(kind: str, algo: str, num_env_runners: float, experiment: str) -> str:
    if kind == "sweep":
        return f"{algo} · best of {experiment}"
    if is_library(algo):  # a single-process baseline: no env runners to count
        return f"{algo} · one process"
    n = "?" if pd.isna(num_env_runners) else int(num_env_runners)
    return f"{algo} · {n} runner{'' if n == 1 else 's'}"


OVERRIDES = "hp/--set"  # the overrides' place among the recipe's values (a label reads "--set")
RECIPE_LABEL_CHARS = 60  # longer differences name the recipe by its first experiment instead


def _differs(values: pd.Series) -> bool:
    """Whether the runs' values of one recipe column (as ``readable`` shows them) differ. A
    hyperparameter a run has no value for ("—": the run predates the search parameter, added to
    the space later) is no difference; for the overrides, "—" is a value: none given."""
    if values.name != OVERRIDES:
        values = values[values != "—"]
    return values.nunique() > 1


def _recipe_suffixes(chosen: pd.DataFrame) -> pd.Series:
    """What tells apart benchmark trials of one algorithm at one runner count that ran different
    hyperparameters (a recipe changed between runs of record): the values that differ, or, where
    any would make a long label, the first experiment (by name) that ran each recipe. Empty
    where the trials agree, so seeds of one recipe from several benchmark folders pool."""
    hp = [c for c in chosen.columns if c.startswith(HP_PREFIX)]
    suffix = pd.Series("", index=chosen.index, dtype="str")
    benchmarks = chosen[chosen["kind"] != "sweep"]
    values = benchmarks[hp].map(lambda v: "—" if pd.isna(v) else readable(v))
    if "overrides" in benchmarks:  # the --set settings outside the hyperparameters (a table
        # collected before the column has none: read as no setting)
        values[OVERRIDES] = benchmarks["overrides"].fillna("").astype(str).replace("", "—")
        hp = [*hp, OVERRIDES]
    if not hp or benchmarks.empty:
        return suffix
    for _, group in benchmarks.groupby(["env", "variant", "config"], dropna=False, sort=False):
        recipes = values.loc[group.index]
        differ = [c for c in hp if _differs(recipes[c])]
        if not differ:
            continue
        named = recipes[differ].rename(columns=lambda c: c.removeprefix(HP_PREFIX))
        texts = named.apply(lambda row: ", ".join(f"{k} {v}" for k, v in row.items()), axis=1)
        if texts.str.len().max() > RECIPE_LABEL_CHARS:
            first = group["experiment"].groupby(texts).transform("min")
            texts = "recipe of " + first.astype(str)
        suffix.loc[texts.index] = " · " + texts
    return suffix


def select_configurations(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows compared across algorithms (benchmarks: every seed; sweeps: the best trial),
    with a ``config`` column naming the configuration."""
    trials = trial_summary(runs)
    if trials.empty:
        return runs.assign(config=pd.Series(dtype="str")).iloc[0:0]
    chosen = pd.concat([trials[trials["kind"] != "sweep"], best_trials(trials)])
    chosen = chosen.assign(
        config=[
            config_label(k, a, n, e)
            for k, a, n, e in zip(
                chosen["kind"],
                chosen["algo"],
                chosen["num_env_runners"],
                chosen["experiment"],
                strict=True,
            )
        ]
    )
    suffixes = _recipe_suffixes(chosen)
    chosen = chosen.assign(
        config=[f"{c}{s}" for c, s in zip(chosen["config"], suffixes, strict=True)]
    )
    chosen = _latest_run_of_each_seed(chosen, runs)
    selected = runs.merge(chosen[TRIAL_KEY + ["config"]], on=TRIAL_KEY, how="inner")
    return selected.sort_values(
        ["env", "variant", "algo", "kind", "num_env_runners", "config", "experiment", "trial_id"]
        + ["training_iteration"],
        kind="stable",
    ).reset_index(drop=True)


def _latest_run_of_each_seed(chosen: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """A seed that a benchmark configuration ran more than once counts once: its latest run
    (a run of record made again, e.g. with a longer budget, replaces the earlier one;
    :func:`superseded` names the earlier ones)."""
    if "started_at" not in runs or "seed" not in chosen:
        return chosen
    started = runs.groupby(TRIAL_KEY, sort=False)["started_at"].first().rename("_started")
    chosen = chosen.merge(started.reset_index(), on=TRIAL_KEY, how="left")
    seeded = (chosen["kind"] != "sweep") & chosen["seed"].notna()
    latest = chosen[seeded].sort_values("_started", kind="stable", na_position="first")
    latest = latest.drop_duplicates(["env", "variant", "config", "seed"], keep="last")
    return pd.concat([latest, chosen[~seeded]]).drop(columns="_started")


def superseded(runs: pd.DataFrame, selected: pd.DataFrame) -> list[str]:
    """The benchmark runs (experiments) of ``runs`` left out of ``selected`` because a later run
    of the same seed replaced them (:func:`select_configurations`)."""
    if runs.empty or "kind" not in runs:
        return []
    bench = runs[runs["kind"] != "sweep"]
    return sorted(set(bench["experiment"]) - set(selected["experiment"]))


def configurations(selected: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (in report order) with its seeds and final values."""
    trials = trial_summary(selected)
    rows = []
    for (env, variant, config), g in trials.groupby(CONFIG_KEY, sort=False):
        rows.append(
            {
                "env": env,
                "variant": variant,
                "config": config,
                "algo": g["algo"].iloc[0],
                "kind": g["kind"].iloc[0],
                "num_env_runners": g["num_env_runners"].iloc[0],
                "seeds": len(g),
                "final_return": spread(g["final_return"]),
                "final_greedy": spread(g["final_greedy"]),
                "final_pct_of_optimum": spread(g["final_pct_of_optimum"]),
                # Interquartile means with 95% intervals (NaN intervals below 5 seeds).
                "final_return_iqm": stats.iqm(g["final_return"]),
                "final_greedy_iqm": stats.iqm(g["final_greedy"]),
                "final_pct_iqm": stats.iqm(g["final_pct_of_optimum"]),
                "env_steps": spread(g["env_steps"]),
                "train_time_s": spread(g["train_time_s"]),
                "env_steps_per_s": spread(g["env_steps_per_s"]),
                "final_eval": spread(g["final_eval_return"]),
                "final_eval_sampled": spread(g["final_eval_sampled"]),
                "final_eval_episodes": g["final_eval_episodes"].max(),
                "pct_held_out": bool(g["pct_held_out"].all()),
                "final_exact_pct": spread(g["final_eval_exact_pct"]),
                "exact_heuristic_pct": g["final_eval_exact_heuristic_pct"].max(),
                "eval_share": spread(g["eval_share"]),
            }
        )
    if not rows:
        return pd.DataFrame(rows)
    order = ["env", "variant", "algo", "kind", "num_env_runners", "config"]
    return pd.DataFrame(rows).sort_values(order, kind="stable").reset_index(drop=True)


def spread(values: pd.Series) -> tuple[float, float, float]:
    """(median, min, max) of the non-NaN values; NaNs when there are none."""
    v = values.dropna().astype(float)
    if v.empty:
        return (math.nan, math.nan, math.nan)
    return (float(v.median()), float(v.min()), float(v.max()))


# --- Time to reward ---------------------------------------------------------------------------


def targets_of(frame: pd.DataFrame) -> list[float]:
    """The reward targets named in the table (run.json "targets"), sorted."""
    found: set[float] = set()
    for text in frame["targets"].dropna().unique():
        found.update(float(t) for t in json.loads(text) if not math.isnan(float(t)))
    return sorted(found)


def main_target(frame: pd.DataFrame) -> float:
    """The workload's target: the highest of its targets (the one benchmarks stop at)."""
    targets = targets_of(frame)
    return targets[-1] if targets else math.nan


def primary_signal(selected: pd.DataFrame) -> str:
    """The signal a workload is judged by: the greedy evaluation return when every configuration
    ran greedy evaluation (the cab sweeps always do), else the training return (Pong runs where
    evaluation did not run for every algorithm)."""
    if selected.empty:
        return "return_mean"
    evaluated = selected.groupby("config")["greedy_return"].agg(lambda s: s.notna().any())
    return "greedy_return" if evaluated.all() else "return_mean"


def time_to_target(
    selected: pd.DataFrame, signals: Sequence[str] = (*SIGNALS, CONFIRMED)
) -> pd.DataFrame:
    """Per trial, signal and target: whether and when (train_time_s, env_steps) it was reached.

    ``budget_*`` columns hold how far the trial ran (what "not reached within budget" means).
    The confirmed signal (``CONFIRMED``) has one target, the one the run confirmed (none in a run
    that stopped at the first crossing); its rows also say how many checks ran (``checks``) and
    the check that confirmed it, or the trial's best check (``check_*``).
    """
    rows = []
    group_cols = CONFIG_KEY + ["algo", "kind", "num_env_runners"] + TRIAL_KEY
    for keys, g in selected.groupby(group_cols, sort=False, dropna=False):
        ident = dict(zip(group_cols, keys, strict=True))
        g = g.sort_values("training_iteration")
        targets = json.loads(g["targets"].iloc[0]) if g["targets"].iloc[0] else []
        for signal in signals:
            for target in _confirmed_targets(g) if signal == CONFIRMED else targets:
                hit = g[g[signal] >= target]
                reached = not hit.empty
                row = {
                    **ident,
                    "seed": g["seed"].iloc[0],
                    "signal": signal,
                    "target": float(target),
                    "reached": reached,
                    "train_time_s": hit["train_time_s"].iloc[0] if reached else math.nan,
                    "env_steps": hit["env_steps"].iloc[0] if reached else math.nan,
                    "budget_train_time_s": g["train_time_s"].max(),
                    "budget_env_steps": g["env_steps"].max(),
                }
                if signal == CONFIRMED:
                    row.update(_checks(g, hit))
                rows.append(row)
    return pd.DataFrame(rows)


def _confirmed_targets(trial: pd.DataFrame) -> list[float]:
    """The target a trial's checks confirmed ([] where it stopped at the first crossing)."""
    if "confirm_target" not in trial.columns:
        return []
    target = trial["confirm_target"].dropna()
    return [float(target.iloc[0])] if len(target) else []


def _checks(trial: pd.DataFrame, hit: pd.DataFrame) -> dict[str, float]:
    """How many checks a trial ran (up to the one that confirmed its target), and that check's
    figures, or where none did its best check's (NaN without checks)."""
    checks = trial[trial["confirm_return"].notna()]
    if not hit.empty:
        check, count = hit.iloc[0], hit["confirm_checks"].iloc[0]
    elif len(checks):
        check, count = checks.loc[checks["confirm_return"].idxmax()], len(checks)
    else:
        return {"checks": 0.0, "check_return": math.nan, "check_ci95": math.nan,
                "check_greedy": math.nan, "check_sampled": math.nan, "check_cut": math.nan,
                "check_episodes": math.nan}  # fmt: skip
    count = float(count) if not pd.isna(count) else float(len(checks))
    return {
        "checks": count,
        "check_return": float(check["confirm_return"]),
        "check_ci95": float(check["confirm_ci95"]),
        "check_greedy": float(check["confirm_greedy_return"]),
        "check_sampled": float(check.get("confirm_sampled_return", math.nan)),
        # of its episodes, those played to the env's time limit (NaN: a table before the count)
        "check_cut": float(check.get("confirm_cut", math.nan)),
        "check_episodes": float(check.get("confirm_episodes", math.nan)),
    }


def censored_median(values: Sequence[float], reached: Sequence[bool]) -> tuple[float, bool]:
    """Median of per-seed values where a seed that did not reach the target holds its budget.

    Returns ``(median, lower_bound)``: an unreached seed's true value exceeds its budget, so the
    median is exact only when no unreached seed sorts at or below the middle (the upper middle
    for an even count); otherwise the true median is at least the value returned.
    """
    pairs = sorted(
        (float(v), not bool(r)) for v, r in zip(values, reached, strict=True) if not pd.isna(v)
    )  # ties: reached seeds first
    if not pairs:
        return math.nan, False
    median = float(np.median([v for v, _ in pairs]))
    lower_bound = any(censored for _, censored in pairs[: len(pairs) // 2 + 1])
    return median, lower_bound


def summarize_time_to_target(ttt: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, signal and target: seeds, seeds that reached it, median / min / max of
    time and env steps over the seeds that reached it (NaN when none did), the all-seed medians
    (:func:`censored_median`), and the seeds run (``seed_list``, to compare like with like)."""
    cols = CONFIG_KEY + ["algo", "kind", "num_env_runners", "signal", "target"]
    rows = []
    for keys, g in ttt.groupby(cols, sort=False, dropna=False):
        reached = g[g["reached"]]
        time_med, time_min, time_max = spread(reached["train_time_s"])
        steps_med, steps_min, steps_max = spread(reached["env_steps"])
        hit = g["reached"].astype(bool)
        # Per seed: the time / env steps to the target, or its budget where it missed.
        by_seed = g.assign(
            _time=g["train_time_s"].where(hit, g["budget_train_time_s"]),
            _steps=g["env_steps"].where(hit, g["budget_env_steps"]),
        ).sort_values("seed", kind="stable")
        time_all, time_lb = censored_median(by_seed["_time"], by_seed["reached"].astype(bool))
        steps_all, steps_lb = censored_median(by_seed["_steps"], by_seed["reached"].astype(bool))
        km_time = stats.km_median(by_seed["_time"], by_seed["reached"].astype(bool))
        km_steps = stats.km_median(by_seed["_steps"], by_seed["reached"].astype(bool))
        rows.append(
            {
                **dict(zip(cols, keys, strict=True)),
                "seeds": len(g),
                "reached": len(reached),
                "seed_list": tuple(sorted(g["seed"].dropna().astype(int))),
                "time_median_s": time_med,
                "time_min_s": time_min,
                "time_max_s": time_max,
                "steps_median": steps_med,
                "steps_min": steps_min,
                "steps_max": steps_max,
                "time_all_median_s": time_all,
                "time_all_lower_bound": time_lb,
                "steps_all_median": steps_all,
                "steps_all_lower_bound": steps_lb,
                "budget_train_time_s": g["budget_train_time_s"].max(),
                "budget_env_steps": g["budget_env_steps"].max(),
                # Per seed, in seed order (what the intervals resample).
                "time_values": tuple(by_seed["_time"].astype(float)),
                "steps_values": tuple(by_seed["_steps"].astype(float)),
                "reached_flags": tuple(by_seed["reached"].astype(bool)),
                "km_time_s": km_time.value,
                "km_time_low_s": km_time.low,
                "km_time_high_s": km_time.high,
                "km_steps": km_steps.value,
                "km_steps_low": km_steps.low,
                "km_steps_high": km_steps.high,
                **_check_values(by_seed),
            }
        )
    return pd.DataFrame(rows, columns=cols + ["seeds", "reached"] if not rows else None)


def _check_values(by_seed: pd.DataFrame) -> dict[str, tuple[float, ...]]:
    """The confirmed signal's checks per seed, in seed order (``time_to_target``'s check
    columns): the number run, and the confirming (or best) check's figures; {} elsewhere."""
    if "checks" not in by_seed.columns or by_seed["checks"].isna().all():
        return {}
    return {
        "checks_values": tuple(by_seed["checks"].astype(float)),
        "check_returns": tuple(by_seed["check_return"].astype(float)),
        "check_ci95s": tuple(by_seed["check_ci95"].astype(float)),
        "check_greedys": tuple(by_seed["check_greedy"].astype(float)),
        "check_sampleds": tuple(by_seed["check_sampled"].astype(float)),
    }


def best_per_algorithm(summary: pd.DataFrame, finals: pd.Series) -> pd.DataFrame:
    """Each algorithm's best configuration in ``summary`` (one signal and target), best first.

    Within an algorithm benchmark configurations come before a sweep's best trial (one trial
    picked from many is no benchmark of its seeds); then, everywhere: the larger share of seeds
    that reached the target, the shorter all-seed median time (for configurations that reached
    it at all), the higher final value of the signal (``finals``: config -> median), the label.
    """
    if summary.empty:
        return summary
    s = summary.assign(
        _sweep=summary["kind"] == "sweep",
        _missed=1.0 - summary["reached"] / summary["seeds"],
        _time=summary["time_all_median_s"].where(summary["reached"] > 0, math.inf),
        _final=-summary["config"].map(finals).fillna(-math.inf),
    )
    order = ["_missed", "_time", "_final", "config"]
    best = s.sort_values(["_sweep", *order], kind="stable").drop_duplicates("algo")
    best = best.sort_values(order, kind="stable")
    return best.drop(columns=["_sweep", "_missed", "_time", "_final"]).reset_index(drop=True)


# --- Speedup ----------------------------------------------------------------------------------


def baseline_config(summary: pd.DataFrame) -> str | None:
    """The single-runner DQN configuration: DQN with exactly one env runner (the seed article's
    single-worker DQN); a benchmark before a sweep's best trial. None when there is none."""
    dqn = summary[(summary["algo"] == BASELINE_ALGO) & (summary["num_env_runners"] == 1)]
    if dqn.empty:
        return None
    dqn = dqn.assign(_sweep=dqn["kind"] == "sweep").sort_values(["_sweep", "config"])
    return str(dqn["config"].iloc[0])


def library_config(summary: pd.DataFrame, signal: str, target: float) -> str | None:
    """The library baseline's configuration a report compares against: of the Stable-Baselines3
    configurations (``LIBRARY_ALGOS``), the one with most seeds reaching ``target`` at
    ``signal``, then the fastest (median time, censored medians last); None without one."""
    rows = summary[summary["algo"].isin(LIBRARY_ALGOS)]
    rows = rows[(rows["signal"] == signal) & (rows["target"] == target)]
    if rows.empty:
        return None
    rows = rows.assign(
        _missed=rows["seeds"] - rows["reached"],
        _time=pd.to_numeric(rows["time_all_median_s"], errors="coerce").fillna(math.inf),
    )
    return str(rows.sort_values(["_missed", "_time", "config"]).iloc[0]["config"])


def is_library(algo: Any) -> bool:
    return algo in LIBRARY_ALGOS


def exact_ratio(reference: pd.Series, other: pd.Series) -> tuple[float, float, str]:
    """Speedup (reference median time / other median time), the same ratio of env steps, and
    "" -- or NaNs and why not. Only between two configurations that both reached the target on
    every seed, the same seeds: medians of measured times, nothing censored, nothing divided by
    a budget."""
    for r in (reference, other):
        if r["reached"] < r["seeds"]:
            return math.nan, math.nan, f"{r['config']} reached {r['reached']}/{r['seeds']}"
    if tuple(reference["seed_list"]) != tuple(other["seed_list"]):
        return math.nan, math.nan, "different seeds"
    return (
        float(reference["time_all_median_s"]) / float(other["time_all_median_s"]),
        float(reference["steps_all_median"]) / float(other["steps_all_median"]),
        "",
    )


def ratio_interval(reference: pd.Series, other: pd.Series, column: str) -> stats.Estimate:
    """The ratio of :func:`exact_ratio` with its 95% bootstrap interval over seeds
    (``column``: "time_values" or "steps_values"); NaN where exact_ratio gives no ratio."""
    ratio, steps_ratio, why = exact_ratio(reference, other)
    if why:
        return stats.Estimate(math.nan)
    if reference.get(column) is None or other.get(column) is None:  # no per-seed values
        return stats.Estimate(ratio if column == "time_values" else steps_ratio)
    return stats.ratio_of_medians(reference[column], other[column])


def compare(faster: pd.Series, slower: pd.Series) -> dict:
    """How far the seeds separate two configurations at one signal and target: ``ratio``
    (slower / faster median time, an :class:`stats.Estimate`; NaN unless both reached the target
    on every seed, the same seeds), ``separated`` (its interval excludes 1; where seeds missed,
    a log-rank p < 0.05), ``p`` (the log-rank p-value, NaN where the ratio decides) and
    ``seeds_needed`` (roughly how many seeds each would separate a ratio this size)."""
    ratio = ratio_interval(slower, faster, "time_values")
    if not math.isnan(ratio.value):
        seeds = int(min(faster["seeds"], slower["seeds"]))
        return {
            "ratio": ratio,
            "separated": stats.separated(ratio),
            "p": math.nan,
            "seeds_needed": stats.seeds_to_separate(ratio, seeds),
        }
    a, b = faster, slower
    p = stats.logrank_p(a["time_values"], a["reached_flags"], b["time_values"], b["reached_flags"])
    return {"ratio": ratio, "separated": bool(p < stats.ALPHA), "p": p, "seeds_needed": None}


def speedup_vs_baseline(
    summary: pd.DataFrame, base_of: Callable[[pd.DataFrame], str | None] | None = None
) -> pd.DataFrame:
    """Each configuration against the single-runner DQN baseline of its env/variant (or the
    configuration ``base_of`` picks from an env/variant's summary: the library baseline), per
    signal and target (:func:`exact_ratio`): ``speedup`` > 1 is faster in training wall-clock,
    ``steps_ratio`` > 1 needed fewer env steps; NaN with ``why`` where no ratio is shown."""
    rows = []
    for (env, variant), env_summary in summary.groupby(["env", "variant"], sort=False):
        base = (base_of or baseline_config)(env_summary)
        if base is None:
            continue
        baseline = env_summary[env_summary["config"] == base].set_index(["signal", "target"])
        for _, r in env_summary.iterrows():
            key = (r["signal"], r["target"])
            if key not in baseline.index:
                continue
            b = baseline.loc[key]
            speedup, steps_ratio, why = exact_ratio(b, r)
            interval = ratio_interval(b, r, "time_values")
            steps_interval = ratio_interval(b, r, "steps_values")
            if r["config"] == base:  # the baseline against itself: 1, exactly
                interval = steps_interval = stats.Estimate(1.0)
            rows.append(
                {
                    "env": env,
                    "variant": variant,
                    "config": r["config"],
                    "algo": r["algo"],
                    "num_env_runners": r["num_env_runners"],
                    "baseline": base,
                    "signal": r["signal"],
                    "target": r["target"],
                    "seeds": r["seeds"],
                    "reached": r["reached"],
                    "baseline_seeds": b["seeds"],
                    "baseline_reached": b["reached"],
                    "speedup": speedup,
                    "speedup_low": interval.low,
                    "speedup_high": interval.high,
                    "steps_ratio": steps_ratio,
                    "steps_ratio_low": steps_interval.low,
                    "steps_ratio_high": steps_interval.high,
                    "why": why,
                }
            )
    return pd.DataFrame(rows)


# --- Scaling ----------------------------------------------------------------------------------


def _reference_runners(counts: Sequence[float]) -> float | None:
    """The runner count scaling is measured from: the fewest remote env runners (>= 1). Zero
    remote runners (sampling in the learner's process) is another setup, not n = 1."""
    remote = [n for n in counts if n >= 1]
    return min(remote) if remote else None


def scaling_throughput(selected: pd.DataFrame) -> pd.DataFrame:
    """Benchmark throughput (final env steps/s, median over seeds) against ``num_env_runners``.

    For n >= 1 remote runners: speedup = steps/s at n / steps/s at the fewest remote runners
    n_ref, parallel efficiency = speedup / (n / n_ref). The 0-runner row (sampling in the
    learner's process) has its throughput only. Only algorithms benchmarked at two or more
    runner counts appear.
    """
    bench = selected[selected["kind"] == "benchmark"]
    trials = trial_summary(bench)
    rows = []
    for (env, variant, algo), g in trials.groupby(["env", "variant", "algo"], sort=True):
        counts = sorted(g["num_env_runners"].dropna().unique())
        if len(counts) < 2:
            continue
        n_ref = _reference_runners(counts)
        per_n = {n: g[g["num_env_runners"] == n] for n in counts}
        base = spread(per_n[n_ref]["env_steps_per_s"])[0] if n_ref is not None else math.nan
        for n in counts:
            med, lo, hi = spread(per_n[n]["env_steps_per_s"])
            speedup = med / base if n >= 1 else math.nan
            rows.append(
                {
                    "env": env,
                    "variant": variant,
                    "algo": algo,
                    "config": per_n[n]["config"].iloc[0] if "config" in g else "",
                    "num_env_runners": int(n),
                    "seeds": len(per_n[n]),
                    "steps_per_s_median": med,
                    "steps_per_s_min": lo,
                    "steps_per_s_max": hi,
                    "speedup": speedup,
                    "efficiency": speedup / (n / n_ref) if n >= 1 else math.nan,
                }
            )
    return pd.DataFrame(rows)


def scaling_time_to_target(summary: pd.DataFrame) -> pd.DataFrame:
    """Benchmark time to target against ``num_env_runners``: for n >= 1 remote runners, the
    speedup against the fewest remote runners n_ref (``reference_runners``; :func:`exact_ratio`:
    only where both reached the target on every seed), the same ratio of env steps
    (``steps_ratio``, > 1: fewer samples than at n_ref) and efficiency = speedup / (n / n_ref);
    the 0-runner row has its times only."""
    bench = summary[summary["kind"] == "benchmark"]
    rows = []
    group = ["env", "variant", "algo", "signal", "target"]
    for keys, g in bench.groupby(group, sort=False):
        g = g.sort_values("num_env_runners")
        if g["num_env_runners"].nunique() < 2:
            continue
        n_ref = _reference_runners(list(g["num_env_runners"]))
        ref = g[g["num_env_runners"] == n_ref].iloc[0] if n_ref is not None else None
        for _, r in g.iterrows():
            n = r["num_env_runners"]
            interval = steps = stats.Estimate(math.nan)
            if ref is not None and n >= 1:
                speedup, steps_ratio, why = exact_ratio(ref, r)
                interval = ratio_interval(ref, r, "time_values")
                steps = ratio_interval(ref, r, "steps_values")
            else:
                speedup, steps_ratio, why = math.nan, math.nan, "0 remote runners"
            rows.append(
                {
                    **dict(zip(group, keys, strict=True)),
                    "config": r["config"],
                    "num_env_runners": int(n),
                    "seeds": int(r["seeds"]),
                    "reached": int(r["reached"]),
                    "time_median_s": r["time_all_median_s"],
                    "time_lower_bound": r["time_all_lower_bound"],
                    "speedup": speedup,
                    "speedup_low": interval.low,
                    "speedup_high": interval.high,
                    "efficiency": speedup / (n / n_ref) if n >= 1 else math.nan,
                    "reference_runners": n_ref,
                    "steps_ratio": steps_ratio,
                    "steps_ratio_low": steps.low,
                    "steps_ratio_high": steps.high,
                    "why": why,
                }
            )
    return pd.DataFrame(rows)


def sweep_trials(runs: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """All trials of one sweep ranked by final search metric (best first; NaN last)."""
    trials = rank_trials(trial_summary(runs[runs["experiment"] == experiment]))
    if trials.empty:
        return trials
    hp = [c for c in trials.columns if c.startswith(HP_PREFIX) and trials[c].notna().any()]
    trials.insert(0, "rank", np.arange(1, len(trials) + 1))
    cols = ["rank", "trial_id", "seed", *hp, "final_metric", "final_greedy", "env_steps"]
    return trials[cols + ["train_time_s", "trial_status"]].reset_index(drop=True)

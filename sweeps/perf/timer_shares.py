"""RLlib's timers as shares of wall-clock, for ``sweeps.profiling``.

RLlib times each stage of sampling and learning (``MetricsLogger.log_time``) and reports the
mean time of one call; the counters of a measured window give how often each stage ran; their
product is the stage's share of wall-clock. :func:`restart_timers` turns the timers into running
means over the window (RLlib's own are exponential moving averages since the first call).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ray.rllib.core import ALL_MODULES
from ray.rllib.utils.metrics import (
    CONNECTOR_PIPELINE_TIMER,
    CONNECTOR_TIMERS,
    ENV_RUNNER_RESULTS,
    ENV_STEP_TIMER,
    ENV_TO_MODULE_CONNECTOR,
    LEARNER_CONNECTOR,
    LEARNER_RESULTS,
    MODULE_TO_ENV_CONNECTOR,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_SYNCH_WORKER_WEIGHTS,
    NUM_TRAINING_STEP_CALLS_PER_ITERATION,
    RLMODULE_INFERENCE_TIMER,
    SAMPLE_TIMER,
    TIME_BETWEEN_SAMPLING,
    TIMERS,
)

from sweeps.harness import keys
from sweeps.seams import metrics as metrics_seam
from sweeps.throughput import window_rates

# How often each driver timer runs, per algorithm: "training_step" (RLlib's training_step
# calls), "update" (SGD steps), "learner_call" (LearnerGroup.update calls: each trains one
# batch, in num_epochs passes of minibatches for IMPALA and APPO, several batches for Ape-X),
# "sample_round" (one sample from every runner), "broadcast" (weight broadcasts), "iteration".
# A timer not listed shows its per-call time only.
DRIVER_TIMER_RATES: dict[str, dict[str, str]] = {
    "*": {
        "training_iteration": "iteration",
        "training_step": "training_step",
        "restore_env_runners": "training_step",
    },
    "dqn": {
        "env_runner_sampling_timer": "sample_round",
        "replay_buffer_add_data_timer": "sample_round",
        "replay_buffer_sampling_timer": "update",
        "learner_update_timer": "update",
        "replay_buffer_update_prios_timer": "update",
        "synch_weights": "training_step",
    },
    "apex": {"learner_update_timer": "learner_call"},
    "impala": {
        "sample": "training_step",
        "learner_update_timer": "training_step",
        "synch_weights": "broadcast",
    },
}
DRIVER_TIMER_RATES["appo"] = DRIVER_TIMER_RATES["impala"]  # APPO's training_step is IMPALA's

# Learner timers (under learners/__all_modules__) that run once per learner call.
LEARNER_UPDATE_TIMERS = (
    (LEARNER_CONNECTOR, CONNECTOR_PIPELINE_TIMER),
    ("learner_thread_update_timer",),
)

RUNNER_STAGES = (
    ("env step", (ENV_STEP_TIMER,)),
    ("env-to-module connector", (ENV_TO_MODULE_CONNECTOR, CONNECTOR_PIPELINE_TIMER)),
    ("RLModule inference", (RLMODULE_INFERENCE_TIMER,)),
    ("module-to-env connector", (MODULE_TO_ENV_CONNECTOR, CONNECTOR_PIPELINE_TIMER)),
)


# --------------------------------------------------------------------------------------------
# Restarting RLlib's timers after the warm-up
# --------------------------------------------------------------------------------------------


def _timers(stats: Mapping[str, Any], timers_only: bool) -> list[Any]:
    """The moving-average timers a ``MetricsLogger`` logs itself (``MetricsLogger.stats``)."""
    found = []
    for name, node in stats.items():
        if isinstance(node, Mapping):
            found += _timers(node, timers_only=timers_only and name != TIMERS)
        elif (
            getattr(node, "stats_cls_identifier", None) == "ema"
            and getattr(node, "is_leaf", False)
            and (
                not timers_only or "timer" in name or name in (SAMPLE_TIMER, TIME_BETWEEN_SAMPLING)
            )
        ):
            found.append(node)
    return found


def _restart(metrics: Any, timers_only: bool = True) -> int:
    """Restart every timer this logger logs itself as a running mean of the calls from now on
    (``sweeps.seams.metrics.restart_as_running_mean``)."""
    timers = _timers(metrics.stats, timers_only)
    for stats in timers:
        metrics_seam.restart_as_running_mean(stats)
    return len(timers)


def restart_timers(algorithm: Any) -> None:
    """Restart the timers of the driver, the env runners and the learners as running means, so
    that the window's last result carries the mean over the window's own calls. RLlib's
    default, an exponential moving average with coefficient 0.01, starts at the first call ever
    and would still carry the build and warm-up. Counters are left alone. (A profiling
    instrument only.)"""
    _restart(algorithm.metrics)
    algorithm.env_runner_group.foreach_env_runner(
        lambda runner: _restart(runner.metrics), local_env_runner=True
    )
    algorithm.learner_group.foreach_learner(lambda learner: _restart(learner.metrics))


# --------------------------------------------------------------------------------------------
# Shares
# --------------------------------------------------------------------------------------------


def _get(tree: Mapping[str, Any], *path: str) -> float | None:
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    try:
        value = float(node)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _stage(name: str, per_call_s: float | None, rate: float | None, how: str = "") -> dict:
    share = per_call_s * rate if per_call_s is not None and rate is not None else None
    return {"stage": name, "per_call_ms": None if per_call_s is None else 1e3 * per_call_s,
            "calls_per_s": rate, "share": share, "how": how}  # fmt: skip


def _share(name: str, share: float, how: str = "") -> dict:
    """A stage known only as a share of wall-clock."""
    return {**_stage(name, None, None, how), "share": share}


def runner_breakdown(
    result: Mapping[str, Any], per_runner_sampled_per_s: float, envs_per_runner: int
) -> list[dict]:
    """Shares of one env runner's wall-clock (timers averaged over the runners)."""
    runners = result.get(ENV_RUNNER_RESULTS, {})
    vector_steps = per_runner_sampled_per_s / max(envs_per_runner, 1)
    how = f"vector steps/s = sampled/s per runner ÷ {envs_per_runner} envs"
    rows = [_stage(n, _get(runners, *path), vector_steps, how) for n, path in RUNNER_STAGES]
    sample_s, between_s = _get(runners, SAMPLE_TIMER), _get(runners, TIME_BETWEEN_SAMPLING)
    if sample_s is not None and between_s is not None and sample_s + between_s > 0:
        cycles = 1 / (sample_s + between_s)
        cycle = "sample() calls/s = 1 / (sample() + time between sample() calls)"
        timed = sum(r["share"] or 0.0 for r in rows)
        rest = sample_s * cycles - timed
        rows += [
            _share("rest of sample() (episode bookkeeping)", rest, "sample() total − the above"),
            _stage("outside sample() (waiting, transport, weight sync)", between_s, cycles, cycle),
            _stage("sample() total", sample_s, cycles, cycle),
        ]
    for prefix in (ENV_TO_MODULE_CONNECTOR, MODULE_TO_ENV_CONNECTOR):
        pieces = runners.get(prefix, {}).get(TIMERS, {}).get(CONNECTOR_TIMERS, {})
        for piece in sorted(pieces):
            rows.append(_stage(f"· {prefix}: {piece}", _get(pieces, piece), vector_steps, how))
    return rows


def apex_runner_stages(last: Mapping[str, Any], requests_per_s: float) -> list[dict]:
    """Ape-X's own per-request runner figures (lifetime means), if its results have them."""
    apex = last.get(keys.APEX, {})
    how = "requests/s per runner = sampled/s per runner ÷ steps per request (lifetime mean)"
    out = []
    for key, name in (
        ("runner_sample_s_mean", "Ape-X request: sample"),
        ("runner_priority_s_mean", "Ape-X request: initial priorities"),
        ("runner_add_wait_s_mean", "Ape-X request: wait for the previous replay add"),
    ):
        value = _get(apex, key)
        if value is not None:
            out.append(_stage(name, value, requests_per_s, how))
    return out


def _apex_delta(first: Mapping[str, Any], last: Mapping[str, Any], *path: str) -> float | None:
    """The change of one of Ape-X's lifetime figures (``result["apex"]``) between two results."""
    v0, v1 = _get(first.get(keys.APEX, {}), *path), _get(last.get(keys.APEX, {}), *path)
    return None if v0 is None or v1 is None else v1 - v0


def rates(
    algo: str,
    config: Any,
    first: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    seconds: float,
) -> dict[str, float]:
    """Calls per second of each kind of driver step in the window, from RLlib's counters."""
    last = results[-1]
    window = window_rates(first, last, seconds)
    runners = max(int(config.num_env_runners), 1)
    steps_per_round = (
        config.get_rollout_fragment_length() * config.num_envs_per_env_runner * runners
    )
    rows_per_update = _get(
        last, LEARNER_RESULTS, "default_policy", MODULE_TRAIN_BATCH_SIZE_MEAN
    ) or float(config.total_train_batch_size)
    calls = sum(r.get(NUM_TRAINING_STEP_CALLS_PER_ITERATION, 0) or 0 for r in results)
    broadcasts = sum(_get(r, NUM_SYNCH_WORKER_WEIGHTS) or 0 for r in results)
    updates = window["trained_per_s"] / rows_per_update
    learner_calls = _apex_delta(first, last, "learner_calls_lifetime")
    if learner_calls is None:  # each call trains its batch num_epochs times, in minibatches
        passes = max(int(getattr(config, "num_epochs", 1) or 1), 1)
        rows_per_call = passes * float(config.total_train_batch_size)
        per_s = window["trained_per_s"] / rows_per_call
    else:
        per_s = learner_calls / seconds
    return {
        "iteration": len(results) / seconds,
        "training_step": calls / seconds,
        "update": updates,
        "learner_call": per_s,
        "sample_round": window["sampled_per_s"] / steps_per_round,
        "broadcast": broadcasts / seconds,
    }


def driver_breakdown(algo: str, last: Mapping[str, Any], rate: Mapping[str, float]) -> list[dict]:
    """Shares of the driver's wall-clock (learner updates included when the learner is local)."""
    table = {**DRIVER_TIMER_RATES["*"], **DRIVER_TIMER_RATES.get(algo, {})}
    rows = []
    for name, value in sorted(last.get(TIMERS, {}).items()):
        per_call = _get({name: value}, name)
        kind = table.get(name)
        rows.append(
            _stage(
                f"timers/{name}",
                per_call,
                None if kind is None else rate[kind],
                "" if kind is None else f"per {kind.replace('_', ' ')}",
            )
        )
    learner = last.get(LEARNER_RESULTS, {}).get(ALL_MODULES, {})
    for path in LEARNER_UPDATE_TIMERS:
        per_call = _get(learner, *path)
        if per_call is not None:
            rows.append(
                _stage(
                    "learner: " + "/".join(path), per_call, rate["learner_call"], "per learner call"
                )
            )
    for name in sorted(learner):
        if "timer" in name and (name,) not in LEARNER_UPDATE_TIMERS:
            rows.append(_stage(f"learner: {name}", _get(learner, name), None))
    return rows


def apex_driver_stages(
    first: Mapping[str, Any], last: Mapping[str, Any], seconds: float
) -> list[dict]:
    """Ape-X's own figures over the window (differences of its lifetime totals)."""

    def delta(*path: str) -> float | None:
        return _apex_delta(first, last, *path)

    out = []
    idle = delta("driver_idle_s_lifetime")
    if idle is not None:
        out.append(_share("Ape-X driver idle (blocked in ray.wait)", idle / seconds))
    for key, name in (
        ("training_step_calls_lifetime", "Ape-X training_step calls"),
        ("learner_updates_lifetime", "Ape-X learner updates (SGD steps)"),
        ("learner_calls_lifetime", "Ape-X learner calls"),
        ("weight_syncs_lifetime", "Ape-X weight syncs"),
    ):
        d = delta(key)
        if d is not None:
            out.append(_stage(name, None, d / seconds))
    shards = sorted(last.get(keys.APEX, {}).get("replay", {}))
    for op in ("add", "sample", "update_priorities"):
        busy = [delta("replay", s, f"{op}_s_total") for s in shards]
        calls = [delta("replay", s, f"{op}_calls") for s in shards]
        if shards and all(b is not None for b in busy):
            total_calls = sum(c or 0 for c in calls)
            stage = _stage(
                f"Ape-X replay shard busy: {op}",
                sum(busy) / total_calls if total_calls else None,
                total_calls / seconds / len(shards),
                f"mean over {len(shards)} shard(s), share of a shard's wall-clock",
            )
            out.append({**stage, "share": sum(busy) / seconds / len(shards)})
    return out


def breakdown(
    algo: str,
    config: Any,
    first: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    seconds: float,
) -> dict[str, Any]:
    """Call rates, env-runner stages and driver/learner stages of one measured window (the
    results after ``first``, ``seconds`` long; timers restarted at ``first``)."""
    last = results[-1]
    envs = int(config.num_envs_per_env_runner)
    per_runner = window_rates(first, last, seconds)["sampled_per_s"] / max(
        int(config.num_env_runners), 1
    )
    rate = rates(algo, config, first, results, seconds)
    runner_rows = runner_breakdown(last, per_runner, envs)
    driver_rows = driver_breakdown(algo, last, rate)
    fragment = config.get_rollout_fragment_length()
    if algo == "apex":
        runner_rows += apex_runner_stages(last, per_runner / (fragment * envs))
        driver_rows += apex_driver_stages(first, last, seconds)
    return {"rates": rate, "runner": runner_rows, "driver": driver_rows, "fragment": fragment}

"""Throughput benchmark: env steps/s sampled and trained per algorithm while learning.

How to run
----------
    python -m sweeps.throughput                                  # all cab algorithms, 60 s each
    python -m sweeps.throughput --algos impala,appo --seconds 30 --num-envs-per-env-runner 64
    python -m sweeps.throughput --env pong --seconds 20 --max-warmup-s 300 \\
        --markdown results/pong/THROUGHPUT.md
    python -m sweeps.throughput --env pong --num-env-runners 1,2,4,8,14   # scaling, on a big box
    python -m sweeps.throughput --algos dqn,sb3-dqn --num-env-runners 0,1 \\
        --set double_q=false --set dueling=false      # against Stable-Baselines3's DQN

Each algorithm is built from its sweep file's tuned defaults (the config a sweep's trial starts
from, evaluation off, one-second iterations as in benchmark mode), warmed up until its learner has
trained (bounded by ``--max-warmup-s``: DQN and Ape-X sample tens of thousands of steps before
learning starts), then trained for ``--seconds`` of wall-clock and measured from RLlib's lifetime
counters. Trained steps are the learner's (replayed samples for DQN and Ape-X); a learner that
never started is reported as such, never as 0/s. Before any algorithm, the same wrapped env is
stepped with random actions in this process for ``--raw-env-s``: a runner's efficiency is its
sampled steps/s over that raw rate. ``--num-env-runners 1,2,4`` gives a scaling table, which says
when the machine has too few cores to show scaling. This is a script, not a test: figures depend
on the machine and its load; quote them with the command (``--markdown`` writes both).

A baseline (``sb3-dqn``, ``sb3-ppo``: Stable-Baselines3 with its recipe, one process) is measured
the same way, as the very trial the benchmark runs (``BaselineTrainable``, evaluation off), once
whatever ``--num-env-runners`` says; ``--set`` is the four's (a baseline runs its recipe). Every
row has its learner's updates per second (SGD steps: trained samples over the update's batch) and
what its DQN adds to the baseline's (double Q, dueling heads, prioritized replay), so that the
suite's DQN and SB3's can be compared at the same network, batch and updates per env step.

One file (over 500 lines): the flags, the build-and-warm-up that ``sweeps.profiling`` shares and
the measured row are one measurement, read top to bottom.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.bench import raw_env_rate
from sweeps.benchmark import ALGOS, BASELINES, _algo_list, _int_list
from sweeps.harness import keys
from sweeps.harness.cli import apply_settings, count, positive_float, setting
from sweeps.harness.errors import OneLineErrorParser, UsageError
from sweeps.harness.files import atomic_write_text, check_writable
from sweeps.perf import perf_report
from sweeps.workloads import NAMED


@dataclass(slots=True, kw_only=True)
class ThroughputSettings:
    """The throughput benchmark's parsed, checked flags (their defaults: ``build_parser``), and
    ``sweeps.profiling``'s. The workload's own flags are ``env`` .. ``target`` (what its methods
    read: ``sweeps.workloads.base.EnvFlags``); only a named workload runs here, so the last three
    are its defaults."""

    env: str
    variant: str | None
    algos: list[str]
    seconds: float
    max_warmup_s: float
    raw_env_s: float
    num_env_runners: list[int] | None  # None: each sweep's own
    num_envs_per_env_runner: int | None
    iteration_s: float
    set: list[tuple[str, Any]]
    json: str | None
    markdown: str | None
    py_spy: bool = False  # sweeps.profiling's
    tm_seed: int | None = None
    env_config: dict[str, Any] | None = None
    target: list[float] | None = None


def _rllib_algos(text: str) -> list[str]:
    """The four's names; a baseline is refused (it has no RLlib timers to profile)."""
    algos = _algo_list(text)
    baselines = [a for a in algos if a in BASELINES]
    if baselines:
        raise argparse.ArgumentTypeError(
            f"{','.join(baselines)}: this reads RLlib's timers, which a baseline has not; its "
            "env steps/s and updates/s: python -m sweeps.throughput --algos " + ",".join(baselines)
        )
    return algos


def build_parser(
    prog: str = "python -m sweeps.throughput", doc: str = __doc__, baselines: bool = True
) -> OneLineErrorParser:
    """The flags shared by ``sweeps.throughput`` and ``sweeps.profiling`` (which reads RLlib's
    timers, so it takes no ``baselines``)."""
    p = OneLineErrorParser(
        prog=prog,
        description=doc.split("\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("--env", choices=sorted(NAMED), default="cabs", help="workload")
    p.add_argument("--variant", choices=["base", "requests"], default="base", help="cab variant")
    p.add_argument(
        "--algos",
        type=_algo_list if baselines else _rllib_algos,
        default=list(ALGOS),
        help="comma-separated, e.g. dqn,apex"
        + (f"; or a baseline: {','.join(BASELINES)}" if baselines else ""),
    )
    p.add_argument(
        "--seconds", type=positive_float, default=60.0, help="measured wall-clock per algorithm"
    )
    p.add_argument(
        "--max-warmup-s",
        type=positive_float,
        default=120.0,
        help="train at most this long before measuring, waiting for the learner to start",
    )
    p.add_argument(
        "--raw-env-s",
        type=positive_float,
        default=3.0,
        help="seconds of the single-process random-action loop giving the raw env rate",
    )
    p.add_argument(
        "--num-env-runners",
        type=_int_list,
        default=None,
        help="comma-separated env-runner counts (a scaling table); default: each sweep's own",
    )
    p.add_argument(
        "--num-envs-per-env-runner", type=count(1), default=None, help="override the sweep default"
    )
    p.add_argument(
        "--iteration-s",
        type=positive_float,
        default=1.0,
        help="min wall-clock per training iteration (the time resolution of the measurement)",
    )
    p.add_argument(
        "--set",
        action="append",
        type=setting,
        default=[],
        metavar="KEY=VALUE",
        help="override a tuned default in every RLlib algorithm built, as a sweep's --set does "
        "(e.g. --set num_aggregator_actors_per_learner=2; a baseline runs its recipe); "
        "repeatable",
    )
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.add_argument("--markdown", help="also write a generated Markdown report")
    return p


def parse_args(
    argv: Sequence[str] | None, parser: argparse.ArgumentParser | None = None
) -> ThroughputSettings:
    """Parse and check everything before Ray starts: bad input is one line and exit 2."""
    parser = parser or build_parser()
    args = ThroughputSettings(**vars(parser.parse_args(argv)))
    for flag in ("json", "markdown"):
        path = getattr(args, flag, None)
        if path is None:
            continue
        target = Path(path).expanduser()
        if target.is_dir():
            parser.error(f"--{flag} {path}: is a folder, expected a file name")
        try:  # an existing report is overwritten; otherwise its folder must be creatable
            check_writable(target if not target.exists() else target.parent)
        except UsageError as err:
            parser.error(f"--{flag}: {err}")
    rllib = [a for a in args.algos if a not in BASELINES]
    for algo in rllib if args.set else ():  # a --set that is no setting: before Ray
        try:
            tuned_config(algo, args, None)
        except UsageError as err:
            parser.error(str(err))
    for algo in [a for a in args.algos if a in BASELINES]:
        module = NAMED[args.env].sweep_module(algo)
        if importlib.util.find_spec(module) is None:
            parser.error(f"--algos {algo}: the baseline has no sweep for --env {args.env} yet")
    return args


# --------------------------------------------------------------------------------------------
# Building and warming up one algorithm (shared with sweeps.profiling)
# --------------------------------------------------------------------------------------------


def tuned_config(algo: str, args: ThroughputSettings, runners: int | None) -> tuple[Any, Any]:
    """The sweep file's tuned defaults for ``algo`` on ``args.env`` with ``--set`` applied,
    evaluation off, and the sweep's parsed arguments; starts nothing."""
    from sweeps.harness.cli import flag_values

    workload = NAMED[args.env]
    module = importlib.import_module(workload.sweep_module(algo))
    sweep_argv = workload.sweep_flags(args)
    if runners is not None:
        sweep_argv += ["--num-env-runners", str(runners)]
    if args.num_envs_per_env_runner is not None:
        sweep_argv += ["--num-envs-per-env-runner", str(args.num_envs_per_env_runner)]
    sweep_args = flag_values(module.SWEEP, sweep_argv)
    config = module.make_config(sweep_args).evaluation(evaluation_interval=None)
    apply_settings(config, args.set)
    config.reporting(
        min_time_s_per_iteration=args.iteration_s, min_sample_timesteps_per_iteration=0
    )
    return config, sweep_args


def make_config(algo: str, args: ThroughputSettings, runners: int | None) -> Any:
    """:func:`tuned_config` placed on this cluster: the learner on the GPU when there is one."""
    import ray

    from sweeps.harness.placement import configure

    config, sweep_args = tuned_config(algo, args, runners)
    return configure(config, sweep_args, ray.cluster_resources())


def sampled(result: Mapping[str, Any]) -> float:
    return float(keys.get(result, keys.ENV_STEPS_SAMPLED) or 0)


def trained(result: Mapping[str, Any]) -> float:
    """Env steps the learner trained on, lifetime (replayed samples for DQN and Ape-X): one per
    sample per pass over it (``keys.trained_steps``)."""
    return keys.trained_steps(result)


def warm_up(algorithm: Any, max_warmup_s: float, min_iterations: int = 2) -> dict[str, Any]:
    """Train until the learner has trained (and at least ``min_iterations``), at most
    ``max_warmup_s``. Returns the last result, the seconds spent and whether learning started."""
    t0 = time.perf_counter()
    iterations = 0
    while True:
        result = algorithm.train()
        iterations += 1
        started = trained(result) > 0
        elapsed = time.perf_counter() - t0
        if (started and iterations >= min_iterations) or elapsed >= max_warmup_s:
            return {"result": result, "seconds": elapsed, "started": started}


def train_for(algorithm: Any, seconds: float) -> dict[str, Any]:
    """Train for ``seconds`` of wall-clock (whole iterations); the last result and the time."""
    t0 = time.perf_counter()
    results = []
    while time.perf_counter() - t0 < seconds:
        results.append(algorithm.train())
    return {"results": results, "seconds": time.perf_counter() - t0}


def window_rates(
    first: Mapping[str, Any], last: Mapping[str, Any], seconds: float
) -> dict[str, float]:
    """Sampled and trained env steps per second between two results."""
    return {
        "sampled_per_s": (sampled(last) - sampled(first)) / seconds,
        "trained_per_s": (trained(last) - trained(first)) / seconds,
    }


# --------------------------------------------------------------------------------------------
# The raw env rate (its loop: sweeps/harness/machine_speed.py, which every run also times)
# --------------------------------------------------------------------------------------------


def make_env(env: str, variant: str, num_envs: int | None = None) -> Any:
    """The env exactly as an env runner's factory builds it (its wrappers included): on Pong,
    the vector env of ``num_envs`` games (default: the V-trace recipe's 32) that a runner steps
    in one call."""
    from sweeps.harness.settings import Settings

    return NAMED[env].make_raw_env(Settings(variant=variant), num_envs)


def runner_efficiency(sampled_per_s: float, runners: int, raw_per_s: float) -> float | None:
    """Sampled env steps/s per sampling process over the raw single-process env rate
    (0 remote runners: the local runner samples, one process)."""
    if not raw_per_s or raw_per_s <= 0 or not math.isfinite(sampled_per_s):
        return None
    return sampled_per_s / max(runners, 1) / raw_per_s


# --------------------------------------------------------------------------------------------
# One measured row
# --------------------------------------------------------------------------------------------


def baseline_config(algo: str, args: ThroughputSettings) -> Any:
    """A baseline's config as its sweep file makes it (its recipe), evaluation off; starts
    nothing."""
    from sweeps.harness.cli import flag_values

    workload = NAMED[args.env]
    module = importlib.import_module(workload.sweep_module(algo))
    sweep_args = flag_values(module.SWEEP, workload.sweep_flags(args))
    config = module.SWEEP.make_config(sweep_args)
    config.settings["eval_interval"] = 0  # evaluation off, as the four's here
    return config.reporting(min_time_s_per_iteration=args.iteration_s)


def q_learning_extras(double_q: bool, dueling: bool, prioritized: bool, n_step: Any) -> str:
    """What a DQN adds to the plain one-step Q-learning of a network: the row's settings that a
    comparison at matched settings has to name."""
    parts = [name for on, name in ((double_q, "double Q"), (dueling, "dueling")) if on]
    if prioritized:
        parts.append("prioritized replay")
    if n_step not in (None, 1):
        parts.append(f"n-step {n_step}")
    return ", ".join(parts) or "none"


def rllib_extras(config: Any) -> str:
    if not hasattr(config, "double_q"):  # not a DQN
        return ""
    replay_config = config.replay_buffer_config or {}
    replay = replay_config.get("type", "")
    replay_name = replay if isinstance(replay, str) else getattr(replay, "__name__", str(replay))
    # a prioritized buffer at alpha 0 samples uniformly (RLlib's default alpha is 1)
    prioritized = "Prioritized" in replay_name and float(replay_config.get("alpha", 1.0)) > 0
    return q_learning_extras(config.double_q, config.dueling, prioritized, config.n_step)


def build(algo: str, args: ThroughputSettings, runners: int | None) -> tuple[Any, dict[str, Any]]:
    """The algorithm to train (RLlib's, or the baseline's trial, ``BaselineTrainable``: both
    have ``train()`` and ``stop()``) and what its row says of it: runners, envs per runner,
    the batch of one update, its DQN's extras."""
    if algo not in BASELINES:
        config = make_config(algo, args, runners)
        about = {
            "runners": config.num_env_runners,
            "envs": config.num_envs_per_env_runner,
            "update_batch": config.minibatch_size or config.total_train_batch_size,
            "extras": rllib_extras(config),
        }
        return config.build_algo(), about
    from sweeps.baselines.trainable import BaselineTrainable

    config = baseline_config(algo, args)
    config.validate()
    trainable = BaselineTrainable(config=config.to_dict())
    model = trainable.model
    extras = ""
    if hasattr(model, "exploration_rate"):  # SB3's DQN: one-step targets unless n_steps
        extras = q_learning_extras(False, False, False, getattr(model, "n_steps", 1))
    about = {
        "runners": 0,
        "envs": trainable.built.n_envs,
        "update_batch": int(model.batch_size),
        "extras": extras,
    }
    return trainable, about


def measure(
    algo: str, args: ThroughputSettings, runners: int | None, raw_per_s: float
) -> dict[str, Any]:
    import torch
    from ray.rllib.utils.metrics import NUM_TRAINING_STEP_CALLS_PER_ITERATION

    threads = torch.get_num_threads()  # a baseline's trial takes one; the next algorithm, not
    t0 = time.perf_counter()
    algorithm, about = build(algo, args, runners)
    build_s = time.perf_counter() - t0
    try:
        warm = warm_up(algorithm, args.max_warmup_s)
        window = train_for(algorithm, args.seconds)
    finally:
        algorithm.stop()
        torch.set_num_threads(threads)
    last = window["results"][-1]
    rates = window_rates(warm["result"], last, window["seconds"])
    calls = [r.get(NUM_TRAINING_STEP_CALLS_PER_ITERATION, math.nan) for r in window["results"]]
    return make_row(
        algo=algo,
        env=args.env,
        runners=about["runners"],
        envs_per_runner=about["envs"],
        build_s=build_s,
        warmup_s=warm["seconds"],
        started_in_warmup=warm["started"],
        seconds=window["seconds"],
        iterations=len(window["results"]),
        sampled_per_s=rates["sampled_per_s"],
        trained_per_s=rates["trained_per_s"],
        trained_lifetime=trained(last),
        raw_per_s=raw_per_s,
        step_calls_per_iter=float(sum(calls) / len(calls)),
        return_mean=keys.get(last, keys.RETURN_MEAN),
        update_batch=about["update_batch"],
        extras=about["extras"],
    )


def make_row(
    *,
    algo: str,
    env: str,
    runners: int,
    envs_per_runner: int,
    build_s: float,
    warmup_s: float,
    started_in_warmup: bool,
    seconds: float,
    iterations: int,
    sampled_per_s: float,
    trained_per_s: float,
    trained_lifetime: float,
    raw_per_s: float,
    step_calls_per_iter: float,
    return_mean: float | None,
    update_batch: int | None = None,
    extras: str = "",
) -> dict[str, Any]:
    """One table row; ``trained_per_s`` is None (with a note) when the learner never trained.
    Updates/s: trained samples/s over ``update_batch``, the samples of one SGD step."""
    note = ""
    if trained_lifetime <= 0:
        trained_per_s_out: float | None = None
        note = f"learning not started within {warmup_s + seconds:.0f} s"
    else:
        trained_per_s_out = trained_per_s
        if not started_in_warmup:
            note = "learning started during the measured window (trained/s understated)"
    if sampled_per_s <= 0:
        note = "; ".join(filter(None, [note, "no env steps sampled in the measured window"]))
    return {
        "algo": algo,
        "env": env,
        "num_env_runners": runners,
        "num_envs_per_env_runner": envs_per_runner,
        "build_s": round(build_s, 1),
        "warmup_s": round(warmup_s, 1),
        "seconds": round(seconds, 1),
        "iterations": iterations,
        "env_steps_sampled_per_s": round(sampled_per_s, 1),
        "env_steps_trained_per_s": None
        if trained_per_s_out is None
        else round(trained_per_s_out, 1),
        "replay_ratio": (
            None
            if trained_per_s_out is None or sampled_per_s <= 0
            else round(trained_per_s_out / sampled_per_s, 2)
        ),
        "sampled_per_s_per_runner": round(sampled_per_s / max(runners, 1), 1),
        "raw_env_steps_per_s": round(raw_per_s, 1),
        "runner_efficiency": runner_efficiency(sampled_per_s, runners, raw_per_s),
        "training_step_calls_per_iter": round(step_calls_per_iter, 1),
        "update_batch": update_batch,
        "updates_per_s": (
            None
            if trained_per_s_out is None or not update_batch
            else round(trained_per_s_out / update_batch, 1)
        ),
        "q_learning_extras": extras,
        "return_mean": return_mean,
        "note": note,
    }


def write(path: str, text: str) -> None:
    """Write a report (its folder created if needed; checked writable by ``parse_args``)."""
    Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(path).expanduser(), text)


def start_ray(runner_counts: Sequence[int]) -> None:
    """A local Ray with at least enough logical CPUs for the most runners plus the driver (on a
    smaller machine they share cores; the report says so)."""
    import ray

    from envs import register_envs

    ray.init(
        address="local",  # a fresh local instance, never a cluster someone started here
        num_cpus=max(os.cpu_count() or 1, max(runner_counts, default=0) + 1),
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
    )
    register_envs()


def command_line(prog: str, argv: Sequence[str] | None) -> str:
    return f"python -m {prog} " + " ".join(sys.argv[1:] if argv is None else argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import ray

    info = {**perf_report.machine(), "load_start": perf_report.load_average()}
    print(f"[throughput] raw {args.env} env rate: stepping it for {args.raw_env_s:g} s ...")
    env = make_env(args.env, args.variant, args.num_envs_per_env_runner)
    raw_per_s = raw_env_rate(env, args.raw_env_s)
    env.close()
    print(f"[throughput] raw env rate {raw_per_s:,.0f} steps/s")
    counts: list[int | None] = list(args.num_env_runners or [None])
    start_ray([n for n in counts if n is not None])
    rows = []
    try:
        for i, runners in enumerate(counts):
            for algo in args.algos:
                if algo in BASELINES and i > 0:  # one process: measured once
                    continue
                label = f"{algo}_{args.env}" + (
                    " (one process)"
                    if algo in BASELINES
                    else ""
                    if runners is None
                    else f" ({runners} runners)"
                )
                print(f"[throughput] {label}: building, warming up, measuring {args.seconds:g} s")
                row = measure(algo, args, runners, raw_per_s)
                rows.append(row)
                print("[throughput] " + json.dumps(row), flush=True)
    finally:
        ray.shutdown()
    info["load_end"] = perf_report.load_average()
    print("\n" + "\n".join(perf_report.throughput_table(rows)))
    if args.json:
        write(args.json, json.dumps({"machine": info, "rows": rows}, indent=2) + "\n")
    if args.markdown:
        text = perf_report.throughput_markdown(
            rows, info, command_line("sweeps.throughput", argv), args
        )
        write(args.markdown, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

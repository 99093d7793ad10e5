"""Throughput benchmark: env steps/s sampled (and trained) per algorithm while learning.

How to run
----------
    python -m sweeps.throughput                                  # all cab algorithms, 60 s each
    python -m sweeps.throughput --algos impala,appo --seconds 30 --num-envs-per-env-runner 64
    python -m sweeps.throughput --env pong --algos impala --seconds 60

Each algorithm is built from its sweep file's tuned defaults (the same config a sweep's trial
starts from, evaluation off), trained for ``--seconds`` of wall-clock after a warm-up iteration, and
measured from RLlib's own lifetime counters. Also printed: ``training_step`` calls per iteration
(RLlib's ``num_training_step_calls_per_iteration``), which exposes a busy-spinning driver.
This is a script, not a test: figures depend on the machine; quote them with the command.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Sequence

from ray.rllib.utils.metrics import NUM_TRAINING_STEP_CALLS_PER_ITERATION

from sweeps import keys


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", choices=["cabs", "pong"], default="cabs", help="workload")
    p.add_argument("--algos", default="dqn,apex,impala,appo", help="comma-separated algorithms")
    p.add_argument("--seconds", type=float, default=60.0, help="measured wall-clock per algorithm")
    p.add_argument("--num-env-runners", type=int, default=None, help="override the sweep default")
    p.add_argument(
        "--num-envs-per-env-runner", type=int, default=None, help="override the sweep default"
    )
    p.add_argument("--variant", choices=["base", "requests"], default="base", help="cab variant")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.add_argument(
        "--markdown", help="also write a generated Markdown report (command, machine, versions)"
    )
    return p.parse_args(argv)


def measure(algo: str, args: argparse.Namespace) -> dict:
    module = importlib.import_module(f"sweeps.{algo}_{args.env}")
    sweep_argv = []
    if args.env == "cabs":
        sweep_argv += ["--variant", args.variant]
    if args.num_env_runners is not None:
        sweep_argv += ["--num-env-runners", str(args.num_env_runners)]
    if args.num_envs_per_env_runner is not None:
        sweep_argv += ["--num-envs-per-env-runner", str(args.num_envs_per_env_runner)]
    from sweeps.cli import build_parser

    sweep_args = build_parser(module.SWEEP).parse_args(sweep_argv)
    if module.SWEEP.setup is not None:
        module.SWEEP.setup()
    config = module.make_config(sweep_args).evaluation(evaluation_interval=None)
    t0 = time.perf_counter()
    algorithm = config.build_algo()
    build_s = time.perf_counter() - t0
    try:
        algorithm.train()  # warm-up: first iteration includes compilation, buffer warm-up
        r0 = algorithm.train()
        s0 = keys.get(r0, keys.ENV_STEPS_SAMPLED) or 0
        n0 = keys.get(r0, keys.ENV_STEPS_TRAINED) or 0
        t_start = time.perf_counter()
        calls, iters, last = [], 0, r0
        while time.perf_counter() - t_start < args.seconds:
            last = algorithm.train()
            iters += 1
            calls.append(last.get(NUM_TRAINING_STEP_CALLS_PER_ITERATION, float("nan")))
        elapsed = time.perf_counter() - t_start
        sampled = (keys.get(last, keys.ENV_STEPS_SAMPLED) or 0) - s0
        trained = (keys.get(last, keys.ENV_STEPS_TRAINED) or 0) - n0
        return {
            "algo": algo,
            "env": args.env,
            "num_env_runners": config.num_env_runners,
            "num_envs_per_env_runner": config.num_envs_per_env_runner,
            "build_s": round(build_s, 1),
            "seconds": round(elapsed, 1),
            "iterations": iters,
            "env_steps_sampled_per_s": round(sampled / elapsed),
            "env_steps_trained_per_s": round(trained / elapsed),
            "training_step_calls_per_iter": round(sum(calls) / max(len(calls), 1), 1),
            "return_mean": keys.get(last, keys.RETURN_MEAN),
        }
    finally:
        algorithm.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import ray

    from envs import register_envs

    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    register_envs()
    rows = []
    for algo in [a.strip() for a in args.algos.split(",") if a.strip()]:
        print(f"[throughput] {algo}_{args.env}: building and measuring {args.seconds:g} s ...")
        row = measure(algo, args)
        rows.append(row)
        print("[throughput] " + json.dumps(row))
    ray.shutdown()
    header = ("algo", "runners", "envs/runner", "sampled/s", "trained/s", "step calls/iter")
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print(
            f"| {r['algo']} | {r['num_env_runners']} | {r['num_envs_per_env_runner']} | "
            f"{r['env_steps_sampled_per_s']} | {r['env_steps_trained_per_s']} | "
            f"{r['training_step_calls_per_iter']} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    if args.markdown:
        write_markdown(args.markdown, rows, argv)
    return 0


def write_markdown(path: str, rows: list[dict], argv: Sequence[str] | None) -> None:
    """A generated throughput report: the table plus how and where it was measured."""
    import datetime as dt
    import os

    from sweeps.record import git_commit, versions

    cmd = "python -m sweeps.throughput " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [
        "<!-- Generated by `python -m sweeps.throughput --markdown`. Do not edit by hand. -->",
        "",
        f"# Throughput while learning: {rows[0]['env'] if rows else ''}",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {os.cpu_count()} CPUs, no GPU; load average at the end "
        f"{os.getloadavg()[0]:.2f}  ",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions().items())) + "  ",
        f"Git commit: `{(git_commit() or 'unknown')[:12]}`  ",
        f"Generated on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        "Each algorithm is built from its sweep file's tuned defaults (evaluation off), warmed up "
        "for two iterations, then trained for the stated seconds; rates come from RLlib's "
        "lifetime counters.",
        "",
        "| algorithm | env runners | envs/runner | env steps sampled/s | env steps trained/s "
        "| training_step calls/iter | build s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['algo']} | {r['num_env_runners']} | {r['num_envs_per_env_runner']} | "
            f"{r['env_steps_sampled_per_s']:,} | {r['env_steps_trained_per_s']:,} | "
            f"{r['training_step_calls_per_iter']} | {r['build_s']} |"
        )
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())

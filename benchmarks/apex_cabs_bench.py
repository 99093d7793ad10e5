"""Ape-X DQN on the cab env: time to a greedy return of 2,500, and sampling throughput.

How to run (2 cores; each run starts its own small Ray instance)
----------------------------------------------------------------
    python benchmarks/apex_cabs_bench.py                     # Ape-X, time-to-2,500, 3 seeds
    python benchmarks/apex_cabs_bench.py --algo dqn          # RLlib DQN baseline, same harness
    python benchmarks/apex_cabs_bench.py --throughput        # env steps/s learning, 1 and 2 runners
    python benchmarks/apex_cabs_bench.py --env CabsRequests-v0 --target 2686.1   # 97% of optimum
    python benchmarks/apex_cabs_bench.py --set lr=3e-3 gamma=0.95 sgd_steps_per_learner_call=1
    python benchmarks/apex_cabs_bench.py --held-out 100 --max-env-steps 40000 --max-train-s 300
        # the sweep's end-of-run figure (% of optimum, 100 fixed episodes) every 10k env steps

Both algorithms start from their sweep file's tuned defaults (``sweeps/apex_cabs.py``,
``sweeps/dqn_cabs.py``: the config every sweep and benchmark trial starts from); ``--set``
overrides any config attribute, so a candidate default is tried here before it goes there.

Time-to-target: training wall-clock (sum of ``algo.train()`` durations; Ray start-up, build and
evaluation excluded) until the mean return of 5 greedy episodes (a fresh batch of start states
per evaluation, the learner's current network, argmax over available actions) reaches the
target. Evaluation runs after every training iteration (``--iter-s`` long), in the driver, in a
few milliseconds; the asynchronous runners keep sampling meanwhile, which is bounded by their
in-flight requests (at most 2 fragments each).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def greedy_return(module: Any, env_id: str, episodes: int, seed: int) -> float:
    """Mean return of ``episodes`` greedy episodes, stepped in lockstep (batched forward)."""
    import torch
    from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
    from ray.rllib.core.columns import Columns

    from envs import CABS_REQUESTS
    from envs.cabs import CabsEnv

    envs = [CabsEnv(requests=env_id == CABS_REQUESTS) for _ in range(episodes)]
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    returns = np.zeros(episodes)
    alive = np.ones(episodes, dtype=bool)
    with torch.no_grad():
        while alive.any():
            q = module.compute_q_values({Columns.OBS: torch.from_numpy(obs)})[QF_PREDS]
            actions = torch.argmax(q, dim=-1).numpy()
            for i, env in enumerate(envs):
                if not alive[i]:
                    continue
                o, r, terminated, truncated, _ = env.step(int(actions[i]))
                returns[i] += r
                obs[i] = o
                alive[i] = not (terminated or truncated)
    return float(returns.mean())


def build(args: argparse.Namespace, seed: int, num_runners: int) -> Any:
    """The sweep file's tuned defaults (``sweeps/<algo>_cabs.py``: the config a benchmark or
    sweep trial starts from), evaluation off (greedy evaluation happens here), ``--set``
    overrides on top."""
    import importlib

    import torch

    from envs import CABS_REQUESTS
    from sweeps.harness.cli import apply_settings, flag_values
    from sweeps.harness.errors import UsageError

    module = importlib.import_module(f"sweeps.{args.algo}_cabs")
    variant = "requests" if args.env == CABS_REQUESTS else "base"
    argv = ["--variant", variant, "--num-env-runners", str(num_runners), "--seed", str(seed)]
    if args.envs_per_runner is not None:
        argv += ["--num-envs-per-env-runner", str(args.envs_per_runner)]
    config = module.make_config(flag_values(module.SWEEP, argv))
    config.evaluation(evaluation_interval=None)
    config.reporting(min_time_s_per_iteration=args.iter_s, min_sample_timesteps_per_iteration=0)
    config.debugging(log_level="ERROR")
    try:
        apply_settings(config, args.set)
    except UsageError as e:
        raise SystemExit(str(e)) from None
    # One torch thread for a learner in the driver, as a Tune trial gets (num_cpus=1).
    torch.set_num_threads(1)
    return config.build_algo()


def learner_module(algo: Any) -> Any:
    from ray.rllib.core import DEFAULT_MODULE_ID

    from sweeps.seams.learner import local_learner

    return local_learner(algo.learner_group).module[DEFAULT_MODULE_ID]


def time_to_target(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    from sweeps.algorithms.apex import APEX_RESULTS

    algo = build(args, seed, args.runners)
    train_s, eval_s, best, it = 0.0, 0.0, -np.inf, 0
    reached = None
    last: dict[str, Any] = {}
    held_out: list[dict[str, Any]] = []
    next_held_out = args.held_out_every
    try:
        while train_s < args.max_train_s:
            t0 = time.perf_counter()
            result = algo.train()
            train_s += time.perf_counter() - t0
            it += 1
            t1 = time.perf_counter()
            ret = greedy_return(
                learner_module(algo), args.env, args.eval_episodes, 10_000 * seed + 5 * it
            )
            eval_s += time.perf_counter() - t1
            best = max(best, ret)
            apex = result.get(APEX_RESULTS, {})
            sampled = apex.get("env_steps_sampled_lifetime") or result["env_runners"].get(
                "num_env_steps_sampled_lifetime", 0
            )
            last = {
                "iter": it,
                "train_s": round(train_s, 2),
                "greedy": round(ret, 1),
                "sampled": int(sampled),
                "trained": int(apex.get("env_steps_trained_lifetime", 0)),
                "calls": int(result.get("num_training_step_calls_per_iteration") or 0),
            }
            steps_done = args.max_env_steps is not None and last["sampled"] >= args.max_env_steps
            if args.held_out and (steps_done or last["sampled"] >= next_held_out):
                next_held_out += args.held_out_every
                held_out.append(_held_out(algo, args, last))
            if args.verbose:
                print("   ", json.dumps(last, default=float), flush=True)
            if ret >= args.target and not args.held_out:
                reached = train_s
                break
            if steps_done:
                break
    finally:
        algo.stop()
    return {
        "seed": seed,
        "time_to_target_s": None if reached is None else round(reached, 2),
        "env_steps": last.get("sampled"),
        "best_greedy": round(best, 1),
        "eval_s": round(eval_s, 2),
        "iterations": it,
        **({"held_out_pct": [h["pct"] for h in held_out]} if args.held_out else {}),
        **({"held_out_at": [h["sampled"] for h in held_out]} if args.held_out else {}),
    }


def _held_out(algo: Any, args: argparse.Namespace, last: dict[str, Any]) -> dict[str, Any]:
    """The sweep's end-of-run figure (``sweeps.harness.held_out_eval``) of the learner's current
    network: % of the optimum over ``--held-out`` fixed episodes, the optimal policy on the same
    ones."""
    from sweeps.harness.files import HELD_OUT_SEED
    from sweeps.harness.held_out_eval import evaluate_module

    record = evaluate_module(learner_module(algo), args.env, {}, args.held_out, HELD_OUT_SEED)
    last["held_out_pct"] = round(record["pct_of_optimum"], 2)
    return {"sampled": last["sampled"], "pct": last["held_out_pct"]}


def throughput(args: argparse.Namespace, num_runners: int) -> dict[str, Any]:
    from sweeps.algorithms.apex import APEX_RESULTS

    args = argparse.Namespace(**{**vars(args), "envs_per_runner": args.throughput_envs})
    algo = build(args, args.seeds[0], num_runners)
    try:
        # Warm up past the learning start, then measure over whole iterations.
        while algo.train()[APEX_RESULTS]["env_steps_trained_lifetime"] == 0:
            pass
        t0 = time.perf_counter()
        start = algo.train()[APEX_RESULTS]
        s0, n0 = start["env_steps_sampled_lifetime"], start["env_steps_trained_lifetime"]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.throughput_s:
            result = algo.train()
        dt = time.perf_counter() - t0
        apex = result[APEX_RESULTS]
        return {
            "runners": num_runners,
            "envs_per_runner": args.envs_per_runner,
            "sampled_per_s": round((apex["env_steps_sampled_lifetime"] - s0) / dt),
            "trained_per_s": round((apex["env_steps_trained_lifetime"] - n0) / dt),
            "learner_updates_per_s": round(apex["learner_updates_per_s"], 1),
            "training_step_calls_per_iter": result.get("num_training_step_calls_per_iteration"),
            "driver_idle_s_lifetime": round(apex["driver_idle_s_lifetime"], 2),
            "runner_sample_s_mean": round(apex["runner_sample_s_mean"], 4),
        }
    finally:
        algo.stop()


def main(argv: list[str] | None = None) -> None:
    from sweeps.harness.cli import setting

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--algo", choices=("apex", "dqn"), default="apex")
    parser.add_argument("--env", default="Cabs-v0")
    parser.add_argument("--target", type=float, default=2500.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-train-s", type=float, default=60.0)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument(
        "--envs-per-runner", type=int, default=None, help="default: the sweep file's"
    )
    parser.add_argument("--iter-s", type=float, default=0.25, help="min_time_s_per_iteration")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        type=setting,
        help="override a tuned default (an AlgorithmConfig attribute), e.g. lr=3e-3 gamma=0.95",
    )
    parser.add_argument(
        "--held-out",
        type=int,
        default=0,
        help="episodes of the held-out evaluation (sweeps.evaluate: %% of optimum on fixed "
        "episodes) every --held-out-every env steps; 0: off. With it, a run goes on past the "
        "target, to --max-env-steps or --max-train-s",
    )
    parser.add_argument("--held-out-every", type=int, default=10_000, help="env steps")
    parser.add_argument("--max-env-steps", type=int, default=None, help="stop a run here")
    parser.add_argument("--throughput", action="store_true", help="measure env steps/s instead")
    parser.add_argument("--throughput-s", type=float, default=10.0)
    parser.add_argument(
        "--throughput-envs", type=int, default=32, help="envs per runner (32-step fragments)"
    )
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray

    from envs import register_envs

    register_envs()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        if args.throughput:
            rows = [throughput(args, n) for n in (1, 2)]
            for row in rows:
                print(json.dumps(row, default=float), flush=True)
            print(
                f"scaling 1->2 runners: x{rows[1]['sampled_per_s'] / rows[0]['sampled_per_s']:.2f}"
            )
            return
        rows = []
        for seed in args.seeds:
            row = time_to_target(args, seed)
            rows.append(row)
            print(json.dumps(row, default=float), flush=True)
        times = [r["time_to_target_s"] for r in rows]
        done = [t for t in times if t is not None]
        summary = {
            "algo": args.algo,
            "env": args.env,
            "target": args.target,
            "reached": f"{len(done)}/{len(times)}",
            "median_time_to_target_s": statistics.median(done) if done else None,
            "max_time_to_target_s": max(done) if done else None,
            "median_env_steps": statistics.median([r["env_steps"] for r in rows]),
        }
        print("SUMMARY", json.dumps(summary, default=float), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()

"""Where the time goes: each algorithm's env runner and driver/learner time, from RLlib's timers.

How to run
----------
    python -m sweeps.profiling --env cabs --seconds 20 --markdown results/cabs/PROFILE.md
    python -m sweeps.profiling --env pong --seconds 20 --max-warmup-s 300 \\
        --markdown results/pong/PROFILE.md
    python -m sweeps.profiling --env pong --algos apex --seconds 20 --py-spy   # + sampled stacks

(``--py-spy`` needs the profile extra: ``pip install -e ".[profile]"``.)

Each algorithm is built and warmed up exactly as ``sweeps.throughput`` does (tuned defaults of
its sweep file, until its learner has trained). Then its timers are restarted as running means
(RLlib's are exponential moving averages over calls, which would still carry the build and
warm-up) and it trains for ``--seconds``. The window's timers give the mean time of one call of
each stage; its counters give how often each stage runs; their product is the stage's share of
wall-clock:

* env runner: env step, env-to-module connector, RLModule inference, module-to-env connector
  (once per vector step each), the rest of ``sample()`` (episode bookkeeping), and the time
  outside ``sample()`` (waiting for the next request: transport, weight sync; Ape-X's
  initial priorities and replay add);
* driver and learner: RLlib's ``timers`` (training_step and what it calls), the learner's
  connector and update, and for Ape-X ``result["apex"]``: driver idle, replay shard busy time
  per operation, learner updates, weight syncs.

Shares are approximate (timers are averaged over runners, rates come from counters); a stage whose
call rate the results do not give is listed with its per-call time only. ``--py-spy`` also
samples the driver and the first env runner with py-spy for the window and lists their top
functions by CPU samples. A script, not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweeps import throughput
from sweeps.harness import keys
from sweeps.perf import perf_report, timer_shares


def build_parser() -> argparse.ArgumentParser:
    p = throughput.build_parser(prog="python -m sweeps.profiling", doc=__doc__, baselines=False)
    p.set_defaults(seconds=20.0)
    p.add_argument(
        "--py-spy",
        action="store_true",
        help="also sample the driver and the first env runner with py-spy during the window",
    )
    return p


def parse_args(argv: Sequence[str] | None) -> throughput.ThroughputSettings:
    parser = build_parser()
    args = throughput.parse_args(argv, parser)
    if args.py_spy and py_spy_path() is None:
        parser.error('--py-spy: py-spy not found (pip install -e ".[profile]")')
    return args


def py_spy_path() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


# --------------------------------------------------------------------------------------------
# py-spy
# --------------------------------------------------------------------------------------------


def start_py_spy(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    cmd = [py_spy_path() or "py-spy", "record", "--pid", str(pid), "--duration",
           str(max(int(seconds), 1)), "--rate", "50", "--format", "raw", "--nonblocking",
           "--output", str(out)]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def top_functions(raw: str, limit: int = 10) -> tuple[list[tuple[str, float]], int]:
    """Leaf functions of py-spy's raw (collapsed) stacks by share of CPU samples, and the
    number of samples."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        leaf = stack.split(";")[-1]
        func, _, where = leaf.partition(" (")
        file = where.split(":")[0].split("site-packages/")[-1]
        counts[f"{func} ({file})"] += int(n)
    total = sum(counts.values())
    return [(name, n / total) for name, n in counts.most_common(limit)], total


# --------------------------------------------------------------------------------------------
# One algorithm
# --------------------------------------------------------------------------------------------


def profile_one(
    algo: str, args: throughput.ThroughputSettings, runners: int | None, raw_per_s: float
) -> dict[str, Any]:
    config = throughput.make_config(algo, args, runners)
    t0 = time.perf_counter()
    algorithm = config.build_algo()
    build_s = time.perf_counter() - t0
    spies: dict[str, tuple[subprocess.Popen, Path]] = {}
    try:
        warm = throughput.warm_up(algorithm, args.max_warmup_s)
        first = warm["result"]
        timer_shares.restart_timers(algorithm)
        if args.py_spy:
            tmp = Path(tempfile.mkdtemp(prefix="profile-"))
            pids = {"driver": os.getpid()}
            if config.num_env_runners:
                pids["env runner 1"] = algorithm.env_runner_group.foreach_env_runner(
                    lambda _: os.getpid(), local_env_runner=False
                )[0]
            for name, pid in pids.items():
                out = tmp / f"{name.replace(' ', '_')}.txt"
                spies[name] = (start_py_spy(pid, args.seconds, out), out)
        window = throughput.train_for(algorithm, args.seconds)
    finally:
        algorithm.stop()
    spy_tops = {}
    for name, (proc, out) in spies.items():
        _, err = proc.communicate()
        spy_tops[name] = (
            top_functions(out.read_text())
            if out.exists()
            else (
                [(f"py-spy failed: {(err.strip().splitlines() or ['no output'])[-1]}", math.nan)],
                0,
            )
        )
    results, seconds = window["results"], window["seconds"]
    last = results[-1]
    shares = timer_shares.breakdown(algo, config, first, results, seconds)
    window_rate = throughput.window_rates(first, last, seconds)
    n_runners = int(config.num_env_runners)
    envs = int(config.num_envs_per_env_runner)
    rate = shares["rates"]
    row = throughput.make_row(
        algo=algo,
        env=args.env,
        runners=n_runners,
        envs_per_runner=envs,
        build_s=build_s,
        warmup_s=warm["seconds"],
        started_in_warmup=warm["started"],
        seconds=seconds,
        iterations=len(results),
        sampled_per_s=window_rate["sampled_per_s"],
        trained_per_s=window_rate["trained_per_s"],
        trained_lifetime=throughput.trained(last),
        raw_per_s=raw_per_s,
        step_calls_per_iter=rate["training_step"] / rate["iteration"],
        return_mean=keys.get(last, keys.RETURN_MEAN),
    )
    return {**shares, "row": row, "py_spy": spy_tops}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import ray

    info = {**perf_report.machine(), "load_start": perf_report.load_average()}
    print(f"[profile] raw {args.env} env rate: stepping it for {args.raw_env_s:g} s ...")
    env = throughput.make_env(args.env, args.variant, args.num_envs_per_env_runner)
    raw_per_s = throughput.raw_env_rate(env, args.raw_env_s)
    env.close()
    print(f"[profile] raw env rate {raw_per_s:,.0f} steps/s")
    counts: list[int | None] = list(args.num_env_runners or [None])
    throughput.start_ray([n for n in counts if n is not None])
    profiles = []
    try:
        for runners in counts:
            for algo in args.algos:
                print(
                    f"[profile] {algo}_{args.env}: warming up, then {args.seconds:g} s", flush=True
                )
                p = profile_one(algo, args, runners, raw_per_s)
                profiles.append(p)
                print(f"[profile] {algo}: runner {perf_report.top_stages(p['runner'])}; "
                      f"driver {perf_report.top_stages(p['driver'])}", flush=True)  # fmt: skip
    finally:
        ray.shutdown()
    info["load_end"] = perf_report.load_average()
    command = throughput.command_line("sweeps.profiling", argv)
    text = perf_report.profile_markdown(profiles, info, command, args)
    print(text)
    if args.json:
        throughput.write(
            args.json, json.dumps({"machine": info, "profiles": profiles}, indent=2, default=str)
        )
    if args.markdown:
        throughput.write(args.markdown, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

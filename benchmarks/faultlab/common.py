"""What the fault harness shares: the sweep it drives, its targets and budgets, the counters
it reads."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


SIGNALS = ("SIGKILL", "SIGINT", "SIGTERM")
RUNNER_TITLE = "ray::SingleAgentEnvRunner"
SHARD_TITLE = "ray::ApexReplayShard"
TARGET = 2500.0  # the cab env's greedy target (envs.optimum.targets: its greedy policy's return)
MAIN_JOB_ARGS = "--num-samples 3 --stop-timesteps 10000"  # the main job at a reduced budget
# Env steps of a one-trial run with process kills: past the fault-free steps to a greedy 2,500
# (results/cabs/REPORT.md), with room for the kills (Ape-X at 30k ended before its third restart).
RUNNER_BUDGET = {"dqn": 40_000, "apex": 60_000, "impala": 400_000, "appo": 300_000}
# No process kill once the trial has sampled this share of its budget: RLlib brings a dead env
# runner back at the start of the next iteration, and a trial's last iteration has none.
KILL_BEFORE_SHARE = 0.8
SUMMARY = "summary.json"
# What counts a process kill in the results (summed over a trial's restores by check_sweep).
COUNTED = {"runners": "env_runner_restarts", "shard": "replay_shard_restarts"}
COUNTER_KEY = {
    "runners": ("fault_tolerance", "num_remote_worker_restarts"),  # RLlib's, per algorithm
    "shard": ("apex", "replay_shard_restarts"),
}
ENV_STEPS = ("suite", "env_steps")  # sweeps.harness.keys.ENV_STEPS: env steps sampled, lifetime

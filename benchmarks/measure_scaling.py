"""Measure the two rates behind ``docs/scaling.md``: one env runner's sampling rate and one
learner's update rate, each alone on one core, for the DQN and IMPALA cab sweeps' tuned defaults.

    python benchmarks/measure_scaling.py                      # ~2 minutes; prints a table and JSON
    python benchmarks/measure_scaling.py --seconds 30 --json /tmp/scaling.json
    python benchmarks/measure_scaling.py --num-gpus-per-learner 1   # learner on a CUDA GPU, if any

* **raw env**: ``envs.bench.raw_env_rate``: the cab env stepped with random actions, no RLlib
  (the ceiling).
* **env runner**: RLlib's ``SingleAgentEnvRunner`` built from the sweep's config (its RLModule,
  connectors, ``num_envs_per_env_runner`` vectorised envs, exploration on), calling
  ``sample(num_timesteps=rollout_fragment_length * num_envs)`` in a loop: env steps sampled/s.
  This is what one remote env runner does per CPU, minus Ray's transport.
* **DQN learner**: the sweep's learner class built by ``config.build_learner``, fed the way
  DQN's ``training_step`` feeds it — ``PrioritizedEpisodeReplayBuffer.sample(train_batch_size,
  n_step, gamma, beta)`` then ``Learner.update(episodes=...)`` — on a buffer filled by the env
  runner: env steps trained/s = train_batch_size x updates/s (replay sampling included).
* **IMPALA learner**: the same learner class, but its synchronous ``Learner.update`` (learner
  connector with V-trace inputs, forward, loss, backward, optimiser) on
  ``train_batch_size_per_learner`` env steps of fresh episodes; IMPALA's own update only queues
  the batch for a learner thread that runs exactly this. env steps trained/s.

torch runs with one thread (a 1-CPU placement bundle). Ray is not started.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from typing import Any

import numpy as np


class Clock:
    """Wall-clock and this process's CPU time since start. The machine is shared: rates are per
    CPU-second of this (single-threaded) process, which contention does not dilute; the wall-clock
    rate is kept for reference."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def cpu_s(self) -> float:
        return time.process_time() - self.cpu

    def wall_s(self) -> float:
        return time.perf_counter() - self.wall


def sweep_config(name: str, argv: list[str]) -> Any:
    from sweeps.harness.cli import flag_values

    module = importlib.import_module(f"sweeps.{name}")
    return module.make_config(flag_values(module.SWEEP, argv)).evaluation(evaluation_interval=None)


def env_runner_rate(config: Any, seconds: float) -> tuple[tuple[float, float], Any]:
    """(env steps per CPU-second, per wall-second) of one env runner alone, and the runner."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    runner = SingleAgentEnvRunner(config=config)
    per_call = config.get_rollout_fragment_length() * config.num_envs_per_env_runner
    runner.sample(num_timesteps=per_call)  # warm-up
    steps, clock = 0, Clock()
    while clock.cpu_s() < seconds:
        steps += sum(len(e) for e in runner.sample(num_timesteps=per_call))
    return (steps / clock.cpu_s(), steps / clock.wall_s()), runner


def _episodes(runner: Any, steps: int) -> list[Any]:
    episodes: list[Any] = []
    while sum(len(e) for e in episodes) < steps:
        episodes += runner.sample(num_timesteps=steps)
    return episodes


def dqn_learner_rate(config: Any, runner: Any, seconds: float) -> tuple[float, float]:
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
    from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
        PrioritizedEpisodeReplayBuffer,
    )

    rb = config.replay_buffer_config
    buffer = PrioritizedEpisodeReplayBuffer(capacity=rb["capacity"], alpha=rb["alpha"])
    buffer.add(_episodes(runner, 5000))
    learner = config.build_learner(env=runner.env.unwrapped)
    batch = config.total_train_batch_size

    def update() -> None:
        episodes = buffer.sample(
            num_items=batch,
            n_step=config.n_step,
            gamma=config.gamma,
            beta=rb["beta"],
            sample_episodes=True,
        )
        learner.update(episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 5000})

    update()  # warm-up
    updates, clock = 0, Clock()
    while clock.cpu_s() < seconds:
        update()
        updates += 1
    return updates * batch / clock.cpu_s(), updates * batch / clock.wall_s()


def impala_learner_rate(config: Any, runner: Any, seconds: float) -> tuple[float, float]:
    from ray.rllib.core.learner.learner import Learner
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    learner = config.build_learner(env=runner.env.unwrapped)
    batch = config.train_batch_size_per_learner
    pool = _episodes(runner, 4 * batch)

    def update(i: int) -> int:
        chosen, steps = [], 0
        for e in pool[i % len(pool) :] + pool:
            chosen.append(e)
            steps += len(e)
            if steps >= batch:
                break
        Learner.update(learner, episodes=chosen, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 10**6})
        return steps

    update(0)  # warm-up
    trained, i, clock = 0, 1, Clock()
    while clock.cpu_s() < seconds:
        trained += update(i)
        i += 1
    return trained / clock.cpu_s(), trained / clock.wall_s()


def raw_env_rate(seconds: float) -> tuple[float, float]:
    """The cab env alone (``envs.bench.raw_env_rate``, the suite's one loop: random actions,
    reset at episode ends) for ``seconds`` of wall-clock: (per CPU-second of this process, per
    wall-second)."""
    from envs.bench import raw_env_rate as steps_per_wall_s
    from envs.cabs import CabsEnv

    clock = Clock()
    per_wall_s = steps_per_wall_s(CabsEnv(), seconds)
    return per_wall_s * clock.wall_s() / clock.cpu_s(), per_wall_s


def _pair(rates: tuple[float, float]) -> dict[str, int]:
    return {"per_cpu_s": round(rates[0]), "per_wall_s": round(rates[1])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds per figure")
    p.add_argument("--num-gpus-per-learner", default="0", help="1: learner on a CUDA GPU")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    import ray

    from envs import register_envs

    register_envs()
    gpu = ["--num-gpus-per-learner", args.num_gpus_per_learner]
    rows: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "versions": {"ray": ray.__version__, "torch": torch.__version__, "numpy": np.__version__},
        "seconds": args.seconds,
        "learner_device": "cuda" if float(args.num_gpus_per_learner) > 0 else "cpu",
    }

    rows["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    rows["raw_env_steps_per_s"] = _pair(raw_env_rate(args.seconds))
    dqn = sweep_config("dqn_cabs", gpu)
    rate, runner = env_runner_rate(dqn, args.seconds)
    rows["dqn_env_runner_steps_per_s"] = _pair(rate)
    rows["dqn_envs_per_runner"] = dqn.num_envs_per_env_runner
    rows["dqn_learner_trained_steps_per_s"] = _pair(dqn_learner_rate(dqn, runner, args.seconds))
    rows["dqn_train_batch_size"] = dqn.total_train_batch_size
    rows["dqn_training_intensity"] = dqn.training_intensity
    runner.stop()

    for envs in (64, 1):
        impala = sweep_config("impala_cabs", [*gpu, "--num-envs-per-env-runner", str(envs)])
        rate, runner = env_runner_rate(impala, args.seconds)
        rows[f"impala_env_runner_steps_per_s_{envs}_envs"] = _pair(rate)
        if envs == 64:
            rows["impala_learner_trained_steps_per_s"] = _pair(
                impala_learner_rate(impala, runner, args.seconds)
            )
            rows["impala_train_batch_size"] = impala.train_batch_size_per_learner
        runner.stop()

    rows["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    for key, value in rows.items():
        print(f"{key}: {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

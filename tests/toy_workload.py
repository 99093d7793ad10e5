"""A workload of a test's own, in this one file: the machinery asks it, with no edit elsewhere.

The env says on which side a ball is (+1 or -1); the agent is paid 1 for pointing at it, over 10
steps (greedy optimum 10, a random policy 5). The workload (``TOY``) holds its env, its target
and its config fragment; the sweep (``SWEEP``) runs DQN on it. It sweeps as

    python -m tests.toy_workload --smoke

and benchmarks as

    python -m sweeps.benchmark --env tests.toy_workload:TOY --algos dqn
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sweeps.harness import runner
from sweeps.harness.settings import Settings
from sweeps.workloads.base import EnvFlags, Workload

ENV = "tests.toy_workload:PointAtTheBall"  # an entry point: Ray's env runners import it


class PointAtTheBall(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.steps = 0
        return self._ball(), {}

    def _ball(self) -> np.ndarray:
        self.side = int(self.np_random.integers(2))
        return np.array([1.0 if self.side else -1.0], np.float32)

    def step(self, action: int):
        reward = float(int(action) == self.side)
        self.steps += 1
        return self._ball(), reward, False, self.steps >= 10, {}


class Toy(Workload):
    name = "toy"

    def sweep_module(self, algo: str) -> str:
        return __name__

    def env_names(self, args: Settings) -> tuple[str, ...]:
        return (ENV,)

    def configure(self, config: Any, args: Settings, **options: Any) -> Any:
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        from sweeps.workloads.rllib_config import common

        config = common(config, args).environment(ENV)
        return config.rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16]))

    def targets(self, args: EnvFlags) -> list[float]:
        return [9.0]

    def add_benchmark_arguments(self, args: EnvFlags, algos: list[str]) -> None:
        super().add_benchmark_arguments(args, algos)
        if algos != ["dqn"]:
            raise ValueError("--algos: the toy workload has a DQN sweep only")


TOY = Toy()


def make_config(args: Settings) -> Any:
    from ray.rllib.algorithms.dqn import DQNConfig

    config = DQNConfig().training(
        lr=3e-3, train_batch_size=32, num_steps_sampled_before_learning_starts=100
    )
    config.reporting(min_time_s_per_iteration=1, min_sample_timesteps_per_iteration=0)
    return TOY.configure(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    return {"lr": trial.suggest_float("hp/lr", 1e-4, 1e-2, log=True)}


SWEEP = runner.Sweep(
    name="dqn_toy",
    algo="dqn",
    workload=TOY,
    make_config=make_config,
    sample_params=sample_params,
    description="DQN on a toy workload defined in one test file",
    defaults={"num_samples": 2, "stop_timesteps": 3000, "eval_episodes": 10},
    smoke={"num_samples": 1, "stop_timesteps": 300, "eval_episodes": 2},
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

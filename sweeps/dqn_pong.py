"""DQN (double, dueling, n-step, prioritized replay) on Atari Pong: the single-learner baseline.

How to run
----------
    python sweeps/dqn_pong.py --smoke          # same code path, a few hundred frames
    python sweeps/dqn_pong.py --num-samples 4  # on a GPU box: learner on the GPU

Defaults follow the Rainbow-style Atari settings (lr 1e-4, 1M... scaled down to a 100k replay,
target update 8k steps, epsilon annealed over 250k steps). ASHA runs over env steps sampled: grace
period 500k steps, reduction factor 3, max 3M steps.

Frames are the suite's Pong frames (``envs/pong.py``: 42x42, stacked 4 in ale-py's C++ vector
env, 8 games per runner) and the model is the suite's 42x42 Atari net
(``sweeps/workloads/rllib_config.PONG_MODEL``); the settings above are not yet re-tuned for them.

Results to expect
-----------------
``results/pong/THROUGHPUT.md`` and ``results/pong/PROFILE.md``: env steps/s and where the time goes
on 2 CPU cores (the learner trains several replayed steps per sampled one, so sampling is slow);
``results/pong/REPORT.md``: the Pong runs of record, where DQN has not yet been run to a target.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.dqn import DQNConfig

from sweeps import dqn_family
from sweeps.harness import runner
from sweeps.workloads.pong import PONG

# Rainbow-style Atari settings with Rainbow's extensions (sweeps/dqn_family.py), replay scaled down.
TUNED: dict[str, Any] = {
    **dqn_family.EXTENSIONS,
    "lr": 1e-4,
    "gamma": 0.99,
    "train_batch_size": 32,
    "target_network_update_freq": 8000,
    "num_steps_sampled_before_learning_starts": 20_000,
    "training_intensity": 8.0,
    "epsilon": [(0, 1.0), (250_000, 0.01)],
    "replay_buffer_config": {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 100_000,
        "alpha": 0.5,
        "beta": 0.4,
    },
}


def make_config(args: argparse.Namespace) -> DQNConfig:
    config = DQNConfig().training(**TUNED)
    config.env_runners(rollout_fragment_length=4)
    return PONG.configure(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    return {
        "lr": trial.suggest_float("hp/lr", 3e-5, 5e-4, log=True),
        "n_step": trial.suggest_categorical("hp/n_step", [1, 3]),
        "target_network_update_freq": 1000 * trial.suggest_categorical("hp/target_k", [2, 4, 8]),
        "train_batch_size": 2 ** trial.suggest_int("hp/log2_train_batch", 5, 7),
        "epsilon": [(0, 1.0), (trial.suggest_categorical("hp/eps_steps", [1e5, 2.5e5]), 0.01)],
        "replay_buffer_config/capacity": 50_000 * trial.suggest_int("hp/capacity_50k", 1, 4),
    }


SWEEP = runner.Sweep(
    name="dqn_pong",
    algo="dqn",
    workload=PONG,
    make_config=make_config,
    sample_params=sample_params,
    description=__doc__.split("\n")[0],
    defaults={**dqn_family.PONG_DEFAULTS, "stop_timesteps": 3_000_000},
    smoke=dqn_family.PONG_SMOKE,
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

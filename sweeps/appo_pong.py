"""APPO on Atari Pong, centred on RLlib 2.60's tuned ``pong_appo.py``.

How to run
----------
    python sweeps/appo_pong.py --smoke                 # same code path, a few hundred frames
    python sweeps/appo_pong.py --num-env-runners 30    # on a GPU box: learner on the GPU

Defaults are sized for a GPU machine; on a 2-core CPU machine only smoke runs and throughput
measurements make sense. ASHA runs over env steps sampled: grace period 1M steps, reduction
factor 3, max 10M steps.

Results to expect
-----------------
RLlib's tuned settings reach 18+ within ~5-10M env steps on a GPU box; not reached on the CPU
machines here (see ``results/pong/REPORT.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.appo import APPOConfig

from sweeps import runner, workloads


def make_config(args: argparse.Namespace) -> APPOConfig:
    config = APPOConfig().training(
        train_batch_size_per_learner=500,
        target_network_update_freq=2,
        lr=0.0005,
        vf_loss_coeff=1.0,
        entropy_coeff=0.01,
        # Block up to 50 ms for a sample instead of busy-spinning the driver (RLlib's default 0
        # made it call training_step ~11,000 times per iteration, stealing the runner's core).
        timeout_s_sampler_manager=0.05,
        broadcast_interval=5,
        circular_buffer_num_batches=4,
        circular_buffer_iterations_per_batch=2,
    )
    return workloads.pong(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    return {
        "lr": trial.suggest_float("hp/lr", 1e-4, 2e-3, log=True),
        "entropy_coeff": trial.suggest_float("hp/entropy_coeff", 2e-3, 3e-2, log=True),
        "vf_loss_coeff": trial.suggest_float("hp/vf_loss_coeff", 0.5, 1.0),
        "rollout_fragment_length": 2 ** trial.suggest_int("hp/log2_fragment", 5, 7),
        "train_batch_size_per_learner": 2 ** trial.suggest_int("hp/log2_train_batch", 8, 10),
        "grad_clip": trial.suggest_categorical("hp/grad_clip", [20.0, 40.0, 80.0]),
        "clip_param": trial.suggest_float("hp/clip_param", 0.1, 0.4),
        "target_network_update_freq": trial.suggest_categorical("hp/target_update", [1, 2, 4]),
    }


SWEEP = runner.Sweep(
    name="appo_pong",
    algo="appo",
    env="pong",
    make_config=make_config,
    sample_params=sample_params,
    description=__doc__.split("\n")[0],
    defaults={
        "num_samples": 8,
        "stop_timesteps": 10_000_000,
        "grace_period": 1_000_000,
        "reduction_factor": 3,
        "num_env_runners": 1,
        "num_envs_per_env_runner": 2,
        "eval_interval": 20,
        "eval_episodes": 1,
    },
    smoke={"num_samples": 1, "stop_timesteps": 400, "num_envs_per_env_runner": 1},
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

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

from sweeps import runner, vtrace_family, workloads

# RLlib's tuned pong_appo.py on top of what the V-trace family shares (sweeps/vtrace_family.py).
TUNED: dict[str, Any] = {
    **vtrace_family.PONG_TUNED,
    "target_network_update_freq": 2,
    "lr": 0.0005,
    "vf_loss_coeff": 1.0,
    "entropy_coeff": 0.01,
    "circular_buffer_num_batches": 4,
    "circular_buffer_iterations_per_batch": 2,
}


def make_config(args: argparse.Namespace) -> APPOConfig:
    return workloads.pong(APPOConfig().training(**TUNED), args, stack_in_connectors=True)


def sample_params(trial: Any) -> dict[str, Any]:
    """The V-trace family's Pong space plus APPO's clip and target-network period."""
    return {
        **vtrace_family.sample_pong(trial, lr=(1e-4, 2e-3), vf_loss_coeff=(0.5, 1.0)),
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
    # 8 envs per runner, not pong_appo.py's 2 (sized for 47 runners): inference batched over 8
    # frames per forward pass; results/pong/THROUGHPUT.md has the per-runner rate.
    defaults={**vtrace_family.PONG_DEFAULTS, "num_envs_per_env_runner": 8},
    smoke=vtrace_family.PONG_SMOKE,
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

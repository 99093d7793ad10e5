"""IMPALA on Atari Pong, centred on RLlib 2.60's tuned ``pong_impala.py``.

How to run
----------
    python sweeps/impala_pong.py --smoke                 # same code path, a few hundred frames
    python sweeps/impala_pong.py --num-env-runners 30    # on a GPU box: learner on the GPU
    python sweeps/impala_pong.py --num-samples 1 --stop-reward 18 --as-test

Defaults are sized for a GPU machine (the learner takes the GPU automatically when the cluster has
one); on a 2-core CPU machine only smoke runs and throughput measurements make sense. ASHA runs over
env steps sampled: grace period 1M steps, reduction factor 3, max 10M steps.

Results to expect
-----------------
RLlib's tuned settings reach a return of 18+ within ~5-10M env steps on a GPU with tens of env
runners. On the CPU machines here: not reached (see ``results/pong/REPORT.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.impala import IMPALAConfig

from sweeps import runner, vtrace_family, workloads

# RLlib's tuned pong_impala.py on top of what the V-trace family shares (sweeps/vtrace_family.py).
TUNED: dict[str, Any] = {
    **vtrace_family.PONG_TUNED,
    "grad_clip": 40.0,
    "grad_clip_by": "global_norm",
    "lr": 0.007,
    "vf_loss_coeff": 0.5,
    "entropy_coeff": 0.008,
}


def make_config(args: argparse.Namespace) -> IMPALAConfig:
    config = IMPALAConfig().training(**TUNED)
    config.env_runners(rollout_fragment_length=50)
    return workloads.pong(config, args, stack_in_connectors=True)


def sample_params(trial: Any) -> dict[str, Any]:
    return vtrace_family.sample_pong(trial, lr=(1e-3, 1e-2), vf_loss_coeff=(0.25, 1.0))


SWEEP = runner.Sweep(
    name="impala_pong",
    algo="impala",
    env="pong",
    make_config=make_config,
    sample_params=sample_params,
    description=__doc__.split("\n")[0],
    defaults={**vtrace_family.PONG_DEFAULTS, "num_envs_per_env_runner": 5},
    smoke=vtrace_family.PONG_SMOKE,
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

"""IMPALA on any Gymnasium env (--env): decoupled actors and learner, V-trace.

How to run
----------
    python sweeps/impala_gym.py --env Acrobot-v1        # default sweep: Optuna + ASHA, <= 15 min
    python sweeps/impala_gym.py --env CartPole-v1 --dry-run   # the plan; runs nothing
    python sweeps/impala_gym.py --env my_pkg.envs:MyEnv --env-config '{"size": 8}'
    python sweeps/impala_gym.py --env CartPole-v1 --num-samples 1 --stop-reward 475 --as-test
    python -m sweeps.benchmark --env Acrobot-v1 --algos dqn,apex,impala,appo   # the four, compared

The generic tuned defaults and the search space are data in ``sweeps/gym_family.py`` (beside the
other three algorithms'); this file names the algorithm and nothing else. Trials are judged by the
greedy evaluation return (``--eval-episodes`` episodes every iteration); ``--target`` sets the
returns whose time-to-reward the report shows (default: the env spec's reward_threshold). ASHA
runs over env steps sampled: grace period 20k steps, reduction factor 3, max 200k steps.

Results to expect
-----------------
Measured on CartPole-v1 against the other three, with the command that made it:
``results/cartpole/REPORT.md``. On another env the defaults are a starting point: sweep.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from sweeps import gym_family
from sweeps.harness import runner


def make_config(args: argparse.Namespace) -> Any:
    return gym_family.make_config("impala", args)


SWEEP = runner.Sweep(
    name="impala_gym",
    algo="impala",
    env="gym",
    make_config=make_config,
    sample_params=gym_family.SAMPLERS["impala"],
    description=__doc__.split("\n")[0],
    defaults=gym_family.DEFAULTS,
    smoke=gym_family.SMOKE,
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

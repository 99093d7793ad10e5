"""Ape-X DQN on any Gymnasium env (--env): asynchronous actors, sharded prioritized replay.

How to run
----------
    python sweeps/apex_gym.py --env Acrobot-v1        # default sweep: Optuna + ASHA, <= 15 min
    python sweeps/apex_gym.py --env my_pkg.envs:MyEnv --env-config '{"size": 8}' --dry-run
    python -m sweeps.benchmark --env Acrobot-v1 --algos dqn,apex,impala,appo   # the four, compared

Results to expect
-----------------
On CartPole-v1, against the other three: ``results/cartpole/REPORT.md``. The tuned defaults, the
search space, the budget (ASHA over env steps) and what fits which env: ``sweeps/gym_family.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sweeps import gym_family
from sweeps.harness import runner

SWEEP = gym_family.sweep("apex", __doc__)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

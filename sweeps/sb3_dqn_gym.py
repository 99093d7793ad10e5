"""Stable-Baselines3's DQN on any Gymnasium env, one process: the baseline a user would pick.

Any Gymnasium env (``--env``); its hyperparameters: rl-zoo3's for the env id where the zoo has them
(read from the installed rl-zoo3's ``hyperparams/dqn.yml``), its ``atari`` entry for an ALE game,
else the zoo's ``default`` (SB3's own defaults).

How to run
----------
    python sweeps/sb3_dqn_gym.py --env CartPole-v1 --benchmark-seeds 3 --stop-train-time-s 120
    python -m sweeps.benchmark --env CartPole-v1 --algos sb3-dqn,appo   # beside the suite's

The same flags, run record, greedy evaluation, confirmed target and reports as the suite's own
sweeps (``sweeps/baselines/``: the trial is ``BaselineTrainable``, SB3's ``learn`` in one
process and one thread).

Results to expect
-----------------
``results/cartpole/REPORT.md``: its rows beside the four's, and the speedup against it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sweeps.baselines.family import sweep
from sweeps.gym_family import DEFAULTS, SMOKE
from sweeps.harness import runner
from sweeps.workloads.gym import GYM as WORKLOAD

SWEEP = sweep("sb3-dqn", WORKLOAD, __doc__, smoke=SMOKE, **DEFAULTS)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Stable-Baselines3's DQN on Pong, one process: the baseline a user would pick.

rl-zoo3's tuned ``atari`` entry (read from the installed rl-zoo3's ``hyperparams/dqn.yml``)
on the suite's Atari preprocessing (``envs/pong.py``: frame skip, 42x42 frames stacked 4, as
the four play it), so the zoo's AtariWrapper and frame stack are left out; its envs stepped one
after another in one process and one thread. Judged as the four are on Pong: by the training
return, to a confirmed 18 (10 seeded games at each crossing).

How to run
----------
    python sweeps/sb3_dqn_pong.py --benchmark-seeds 1 --stop-reward 18 --stop-train-time-s 5400
    python -m sweeps.benchmark --env pong --algos sb3-dqn --benchmark-seeds 1 --seed 0 \\
        --num-cpus 2 --stop-train-time-s 5400 --name pong-conf-sb3-dqn-s0

Results to expect
-----------------
``results/pong/REPORT.md`` once its runs are committed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sweeps.baselines.family import sweep
from sweeps.harness import runner
from sweeps.workloads.pong import PONG, PONG_DEFAULTS, PONG_SMOKE

SWEEP = sweep("sb3-dqn", PONG, __doc__, smoke=PONG_SMOKE, **PONG_DEFAULTS, num_samples=4)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

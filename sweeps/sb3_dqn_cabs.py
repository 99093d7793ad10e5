"""Stable-Baselines3's DQN on the cab env, one process: the baseline a user would pick.

The cab env (both variants); its hyperparameters: the suite's defaults for cabs
(``sweeps/baselines/hyperparams.py`` DEFAULTS: rl-zoo3 has no entry for it).

How to run
----------
    python sweeps/sb3_dqn_cabs.py --benchmark-seeds 3 --stop-reward 2500 --stop-train-time-s 60
    python -m sweeps.benchmark --env cabs --algos sb3-dqn,appo   # beside the suite's

The same flags, run record, greedy evaluation, confirmed target and reports as the suite's own
sweeps (``sweeps/baselines/``: the trial is ``BaselineTrainable``, SB3's ``learn`` in one
process and one thread).

Results to expect
-----------------
``results/cabs/REPORT.md``: its rows beside the four's, and the speedup against it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sweeps.baselines.family import sweep
from sweeps.harness import runner
from sweeps.workloads.cabs import CABS as WORKLOAD

SWEEP = sweep("sb3-dqn", WORKLOAD, __doc__)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

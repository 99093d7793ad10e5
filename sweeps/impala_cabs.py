"""IMPALA on the cab env: decoupled actors and learner with V-trace off-policy correction.

How to run
----------
    python sweeps/impala_cabs.py                     # default sweep, Optuna + ASHA, <= 15 min
    python sweeps/impala_cabs.py --smoke             # same code path, a few hundred env steps
    python sweeps/impala_cabs.py --variant requests  # the full SuperCabs MDP, logits masked
    python sweeps/impala_cabs.py --num-samples 1 --stop-reward 2500 --as-test

One trial = 1 driver/learner CPU + 1 env runner CPU with 64 vectorised envs (the per-step overhead
of RLlib, not the env, is the ceiling on the cab env). ASHA runs over env steps sampled: grace
period 100k steps, reduction factor 3, max 600k steps.

Results to expect
-----------------
The tuned defaults reach a greedy return of ~90% of the exact optimum within ~400k env steps
(a few minutes on 2 cores); see ``results/cabs/REPORT.md`` for measured figures.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.impala import IMPALAConfig

from sweeps import vtrace_family
from sweeps.algorithms.masking import MaskedPPOTorchRLModule
from sweeps.harness import runner
from sweeps.harness.settings import Settings


def make_config(args: Settings) -> IMPALAConfig:
    """The V-trace family's tuned cab defaults (``sweeps/vtrace_family.py``), nothing of its own."""
    config = vtrace_family.with_tuned(IMPALAConfig(), vtrace_family.CABS_TUNED)
    return vtrace_family.cabs(config, args, masked_module=MaskedPPOTorchRLModule)


def sample_params(trial: Any) -> dict[str, Any]:
    return vtrace_family.sample_cabs(trial)


SWEEP = vtrace_family.cabs_sweep("impala_cabs", "impala", make_config, sample_params, __doc__)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

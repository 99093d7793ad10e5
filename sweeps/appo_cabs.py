"""APPO on the cab env: IMPALA's architecture with PPO's clipped surrogate and a target network.

How to run
----------
    python sweeps/appo_cabs.py                     # default sweep, Optuna + ASHA, <= 15 min
    python sweeps/appo_cabs.py --smoke             # same code path, a few hundred env steps
    python sweeps/appo_cabs.py --variant requests  # the full SuperCabs MDP, logits masked

One trial = 1 driver/learner CPU + 1 env runner CPU with 64 vectorised envs. ASHA runs over env
steps sampled: grace period 100k steps, reduction factor 3, max 600k steps.

Results to expect
-----------------
Like IMPALA, the tuned defaults approach the exact optimum's greedy return within a few hundred
thousand env steps; see ``results/cabs/REPORT.md`` for measured figures.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.appo import APPOConfig

from sweeps import vtrace_family
from sweeps.algorithms.masking import MaskedAPPOTorchRLModule
from sweeps.harness import runner
from sweeps.harness.settings import Settings

# The V-trace family's tuned cab defaults (sweeps/vtrace_family.py) plus APPO's own: PPO's clip
# and the target network's update period (in learner updates).
TUNED: dict[str, Any] = {
    **vtrace_family.CABS_TUNED,
    "clip_param": 0.3,
    "target_network_update_freq": 2,
}


def make_config(args: Settings) -> APPOConfig:
    config = vtrace_family.with_tuned(APPOConfig(), TUNED)
    return vtrace_family.cabs(config, args, masked_module=MaskedAPPOTorchRLModule)


def sample_params(trial: Any) -> dict[str, Any]:
    """The V-trace family's cab space plus APPO's clip and target-network period."""
    return {
        **vtrace_family.sample_cabs(trial),
        "clip_param": trial.suggest_float("hp/clip_param", 0.1, 0.4),
        "target_network_update_freq": trial.suggest_categorical("hp/target_update", [1, 2, 4, 8]),
    }


SWEEP = vtrace_family.cabs_sweep("appo_cabs", "appo", make_config, sample_params, __doc__)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

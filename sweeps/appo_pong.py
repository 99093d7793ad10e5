"""APPO on Atari Pong: the CPU recipe (sweeps/vtrace_family.py) with RLlib's tuned APPO losses.

How to run
----------
    python sweeps/appo_pong.py --smoke                 # same code path, a few hundred frames
    python sweeps/appo_pong.py                         # 4 trials, ASHA, on a 2-core laptop
    python -m sweeps.benchmark --env pong --algos appo --benchmark-seeds 1 \
        --stop-train-time-s 5400                       # the run of record: to 18 or 90 minutes
    python sweeps/appo_pong.py --num-env-runners 14    # on a GPU box: learner on the GPU

Trial 0 is the recipe: one env runner stepping 32 games in ale-py's C++ vector env (42x42 frames),
the suite's 42x42 Atari net (``sweeps/workloads/rllib_config.PONG_MODEL``, DQN's and Ape-X's
too), V-trace targets that keep the bootstrap value (sweeps/algorithms/vtrace.py) run over whole
chunks (sweeps/algorithms/appo_loss.py), 20-step fragments in 500-step batches,
each batch trained in 3 passes of minibatches of 160 with the surrogate clipped at 0.2, lr 5e-4,
entropy 0.002 annealed to 0 over 3M env steps, and a floor under the policy's entropy that comes
down as the policy learns to play (an entropy target over the training return: 0.6 nats until the
return reaches -15, lowered to 0.1 by -5). Trials are judged by the training return (the mean of
the last 20 games). ASHA runs over env steps sampled: a rung at 1.5M, at most 4M (past where
every seed of the recipe's runs of record reached 18: results/pong/REPORT.md).

Results to expect
-----------------
``results/pong/REPORT.md``: the run of record on 2 CPU cores, its learning curve and the time and
env steps to a return of 0, 10 and 18; ``results/pong/THROUGHPUT.md``: env steps/s.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.appo import APPOConfig

from sweeps import vtrace_family
from sweeps.harness import runner
from sweeps.harness.settings import Settings
from sweeps.workloads.pong import PONG

# RLlib's tuned pong_appo.py losses on the V-trace family's recipe (sweeps/vtrace_family.py),
# each batch trained in order through a short queue (APPO's circular buffer dropped batches the
# busy learner had not reached), in 3 passes as PPO's Atari recipes take (on 2 cores they cost
# env steps/s: results/pong/THROUGHPUT.md), with PPO's tighter clip of 0.2 around the target
# network's policy (RLlib's 0.4 let the policy swing more between passes):
# results/pong/candidates/CURVES.md.
# The family's floor under the entropy and V-trace over whole chunks (vtrace_family.PONG_LEARNER)
# come with PONG_TUNED.
TUNED: dict[str, Any] = {
    **vtrace_family.PONG_TUNED,
    "num_epochs": 3,
    "clip_param": 0.2,
    "target_network_update_freq": 2,
    "lr": 0.0005,
    "use_circular_buffer": False,
    "simple_queue_size": 2,
}


# The family's rungs (a first one at 1.5M, as the return rises) with a shorter cap: on its net
# APPO's recipe reaches 18 well before the family's 6M (results/pong/REPORT.md).
DEFAULTS: dict[str, Any] = {**vtrace_family.PONG_DEFAULTS, "stop_timesteps": 4_000_000}


def make_config(args: Settings) -> APPOConfig:
    config = vtrace_family.with_tuned(APPOConfig(), TUNED)
    config.env_runners(rollout_fragment_length=vtrace_family.PONG_FRAGMENT)
    return PONG.configure(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    """The V-trace family's Pong space (with the entropy floor) plus APPO's clip,
    target-network period and V-trace's λ (PPO's Atari recipes take 0.95;
    sweeps/algorithms/appo_loss.py)."""
    return {
        **vtrace_family.sample_pong(trial, lr=(1e-4, 2e-3), vf_loss_coeff=(0.5, 1.0)),
        "clip_param": trial.suggest_float("hp/clip_param", 0.1, 0.4),
        "target_network_update_freq": trial.suggest_categorical("hp/target_update", [1, 2, 4]),
        "lambda": trial.suggest_categorical("hp/lambda", [0.9, 0.95, 1.0]),  # config.lambda_
    }


SWEEP = vtrace_family.pong_sweep(
    "appo_pong", "appo", make_config, sample_params, __doc__, defaults=DEFAULTS
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

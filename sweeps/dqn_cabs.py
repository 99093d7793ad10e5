"""DQN on the cab env: the single-learner baseline of the seed article.

How to run
----------
    python sweeps/dqn_cabs.py                      # default sweep, Optuna + ASHA, <= 15 min
    python sweeps/dqn_cabs.py --smoke              # same code path, a few hundred env steps
    python sweeps/dqn_cabs.py --variant requests   # the full SuperCabs MDP, Q-values masked
    python sweeps/dqn_cabs.py --num-samples 1 --stop-reward 2500 --as-test   # learning check

ASHA runs over env steps sampled: grace period 4,000 steps, reduction factor 3, max 20,000 steps
(so a trial is judged after ~50 episodes and at most two rungs prune).

Results to expect
-----------------
On 2 cores the tuned defaults reach a greedy return of 2,500 (optimum 2,966 on the default city)
within a few thousand env steps on most seeds; some seeds take several times longer. On the
request variant γ is 0.995 (``sweeps/dqn_family.py``: a month's plan matters there). Measured
time-to-reward per seed: ``results/cabs/REPORT.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ray.rllib.algorithms.dqn import DQNConfig

from sweeps import dqn_family
from sweeps.harness import runner
from sweeps.harness.settings import Settings
from sweeps.workloads.cabs import CABS

# Tuned defaults: one hidden layer of 256 (two layers learned far slower here), small replay, fast
# target updates, Rainbow's extensions (sweeps/dqn_family.py: n-step 3, double Q, dueling), γ = 0.95
# at lr 3e-3 with a squared TD loss, ε annealed to 0.1 over 5k steps (a longer horizon, the Huber
# loss and a lower ε left seeds stuck: ``benchmarks/apex_cabs_bench.py --algo dqn``).
TUNED: dict[str, Any] = {
    **dqn_family.EXTENSIONS,
    "lr": 3e-3,
    "gamma": 0.95,
    "train_batch_size": 64,
    "target_network_update_freq": 500,
    "num_steps_sampled_before_learning_starts": 1000,
    "training_intensity": 1.0,
    "epsilon": [(0, 1.0), (5000, 0.1)],
    "td_error_loss_fn": "mse",
    "replay_buffer_config": {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 50_000,
        "alpha": 0.6,
        "beta": 0.4,
    },
}


def make_config(args: Settings) -> DQNConfig:
    config = DQNConfig().training(**TUNED)
    config.env_runners(rollout_fragment_length=32)
    config.reporting(min_sample_timesteps_per_iteration=1000)
    return dqn_family.cabs(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    """The search space, in the space that matters; returns real config values."""
    one_minus_gamma = trial.suggest_float("hp/one_minus_gamma", 1e-3, 0.2, log=True)
    eps_steps = trial.suggest_categorical("hp/epsilon_decay_steps", [2000, 5000, 10000])
    eps_final = trial.suggest_float("hp/epsilon_final", 0.01, 0.1, log=True)
    return {
        "lr": trial.suggest_float("hp/lr", 1e-4, 1e-2, log=True),
        "gamma": 1.0 - one_minus_gamma,
        **dqn_family.sample_cabs(trial),  # n-step, target period, train batch, replay capacity
        "epsilon": [(0, 1.0), (eps_steps, eps_final)],
        "double_q": trial.suggest_categorical("hp/double_q", [True, False]),
        "dueling": trial.suggest_categorical("hp/dueling", [True, False]),
    }


SWEEP = runner.Sweep.of_file(
    "dqn_cabs",
    "dqn",
    CABS,
    make_config,
    sample_params,
    __doc__,
    defaults={
        "num_samples": 8,
        "stop_timesteps": 20_000,
        "grace_period": 4_000,
        "reduction_factor": 3,
        "time_budget_s": 900.0,
        "num_env_runners": 0,
        # RLlib's per-step overhead (~3 ms: connectors, module forward) is paid per vector step:
        # 8 envs per runner sample ~6x faster at the same update ratio.
        "num_envs_per_env_runner": 8,
    },
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

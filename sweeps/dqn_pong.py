"""DQN (double, dueling, n-step, prioritized replay) on Atari Pong: the single-learner baseline.

How to run
----------
    python sweeps/dqn_pong.py --smoke          # same code path, a few hundred frames
    python sweeps/dqn_pong.py --num-samples 4  # 4 trials, ASHA
    python -m sweeps.benchmark --env pong --algos dqn --benchmark-seeds 1 \
        --stop-train-time-s 5400                 # a run to 18 or 90 minutes

Trial 0 is sized for 2 CPU cores: one env runner stepping 8 games (42x42 frames, the
suite's 42x42 net ``sweeps/workloads/rllib_config.PONG_MODEL``: DQN did not learn on the cheaper
``CHEAP_42_FILTERS``), 32-step fragments, and 16 updates of 64 replayed steps per
256 sampled (a replay ratio of 4: RLlib's ``training_intensity`` counts the driver's idle local
env runner too, so its 2 here is 4 trained per sampled env step), lr 1e-4,
Rainbow's extensions, a 100k prioritized replay, the target net synced every 8k env steps and
epsilon annealed over 250k. The Rainbow-style settings it replaced (batch 32 every 4 steps at a
replay ratio of 16) were learner-bound on 2 cores (results/pong/PROFILE.md). DQN samples, then
trains, in turn: its learner's torch takes the runner's core too while it updates
(``sweeps/harness/callbacks.py``), the replay stores running games in place
(``sweeps/algorithms/growing_replay.py``; longer fragments also mean fewer appends) and is
sampled as a train batch, not as episodes (``sweeps/algorithms/columnar_dqn.py``). ASHA runs
over env steps sampled: grace period 500k steps, reduction factor 3, max 3M steps.

Results to expect
-----------------
``results/pong/THROUGHPUT.md`` and ``results/pong/PROFILE.md``: env steps/s and where the time goes
on 2 CPU cores; ``results/pong/candidates/CURVES.md``: the probes' learning curves;
``results/pong/REPORT.md``: the Pong runs of record.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from sweeps import dqn_family
from sweeps.algorithms.columnar_dqn import ColumnarDQNConfig
from sweeps.algorithms.columnar_replay import ColumnarPrioritizedEpisodeReplayBuffer
from sweeps.harness import runner
from sweeps.harness.settings import Settings
from sweeps.workloads.pong import PONG

# Sized for 2 CPU cores (see the docstring): Rainbow's extensions (sweeps/dqn_family.py), replay
# scaled down, updates of 64 at a replay ratio of 4.
TUNED: dict[str, Any] = {
    **dqn_family.EXTENSIONS,
    "lr": 1e-4,
    "gamma": 0.99,
    "train_batch_size": 64,
    "target_network_update_freq": 8000,
    "num_steps_sampled_before_learning_starts": 20_000,
    "training_intensity": 2.0,
    "epsilon": [(0, 1.0), (250_000, dqn_family.PONG_FINAL_EPSILON)],
    "replay_buffer_config": {
        "type": ColumnarPrioritizedEpisodeReplayBuffer,  # RLlib's, sampled as columns
        "capacity": 100_000,
        "alpha": 0.5,
        "beta": 0.4,
    },
}
FRAGMENT = 32


def make_config(args: Settings) -> ColumnarDQNConfig:
    config = ColumnarDQNConfig().training(**TUNED)
    config.env_runners(rollout_fragment_length=FRAGMENT)
    return PONG.configure(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    return {
        "lr": trial.suggest_float("hp/lr", 3e-5, 5e-4, log=True),
        "n_step": trial.suggest_categorical("hp/n_step", [1, 3]),
        "target_network_update_freq": 1000 * trial.suggest_categorical("hp/target_k", [2, 4, 8]),
        "train_batch_size": 2 ** trial.suggest_int("hp/log2_train_batch", 5, 7),
        # replay ratios 2, 4, 8 with one env runner (see the docstring)
        "training_intensity": trial.suggest_categorical("hp/training_intensity", [1.0, 2.0, 4.0]),
        "epsilon": [
            (0, 1.0),
            (
                trial.suggest_categorical("hp/eps_steps", [1e5, 2.5e5]),
                dqn_family.PONG_FINAL_EPSILON,
            ),
        ],
        "replay_buffer_config/capacity": 50_000 * trial.suggest_int("hp/capacity_50k", 1, 4),
    }


SWEEP = dqn_family.pong_sweep(
    "dqn_pong", "dqn", make_config, sample_params, __doc__, stop_timesteps=3_000_000
)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

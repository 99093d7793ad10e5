"""Ape-X DQN on Atari Pong, centred on the old RLlib Ape-X Pong settings.

Centre of the space: RLlib's ``tuned_examples/apex_dqn/pong-apex-dqn.yaml`` (Ray <= 2.5), which
"reaches ~19 reward in < 40 minutes (3M env steps) on a p3.8xlarge": 4 workers × 8 envs,
lr 5e-5, train batch 64, target update every 20k steps, replay 1M, γ 0.99, training intensity 16.
Replay here is 50k (observations are not compressed on the new stack; one shard per runner, so
one shard on 2 cores): at 1 replayed step per sampled one, a 200k replay learned far slower on
Pong than 50k. Learning rate and target period are DQN's Pong ones (lr 1e-4, 500 updates
between target syncs). The probes behind all three: results/pong/candidates/CURVES.md. The
replay ratio (``training_intensity``, trained / sampled env steps) is 2: at the paper's 1 (its
learner trained ~0.8 samples per actor step) the learner sat idle half the time on 2 cores; at 2
the runner samples as fast and the return rises earlier by env steps (probe pong-apex-ti2-s1 in
CURVES.md, one seed). Actors wait for the learner when they run ahead of it
(``max_env_steps_sampled_ahead``), so 16 would cap sampling at 1/16 of the learner's rate.
Each game is an actor of Ape-X's ε schedule (``exploration_per_game``): one runner of 8 games
explores at ε 0.4, 0.16, ... 0.0007, as 8 single-game actors would, not all 8 at 0.4. Its
training return counts the games played at ε <= 0.01 (``training_return_max_epsilon``: DQN's final
ε, so the two are read at the same exploration; here the last 3 of the 8 games); the mean over all
games, which the ε 0.4 game holds down, stays in the results as RLlib's own
``env_runners/rllib_episode_return_mean``.

How to run
----------
    python sweeps/apex_pong.py --smoke                               # a few hundred frames
    python sweeps/apex_pong.py --num-env-runners 4 --num-samples 4   # on a GPU box

ASHA runs over env steps sampled: grace period 500k steps, reduction factor 3, max 4M steps.

Frames are the suite's Pong frames (``envs/pong.py``: 42x42, stacked 4 in ale-py's C++ vector
env, 8 games per runner) and the model is the suite's 42x42 net, DQN's
(``sweeps/workloads/rllib_config.PONG_MODEL``); of the old settings above, only the
learning rate, target period and replay size are re-tuned for them.

Results to expect
-----------------
``results/pong/THROUGHPUT.md`` and ``results/pong/PROFILE.md``: env steps/s and where the time goes
on 2 CPU cores (the learner is the bottleneck there); ``results/pong/REPORT.md``: the Pong runs of
record.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from sweeps import dqn_family
from sweeps.harness import keys, runner
from sweeps.harness.settings import Settings
from sweeps.workloads.pong import PONG

# The old RLlib Ape-X Pong settings (see the docstring) with Rainbow's extensions
# (sweeps/dqn_family.py), and DQN's Pong learning rate and target period: 1e-4, the target net
# synced every 500 updates of 64 (32k trained env steps; DQN's 8k sampled at its ratio of 4).
TUNED: dict[str, Any] = {
    **dqn_family.EXTENSIONS,
    "lr": 1e-4,
    "gamma": 0.99,
    "train_batch_size": 64,
    "target_network_update_freq": 32_000,
    "training_intensity": 2.0,
    "num_steps_sampled_before_learning_starts": 50_000,
    "replay_buffer_config": {"capacity": 50_000},
}


def make_config(args: Settings):
    from sweeps.algorithms.apex import ApexDQNConfig

    config = ApexDQNConfig().training(**TUNED)
    config.apex(
        num_replay_buffer_shards=4,
        max_weight_sync_delay=400,
        exploration_per_game=True,
        training_return_max_epsilon=dqn_family.PONG_FINAL_EPSILON,
    )
    config.env_runners(rollout_fragment_length=50)
    return PONG.configure(config, args)


def sample_params(trial: Any) -> dict[str, Any]:
    return {
        "lr": trial.suggest_float("hp/lr", 2e-5, 3e-4, log=True),
        "n_step": trial.suggest_categorical("hp/n_step", [1, 3, 5]),
        "target_network_update_freq": 8000 * trial.suggest_categorical("hp/target_8k", [1, 2, 4]),
        "train_batch_size": 2 ** trial.suggest_int("hp/log2_train_batch", 5, 8),
        "training_intensity": trial.suggest_categorical("hp/training_intensity", [0.5, 1, 2, 4]),
        "replay_buffer_config/alpha": trial.suggest_float("hp/priority_alpha", 0.4, 0.8),
        "replay_buffer_config/capacity": 50_000
        * trial.suggest_categorical("hp/capacity_50k", [1, 2, 4]),
    }


SWEEP = dqn_family.pong_sweep(
    "apex_pong", "apex", make_config, sample_params, __doc__,
    stop_timesteps=4_000_000, extra_metrics=keys.APEX_METRICS,
)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run(SWEEP, argv)


if __name__ == "__main__":
    sys.exit(main())

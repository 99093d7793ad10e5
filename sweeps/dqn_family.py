"""What DQN and Ape-X DQN share, written once: RLlib's DQN family on each workload.

Ape-X is DQN's learner fed by many asynchronous actors through a sharded prioritized replay. The
two share Rainbow's extensions, the cab network and its masking, part of the cab search space and
the Pong budget; ``sweeps/dqn_<env>.py`` and ``sweeps/apex_<env>.py`` state the rest.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from sweeps.algorithms.apex.config import CABS_HIDDENS
from sweeps.harness.settings import Settings
from sweeps.harness.sweep import Scaling, Sweep
from sweeps.workloads import pong
from sweeps.workloads.cabs import CABS

# Rainbow's extensions that RLlib's DQN implements: double Q, dueling heads, 3-step returns.
EXTENSIONS: dict[str, Any] = {"double_q": True, "dueling": True, "n_step": 3}

# DQN's final ε on Pong (its schedule anneals to it); Ape-X's training return counts the games its
# actors play at or below it, so the two training returns are read at the same exploration.
PONG_FINAL_EPSILON = 0.01


# ------------------------------------------------------------------------------------------------
# Cabs
# ------------------------------------------------------------------------------------------------


# γ on the request variant, where a month's plan matters: the Q-function reads the month's
# progress, and a per-step γ caps what it can learn (envs.optimum.discounted_greedy_value: the
# cap rises with γ towards the optimum; tests/test_envs_optimum.py pins it at 0.95, 0.99, 0.995).
REQUESTS_GAMMA = 0.995


def cabs(config: AlgorithmConfig, args: Settings) -> AlgorithmConfig:
    """The cab workload for a DQN-family config: its network of ``CABS_HIDDENS`` (one hidden
    layer of 256: two learned far slower here); on the request variant the Q-values of
    unavailable actions masked and γ = ``REQUESTS_GAMMA``."""
    masked = None
    if args.variant == "requests":
        from sweeps.algorithms.masked_dqn import MaskedDQNTorchRLModule as masked

        config.training(gamma=REQUESTS_GAMMA)
    return CABS.configure(config, args, masked_module=masked, hiddens=CABS_HIDDENS)


def sample_cabs(trial: Any) -> dict[str, Any]:
    """The part of the cab search space both share: n-step, target-network period, train batch,
    replay capacity; returns real config values. Period and capacity are log-uniform integers,
    not powers of 2 or 10, so that the tuned 500 and 50,000 (the first trial) are in the space."""
    target_update = trial.suggest_int("hp/target_update", 128, 2048, log=True)
    return {
        "n_step": trial.suggest_categorical("hp/n_step", [1, 3, 5]),
        "target_network_update_freq": target_update,
        "train_batch_size": 2 ** trial.suggest_int("hp/log2_train_batch", 5, 8),
        "replay_buffer_config/capacity": trial.suggest_int(
            "hp/replay_capacity", 10_000, 100_000, log=True
        ),
    }


# ------------------------------------------------------------------------------------------------
# Pong: one runner of 8 games on a laptop; the learner takes the GPU when the cluster has one.
# ------------------------------------------------------------------------------------------------

PONG_DEFAULTS: dict[str, Any] = {
    **pong.PONG_DEFAULTS,
    "num_samples": 4,
    "grace_period": 500_000,
    # Inference batched over 8 envs per runner: one env per runner paid RLlib's per-step cost
    # (connectors, a module forward) for every single frame. The replay ratio
    # (training_intensity) does not depend on it.
    "num_envs_per_env_runner": 8,
}
PONG_SMOKE: dict[str, Any] = {**pong.PONG_SMOKE, "num_envs_per_env_runner": 2}
# At N env runners (docs/scaling.md): the recipe's 8 games spread over the runners; the replay
# ratio (training_intensity), the learner's batch and the ε schedule (by env steps) stay the
# recipe's. Ape-X's ε ladder spans every game of every runner, one replay shard per runner up to
# 4; RLlib's DQN samples every runner, then trains, in turn (its runners wait while it trains).
PONG_SCALING = Scaling(
    note="the replay ratio, the learner's batch and the exploration (DQN's schedule, Ape-X's "
    "ladder over every game of every runner) stay the recipe's"
)


def pong_sweep(
    name: str, algo: str, make_config: Any, sample_params: Any, doc: str, **settings: Any
) -> Sweep:
    """A DQN-family sweep on Pong: the family's defaults (``settings`` on top: the sweep's own),
    smoke and scaling recipe (their one home)."""
    fields = {"smoke": PONG_SMOKE, "scaling": PONG_SCALING}
    fields["extra_metrics"] = settings.pop("extra_metrics", ())
    fields["defaults"] = {**PONG_DEFAULTS, **settings}
    return Sweep.of_file(name, algo, pong.PONG, make_config, sample_params, doc, **fields)

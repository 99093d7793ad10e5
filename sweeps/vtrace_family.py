"""What IMPALA and APPO share, written once: RLlib's V-trace family on each workload.

APPO is IMPALA's architecture (decoupled actors and learner, V-trace off-policy correction) with
PPO's clipped surrogate and a target network. The two share their tuned defaults, the search space
over them and the sweep budget; ``sweeps/impala_<env>.py`` and ``sweeps/appo_<env>.py`` state only
what differs (APPO: the clip and the target network; on Pong, each one's RLlib-tuned lr and loss
weights).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from sweeps.algorithms.appo_loss import CHUNKS_KEY
from sweeps.harness.settings import Settings
from sweeps.harness.sweep import Scaling, Sweep
from sweeps.workloads import pong
from sweeps.workloads.cabs import CABS

# Block up to 50 ms for a sample instead of busy-spinning the driver (with RLlib's default 0 it
# calls training_step over and over while it waits, stealing the runner's core).
SAMPLER_TIMEOUT_S = 0.05


def with_tuned(config: AlgorithmConfig, tuned: Mapping[str, Any]) -> AlgorithmConfig:
    """``config.training(**tuned)``, with ``learner_config_dict`` set through ``config.learners``
    (RLlib 2.60 reads it there; given to ``training()`` it warns of a deprecation at each start)."""
    settings = dict(tuned)
    learner = settings.pop("learner_config_dict", None)
    config.training(**settings)
    if learner is not None:
        config.learners(learner_config_dict=learner)
    return config


# ------------------------------------------------------------------------------------------------
# Cabs: one trial = 1 driver/learner CPU + 1 env runner CPU with 64 vectorised envs (the per-step
# overhead of RLlib, not the env, is the ceiling on the cab env).
# ------------------------------------------------------------------------------------------------

CABS_TUNED: dict[str, Any] = {
    "lr": 1e-3,
    "gamma": 0.99,
    "train_batch_size_per_learner": 1024,
    "entropy_coeff": 0.01,
    "vf_loss_coeff": 0.5,
    "grad_clip": 40.0,
    "timeout_s_sampler_manager": SAMPLER_TIMEOUT_S,
    "broadcast_interval": 1,
}

CABS_DEFAULTS: dict[str, Any] = {
    "num_samples": 6,
    "stop_timesteps": 600_000,
    "grace_period": 100_000,
    "reduction_factor": 3,
    "time_budget_s": 840.0,
    "num_env_runners": 1,
    "num_envs_per_env_runner": 64,
}
CABS_SMOKE: dict[str, Any] = {"stop_timesteps": 500}


def cabs(config: AlgorithmConfig, args: Settings, *, masked_module: type) -> AlgorithmConfig:
    """The cab workload for a V-trace config already holding its tuned training settings:
    32-step fragments, iterations of at least 5 s, logits masked on the request variant."""
    config.env_runners(rollout_fragment_length=32)
    config.reporting(min_time_s_per_iteration=5)
    return CABS.configure(config, args, masked_module=masked_module)


def sample_cabs(trial: Any) -> dict[str, Any]:
    """The search space both share on cabs; returns real config values."""
    one_minus_gamma = trial.suggest_float("hp/one_minus_gamma", 1e-3, 0.05, log=True)
    return {
        "lr": trial.suggest_float("hp/lr", 1e-4, 3e-3, log=True),
        "gamma": 1.0 - one_minus_gamma,
        "entropy_coeff": trial.suggest_float("hp/entropy_coeff", 1e-4, 0.05, log=True),
        "vf_loss_coeff": trial.suggest_float("hp/vf_loss_coeff", 0.25, 1.0),
        "rollout_fragment_length": 2 ** trial.suggest_int("hp/log2_fragment", 4, 7),
        "train_batch_size_per_learner": 2 ** trial.suggest_int("hp/log2_train_batch", 9, 12),
        "grad_clip": trial.suggest_categorical("hp/grad_clip", [10.0, 40.0, 100.0]),
    }


# ------------------------------------------------------------------------------------------------
# Pong, on a 2-core CPU machine: one env runner stepping 32 games in ale-py's C++ vector env (42x42
# frames, envs/pong.py), inference batched over the 32, a 42x42 Atari net (APPO the workload's
# PONG_MODEL, IMPALA RLlib's classic one: sweeps/workloads/rllib_config.py); the learner trains
# in the driver on the other core with one torch thread. A GPU box scales the same recipe with
# --num-env-runners (the learner takes the GPU).
# What both learn Pong with here (each sweep file adds its loss settings, passes and queue):
# 20-step fragments in 500-step batches, trained in minibatches of 160 (a 32-game sample is ~670
# steps: ~4 updates a pass where there was one), weights to the runner after every update (less
# policy lag), value loss 0.5, and a small entropy bonus annealed to 0 over 3M env steps
# (advantages are not normalised: on Pong they are ~0.1, and 0.01 pulled the policy back to
# uniform; 0.0005 let it collapse to one action within 250k env steps). The probes behind these
# choices, side by side by env steps: results/pong/candidates/CURVES.md. Throughput:
# results/pong/THROUGHPUT.md; learning curves: results/pong/REPORT.md.
# ------------------------------------------------------------------------------------------------

PONG_FRAGMENT = 20
ENTROPY_ANNEAL_STEPS = 3_000_000
LR_ANNEAL_STEPS = 6_000_000  # where an annealed learning rate reaches its end (impala_pong.py)
# A floor under the policy's entropy (sweeps/algorithms/entropy_target.py) keyed to the best
# training return so far: 0.6 nats while the policy loses nearly every point (it stops the
# collapse onto one action that froze runs at -19 once the annealed bonus reached 0), lowered from
# a return of -15 to 0.1 at -5. On APPO a floor held at 0.3 or 0.6 from the start kept the
# return in a plateau near -5..0; one taken away entirely let the entropy fall to 0.01 and the
# return swing. Both sweeps take it, IMPALA's lowered only to 0.3 (sweeps/impala_pong.py;
# results/pong/candidates/CURVES.md).
ENTROPY_FLOOR = [[-15, 0.6], [-5, 0.1]]  # [training return, nats]: 0.6 to -15, 0.1 from -5
PONG_FLOOR = {"entropy_target": ENTROPY_FLOOR, "entropy_target_by": "return"}
# V-trace over each whole chunk (sweeps/algorithms/appo_loss.py, impala_loss.py) instead of RLlib's
# rows of a fragment, which drift across the chunks and stop the traces a few steps short. With it
# the return rose sooner on APPO's seeds 0 and 1 and IMPALA's seed 0 than with RLlib's rows
# (results/pong/candidates/CURVES.md: pong-appo-chunks-s0/s1, pong-impala-chunks-s0); APPO's
# seed 2 rose only once on the 5x5-map net (results/pong/candidates/pong-cpu-appo-chunks-s2).
WHOLE_CHUNKS = {CHUNKS_KEY: True}
PONG_LEARNER = {**PONG_FLOOR, **WHOLE_CHUNKS}
PONG_TUNED: dict[str, Any] = {
    "train_batch_size_per_learner": 500,
    "minibatch_size": 160,
    "timeout_s_sampler_manager": SAMPLER_TIMEOUT_S,
    "broadcast_interval": 1,
    "vf_loss_coeff": 0.5,
    "entropy_coeff": [[0, 0.002], [ENTROPY_ANNEAL_STEPS, 0.0]],
    "learner_config_dict": PONG_LEARNER,
}

# A sweep's ASHA rungs at 1.5M and 4.5M env steps, at most 6M per trial (at the recipe's rate,
# results/pong/THROUGHPUT.md, about 10, 30 and 40 minutes); the first rung comes after the ~1.2M env
# steps at -21 that every probe spent before its return rose (results/pong/candidates/CURVES.md),
# where a rung would rank noise. 4 trials, one at a time on 2 cores.
PONG_DEFAULTS: dict[str, Any] = {
    **pong.PONG_DEFAULTS,
    "num_samples": 4,
    "stop_timesteps": 6_000_000,
    "grace_period": 1_500_000,
    "num_envs_per_env_runner": pong.GAMES_PER_RUNNER,
}
PONG_SMOKE: dict[str, Any] = {**pong.PONG_SMOKE, "num_envs_per_env_runner": 2}
# At N env runners (docs/scaling.md): the recipe's 32 games spread over the runners; the learner's
# batch, its passes over it and the learning rate stay the recipe's, so one learner takes the same
# batches from more processes and V-trace corrects their longer policy lag. Where the learner is
# the busiest process (the report's scaling section), more runners stop paying.
PONG_SCALING = Scaling(
    note="the learner's batch (500 env steps), passes per batch and learning rate stay the "
    "recipe's: V-trace corrects the runners' longer policy lag"
)


def sample_pong(
    trial: Any,
    *,
    lr: tuple[float, float],
    vf_loss_coeff: tuple[float, float],
    anneal_lr: bool = False,
) -> dict[str, Any]:
    """The search space both share on Pong, around each one's own ``lr`` and ``vf_loss_coeff``
    ranges (log-uniform and uniform); returns real config values. Fragment and batch are
    log-uniform integers, not powers of 2, so that the tuned 20 and 500 (the first trial) are in
    the space; the passes over each batch (``num_epochs``) 1 to 4; the entropy bonus is its start
    and its floor, annealed over the first 3M env steps; with ``anneal_lr`` the learning rate is
    its start and its end, annealed linearly over ``LR_ANNEAL_STEPS``; the entropy floor its
    release and end; V-trace over whole chunks in every trial."""
    start = trial.suggest_float("hp/entropy_start", 5e-4, 1e-2, log=True)
    floor = trial.suggest_categorical("hp/entropy_floor", [0.0, 0.0005, 0.001, 0.002])
    rate: Any = trial.suggest_float("hp/lr", *lr, log=True)
    if anneal_lr:
        end = trial.suggest_float("hp/lr_end", lr[0] / 20, lr[1], log=True)
        rate = [[0, rate], [LR_ANNEAL_STEPS, end]]
    return {
        "lr": rate,
        "entropy_coeff": [[0, start], [ENTROPY_ANNEAL_STEPS, floor]],
        "vf_loss_coeff": trial.suggest_float("hp/vf_loss_coeff", *vf_loss_coeff),
        "rollout_fragment_length": trial.suggest_int("hp/fragment", 16, 128, log=True),
        "train_batch_size_per_learner": trial.suggest_int("hp/train_batch", 256, 1024, log=True),
        "num_epochs": trial.suggest_int("hp/passes", 1, 4),
        "grad_clip": trial.suggest_categorical("hp/grad_clip", [20.0, 40.0, 80.0]),
        "learner_config_dict": {**_sample_entropy_floor(trial), **WHOLE_CHUNKS},
    }


def _sample_entropy_floor(trial: Any) -> dict[str, Any]:
    """The entropy floor (``PONG_FLOOR``): 0.6 nats while the return is below -15, lowered to its
    end value (0: none) by the return where it is released."""
    (start_return, start), _ = ENTROPY_FLOOR
    release = trial.suggest_categorical("hp/entropy_target_release", [-10, -5, 0])
    end = trial.suggest_categorical("hp/entropy_target_end", [0.0, 0.05, 0.1, 0.2, 0.3])
    return {
        "entropy_target": [[start_return, start], [release, end]],
        "entropy_target_by": "return",
    }


def cabs_sweep(name: str, algo: str, make_config: Any, sample_params: Any, doc: str) -> Sweep:
    """A V-trace sweep on the cab env, with the family's defaults and smoke (their one home)."""
    fields = {"defaults": CABS_DEFAULTS, "smoke": CABS_SMOKE}
    return Sweep.of_file(name, algo, CABS, make_config, sample_params, doc, **fields)


def pong_sweep(
    name: str,
    algo: str,
    make_config: Any,
    sample_params: Any,
    doc: str,
    defaults: Mapping[str, Any] = PONG_DEFAULTS,
) -> Sweep:
    """A V-trace sweep on Pong, with the family's smoke and scaling recipe (their one home)."""
    fields = {"defaults": dict(defaults), "smoke": PONG_SMOKE, "scaling": PONG_SCALING}
    return Sweep.of_file(name, algo, pong.PONG, make_config, sample_params, doc, **fields)

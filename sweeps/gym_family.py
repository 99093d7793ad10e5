"""Any Gymnasium env: the four algorithms' generic tuned defaults and search spaces, side by side.

rl-baselines3-zoo keeps one hyperparameter file per algorithm, keyed by env id, with a default
for everything else; this is that "everything else" for DQN, Ape-X, IMPALA and APPO, as data:
``TUNED[algo]`` (the config the sweep's first trial and the benchmark run), ``SAMPLERS[algo]``
(its Optuna search space around those values). What each algorithm can take is checked before
Ray starts by ``envs.gym.check``. ``sweeps/<algo>_gym.py`` builds
the config from these and states nothing else.

The defaults were tuned on ``CartPole-v1`` on a 2-core machine, one trial at a time: small MLPs
(64x64), one env runner, short fragments and frequent weight broadcasts, so that the fastest of
the four reaches CartPole's 475 (greedy) within 30 s of training; ``results/cartpole/REPORT.md``
has the measured times and the command. How they travel to envs they were not tuned on:
``results/gym/before/REPORT.md`` (the env family, ``sweeps/env_family.py``). Each algorithm's
family study (``python -m benchmarks.family_tune``; where it stands: ``results/gym/tune/<algo>/
STUDY.md``) tunes ``TUNED[algo]`` on the family's tuning envs as a whole; a study's verdict lands
here, and its algorithm's runs after it go to ``results/gym/after/``.

One setting for every env, or one derived from the env
-------------------------------------------------------
``TUNED``, ``FRAGMENT`` and ``HIDDENS`` are one setting for every env. What one setting cannot
serve is derived from the env, in the run, before or while it trains:

- **The network's input**, from the observation space (``sweeps/workloads/gym.py``): a 1-D Box
  as it is; Discrete one-hot (Taxi's 500 states: 500 inputs); any other space flattened (a
  MinAtar game's 10x10xC frames: 100*C inputs) to the same MLP; an ``ALE/...`` id Pong's Atari
  recipe (42x42 frames, a conv net, rewards clipped for training).
- **The network's output**, from the action space: a Q-value per action (DQN, Ape-X: Discrete
  only) or a distribution over them (IMPALA, APPO: Discrete, Box, MultiDiscrete); an action
  space an algorithm cannot take is refused before Ray starts (``envs.gym.check``).
- **The target**, from the env's spec (its ``reward_threshold``), or its exact optimum where the
  env publishes its model (the toy-text envs: ``envs.gym.tabular_optimum``), or ``--target``.
- **What a collapse is**, from a short random-policy probe: each run plays a uniformly random
  policy for 100 seeded episodes (capped in steps and seconds: ``envs.gym.random_returns``); a
  trial whose training return ends below that figure after having been above it is flagged
  (``sweeps/harness/collapse.py``).
- **How often the greedy policy is evaluated**, from what the env's greedy episodes cost as the
  run goes: at most 25% of the training clock (``sweeps/harness/eval_share.py``): every
  iteration on CartPole, as seldom as the share allows on a thousand-step lander.
- **How a greedy episode ends**, from the env's own time limit (its spec's
  ``max_episode_steps``), else a cap of ``held_out_eval.MAX_STEPS`` steps.

Observation scale is the one left to the user, as an option: ``--env-config '{"obs_scale":
"bounds"}'`` maps each bounded dimension of a vector observation to [-1, 1] by the space's own
bounds (``envs/observation_scale.py``; an env already in [-1, 1] is left as it is).

A game that needs FIRE after each lost life (Breakout) can stall a greedy evaluation episode
until ALE's 108,000-frame cap (the frames have FIRE at reset only, as Pong's); judge such a game by
the training return (``--eval-interval 0``).
"""

from __future__ import annotations

from typing import Any

from sweeps.dqn_family import EXTENSIONS
from sweeps.harness.settings import Settings
from sweeps.harness.sweep import Sweep
from sweeps.vtrace_family import SAMPLER_TIMEOUT_S
from sweeps.workloads.gym import GYM

# ------------------------------------------------------------------------------------------------
# Tuned defaults, per algorithm (training settings; env-runner settings in RUNNERS)
# ------------------------------------------------------------------------------------------------


TUNED: dict[str, dict[str, Any]] = {
    "dqn": {
        **EXTENSIONS,
        "lr": 1e-3,
        "gamma": 0.99,
        "train_batch_size": 64,
        "target_network_update_freq": 500,
        "num_steps_sampled_before_learning_starts": 1000,
        "training_intensity": 8.0,
        "epsilon": [(0, 1.0), (10_000, 0.02)],
        "replay_buffer_config": {
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 50_000,
            "alpha": 0.6,
            "beta": 0.4,
        },
    },
    "apex": {
        **EXTENSIONS,
        "lr": 1e-3,
        "gamma": 0.99,
        "train_batch_size": 64,
        "target_network_update_freq": 2000,
        "num_steps_sampled_before_learning_starts": 1000,
        "training_intensity": 8.0,
        "epsilon": 0.4,
        "replay_buffer_config": {"capacity": 50_000},
    },
    "impala": {
        "lr": 1e-3,
        "gamma": 0.99,
        "train_batch_size_per_learner": 500,
        "entropy_coeff": 0.01,
        "vf_loss_coeff": 0.5,
        "grad_clip": 40.0,
        "timeout_s_sampler_manager": SAMPLER_TIMEOUT_S,
        "broadcast_interval": 1,
    },
    "appo": {
        "lr": 1e-3,
        "gamma": 0.99,
        "train_batch_size_per_learner": 500,
        "entropy_coeff": 0.0,
        "vf_loss_coeff": 0.5,
        "grad_clip": 40.0,
        "timeout_s_sampler_manager": SAMPLER_TIMEOUT_S,
        "broadcast_interval": 1,
        "clip_param": 0.3,
        # Each batch trained on 8 times (RLlib's default 2) ...
        "circular_buffer_iterations_per_batch": 8,
        # ... and the target policy (which APPO's clip is taken against) synced every
        # 0.0625 x 8 batches x 8 iterations x 500 = 2,000 trained env steps. RLlib's default 2
        # (with 8 iterations: every 64,000) held the policy near uniform on CartPole for most of
        # a trial's budget.
        "target_network_update_freq": 0.0625,
    },
}

# Env-runner settings per algorithm (rollout fragment; the runner count and envs per runner are
# flags, DEFAULTS below).
FRAGMENT: dict[str, int] = {"dqn": 32, "apex": 32, "impala": 50, "appo": 50}
HIDDENS: tuple[int, ...] = (64, 64)


def make_config(algo: str, args: Settings) -> Any:
    """The algorithm's config with its generic tuned defaults on ``--env`` (checked: a
    ``ValueError`` when the env cannot be built or the algorithm cannot take its spaces)."""
    GYM.check(algo, args)
    if algo == "dqn":
        from ray.rllib.algorithms.dqn import DQNConfig

        config = DQNConfig()
    elif algo == "apex":
        from sweeps.algorithms.apex import ApexDQNConfig
        from sweeps.algorithms.apex.config import TWO_CORE_APEX

        config = ApexDQNConfig().apex(**TWO_CORE_APEX)
    elif algo == "impala":
        from ray.rllib.algorithms.impala import IMPALAConfig

        config = IMPALAConfig()
    else:
        from ray.rllib.algorithms.appo import APPOConfig

        config = APPOConfig()
    config.training(**TUNED[algo])
    config.env_runners(rollout_fragment_length=FRAGMENT[algo])
    config.reporting(min_time_s_per_iteration=1, min_sample_timesteps_per_iteration=0)
    return GYM.configure(config, args, hiddens=HIDDENS)


# ------------------------------------------------------------------------------------------------
# Search spaces, per algorithm (zoo-style samplers returning real config values)
# ------------------------------------------------------------------------------------------------


def _sample_lr_gamma(trial: Any) -> dict[str, Any]:
    """The two every algorithm's space samples alike (γ through 1 - γ, log-uniform)."""
    one_minus_gamma = trial.suggest_float("hp/one_minus_gamma", 1e-3, 0.1, log=True)
    lr = trial.suggest_float("hp/lr", 1e-4, 3e-3, log=True)
    return {"lr": lr, "gamma": 1.0 - one_minus_gamma}


def _sample_dqn_common(trial: Any) -> dict[str, Any]:
    return {
        **_sample_lr_gamma(trial),
        "n_step": trial.suggest_categorical("hp/n_step", [1, 3, 5]),
        "train_batch_size": 2 ** trial.suggest_int("hp/log2_train_batch", 5, 8),
        "target_network_update_freq": trial.suggest_int("hp/target_update", 100, 5000, log=True),
        # (rl-zoo3's DQN on MountainCar, Acrobot and LunarLander trains at 64-128 replayed
        # steps per env step; CartPole's defaults at 8)
        "training_intensity": trial.suggest_categorical(
            "hp/training_intensity", [2, 4, 8, 16, 32, 64]
        ),
    }


def sample_dqn(trial: Any) -> dict[str, Any]:
    eps_steps = trial.suggest_int("hp/epsilon_decay_steps", 2000, 50_000, log=True)
    eps_final = trial.suggest_float("hp/epsilon_final", 0.01, 0.1, log=True)
    return {**_sample_dqn_common(trial), "epsilon": [(0, 1.0), (eps_steps, eps_final)]}


def sample_apex(trial: Any) -> dict[str, Any]:
    """DQN's space less its ε schedule, plus the priorities' α and the base of Ape-X's ε ladder
    (ε^(1 + 7i/(N-1)) for runner i of N; the one runner of the generic defaults acts at the base
    itself, 0.4: an env whose reward needs long committed runs, MountainCar's, may want less)."""
    return {
        **_sample_dqn_common(trial),
        "replay_buffer_config/alpha": trial.suggest_float("hp/priority_alpha", 0.3, 0.9),
        "exploration_epsilon_base": trial.suggest_float("hp/epsilon_base", 0.05, 0.7, log=True),
    }


def _sample_vtrace(trial: Any) -> dict[str, Any]:
    return {
        **_sample_lr_gamma(trial),
        "entropy_coeff": trial.suggest_categorical("hp/entropy_coeff", [0.0, 0.001, 0.01]),
        "vf_loss_coeff": trial.suggest_float("hp/vf_loss_coeff", 0.1, 1.0, log=True),
        "rollout_fragment_length": trial.suggest_int("hp/fragment", 16, 128, log=True),
        "train_batch_size_per_learner": trial.suggest_int("hp/train_batch", 128, 2048, log=True),
        "grad_clip": trial.suggest_categorical("hp/grad_clip", [10.0, 40.0, 100.0]),
        # The rewards the loss sees scaled (sweeps/algorithms/reward_scale.py): at 0.1 both
        # reached Acrobot's target and CartPole's sooner (results/gym/probes/, one seed each)
        "learner_config_dict/reward_scale": trial.suggest_float(
            "hp/reward_scale", 0.01, 1.0, log=True
        ),
        # A floor under the policy's entropy, in nats (sweeps/algorithms/entropy_target.py): the
        # guard against a policy that collapses onto one action before it finds the reward (as
        # on Acrobot: results/gym/before/). 0 is none; 0.3 is below the uniform entropy of any
        # Discrete space of 2 actions or more (ln 2 = 0.69).
        "learner_config_dict/entropy_target": trial.suggest_categorical(
            "hp/entropy_target", [0.0, 0.1, 0.3]
        ),
        # The learning rate scaled by how far each minibatch moves the policy from the one that
        # collected it (sweeps/algorithms/kl_lr.py, rl_games' rule): the other guard the issue
        # names. 0 is none; rl_games' PPO targets 0.008-0.016 (the lag of an asynchronous
        # learner counts here as movement).
        "learner_config_dict/lr_kl_target": trial.suggest_categorical(
            "hp/kl_target", [0.0, 0.01, 0.02]
        ),
    }


def sample_impala(trial: Any) -> dict[str, Any]:
    """The V-trace space plus the passes over each batch (``num_epochs``, RLlib's IMPALA
    default 1): on MinAtar Breakout IMPALA's defaults trained each env step once and its return
    stopped near 6 on every seed while APPO's, each batch trained 8 times, reached 10
    (results/gym/before/)."""
    return {**_sample_vtrace(trial), "num_epochs": trial.suggest_int("hp/passes", 1, 4)}


def sample_appo(trial: Any) -> dict[str, Any]:
    """The V-trace space plus APPO's clip, replay of each batch and target-network period (in
    units of N x K x train batch trained env steps: RLlib 2.60's APPOLearner; the paper
    suggests 0.125 to 4)."""
    return {
        **_sample_vtrace(trial),
        "clip_param": trial.suggest_float("hp/clip_param", 0.1, 0.4),
        "circular_buffer_iterations_per_batch": trial.suggest_categorical(
            "hp/iterations_per_batch", [2, 4, 8]
        ),
        "target_network_update_freq": trial.suggest_float("hp/target_update", 0.03, 2.0, log=True),
    }


SAMPLERS = {"dqn": sample_dqn, "apex": sample_apex, "impala": sample_impala, "appo": sample_appo}

# What a parameter added to the spaces after a study began stood at before it was drawn (the
# setting the runs of a trial drawn earlier ran with): a trial of such a study that is tried again
# goes on with it, so that the runs it finished and the values it records agree.
BEFORE_SEARCHED: dict[str, Any] = {
    "hp/reward_scale": 1.0,
    "hp/entropy_target": 0.0,
    "hp/kl_target": 0.0,
}

# ------------------------------------------------------------------------------------------------
# Sweep defaults (a sweep's budget; the benchmark sets its own)
# ------------------------------------------------------------------------------------------------

# 8 trials, ASHA rungs at 20k, 60k and 180k env steps (max 200k), at most 15 minutes, one env
# runner of 8 envs per trial; greedy evaluation of 10 episodes every iteration (played side by
# side: CartPole's 10 greedy episodes take well under a second).
DEFAULTS: dict[str, Any] = {
    "env": "CartPole-v1",
    "env_config": {},
    "target": None,
    "num_samples": 8,
    "stop_timesteps": 200_000,
    "grace_period": 20_000,
    "reduction_factor": 3,
    "time_budget_s": 900.0,
    "num_env_runners": 1,
    "num_envs_per_env_runner": 8,
    "eval_interval": 1,
    "eval_episodes": 10,
}
SMOKE: dict[str, Any] = {"num_samples": 1, "stop_timesteps": 500, "eval_episodes": 2}


def sweep(algo: str, doc: str) -> Sweep:
    """The sweep of ``sweeps/<algo>_gym.py`` (``doc``: its module docstring, the --help text):
    everything but the algorithm's name is this module's data."""
    return Sweep(
        name=f"{algo}_gym",
        algo=algo,
        workload=GYM,
        make_config=lambda args: make_config(algo, args),
        sample_params=SAMPLERS[algo],
        description=doc.split("\n")[0],
        doc=doc,
        defaults=DEFAULTS,
        smoke=SMOKE,
    )

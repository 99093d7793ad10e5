"""The workloads as RLlib config fragments, shared by every sweep.

``cabs(config, args)``, ``pong(config, args)`` and ``gym(config, args, env)`` set the env, env
runners, greedy evaluation, seeding and the suite's callbacks on any algorithm's config; a sweep
file adds only its algorithm's training settings. The two named workloads keep their extras (the
cab env's variants and exact optimum, Pong's Atari recipe); ``gym`` is every other Gymnasium env
(``envs/gym.py``) on the same path (``_common``), an ``ALE/...`` id taking Pong's recipe.
``PONG_DEFAULTS`` / ``PONG_SMOKE`` are the sweep defaults every Pong sweep shares. Envs themselves
live in ``envs/`` behind factories.
"""

from __future__ import annotations

import argparse
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.impala import IMPALAConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from sweeps.harness.callbacks import SuiteCallbacks

# Sweep defaults every Pong sweep starts from (a sweep file adds its own budget), sized for a
# 2-core CPU machine: one env runner (more with --num-env-runners on a bigger box), trials judged by
# the training return (the mean of the last 20 games), so periodic greedy evaluation is off
# (--eval-interval N turns it on: a greedy game is thousands of single-env steps); a checkpoint
# every 30 iterations (30 s in benchmark mode) rather than every 5; --smoke runs one trial of a few
# hundred frames.
PONG_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "reduction_factor": 3,
    "eval_interval": 0,
    "eval_episodes": 1,
    "checkpoint_freq": 30,
}
PONG_SMOKE: dict[str, Any] = {"num_samples": 1, "stop_timesteps": 400}


def _common(config: AlgorithmConfig, args: argparse.Namespace) -> AlgorithmConfig:
    gpus = args.num_gpus_per_learner
    return (
        _local_fallback(_bootstrapped_vtrace(config))
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
        )
        .learners(num_learners=args.num_learners, num_gpus_per_learner=gpus or 0)
        .evaluation(
            evaluation_interval=args.eval_interval or None,  # 0: greedy evaluation off
            evaluation_duration=args.eval_episodes,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config=AlgorithmConfig.overrides(explore=False, num_envs_per_env_runner=1),
        )
        .callbacks(SuiteCallbacks)
        # An env runner that dies is restarted (a trial that fails is retried by Tune from its
        # last checkpoint, --max-failures); RLlib's default 60 s delay would stall a short trial.
        .fault_tolerance(
            restart_failed_env_runners=True,
            max_num_env_runner_restarts=10,
            delay_between_env_runner_restarts_s=5.0,
        )
        .debugging(seed=args.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=20)
    )


def _bootstrapped_vtrace(config: AlgorithmConfig) -> AlgorithmConfig:
    """IMPALA and APPO (its subclass) learn with V-trace targets that keep the bootstrap value at
    each fragment's end (``sweeps/algorithms/vtrace.py``: RLlib 2.60's loss cancels it)."""
    if isinstance(config, IMPALAConfig):
        from sweeps.algorithms.vtrace import bootstrapped_learner

        config.learners(learner_class=bootstrapped_learner(config))
    return config


def _local_fallback(config: AlgorithmConfig) -> AlgorithmConfig:
    """IMPALA and APPO (its subclass) sample on the local env runner while no remote one is
    healthy, i.e. between a runner's death and its restart. That runner has no env unless asked
    for one, and the trial then failed ("doesn't have an env! Can't call `sample()`"; found by
    ``benchmarks/faults.py runners``). It gets one; it samples only in that gap."""
    if isinstance(config, IMPALAConfig):
        config.env_runners(create_env_on_local_worker=True)
    return config


def cabs(
    config: AlgorithmConfig,
    args: argparse.Namespace,
    *,
    masked_module: type | None = None,
    hiddens: tuple[int, ...] = (256, 256),
) -> AlgorithmConfig:
    """The cab env (``--variant``, ``--tm-seed``); ``masked_module`` is used on the request
    variant so that unavailable actions are never chosen."""
    from envs import env_id_for
    from envs.cabs import validate_env_config

    requests = args.variant == "requests"
    env_config = validate_env_config({"tm_seed": args.tm_seed, "requests": requests})
    config = _common(config, args).environment(env_id_for(args.variant), env_config=env_config)
    model = DefaultModelConfig(fcnet_hiddens=list(hiddens), fcnet_activation="relu")
    if args.variant == "requests" and masked_module is not None:
        return config.rl_module(
            rl_module_spec=RLModuleSpec(module_class=masked_module, model_config=model)
        )
    return config.rl_module(model_config=model)


def pong(config: AlgorithmConfig, args: argparse.Namespace, **model: Any) -> AlgorithmConfig:
    """Atari Pong preprocessed in C++ (``envs/pong.py``: 42x42 grayscale, frame-skip 4, stack 4):
    each env runner steps all its games in one ale-py vector env (the vector entry point), and
    the model is RLlib's classic small Atari net for 42x42 frames (``PONG_MODEL``; a larger
    ``dim`` in the env config takes the 64x64 net). Rewards are clipped for training only."""
    from envs import PONG
    from envs.pong import PONG_DEFAULTS as ENV_DEFAULTS

    config = _common(config, args).environment(PONG, clip_rewards=True)
    config.env_runners(gym_env_vectorize_mode="vector_entry_point")
    dim = {**ENV_DEFAULTS, **(config.env_config or {})}["dim"]
    return _atari_module(config, {**pong_model(dim), **model})


def flatten_observations(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    """The env-to-module connector of an env whose observations are not a vector: RLlib's
    ``FlattenObservations`` (Discrete -> one-hot, Dict/Tuple/MultiDiscrete and n-d Boxes
    flattened into one vector). It rewrites the observations in the episodes, so the learners
    and Ape-X's replay (which stores episodes) see the flat ones too. A module-level function:
    the config is pickled to the env runners."""
    from ray.rllib.connectors.env_to_module import FlattenObservations

    return FlattenObservations()


def gym(
    config: AlgorithmConfig,
    args: argparse.Namespace,
    env: Any,
    *,
    hiddens: tuple[int, ...] = (64, 64),
) -> AlgorithmConfig:
    """Any other Gymnasium env (``env``: ``envs.gym.GymEnv``, resolved and checked from
    ``--env`` / ``--env-config``): a 1-D Box observation goes to an MLP of ``hiddens`` as it is,
    any other observation through ``flatten_observations`` (one-hot for Discrete) to the same
    MLP; an ALE id takes Pong's recipe (ale-py's C++ vector env, 42x42 frames, RLlib's small
    Atari net, rewards clipped for training). Greedy evaluation plays its ``--eval-episodes``
    side by side in one vector env (one forward pass for all of them, not one per episode)."""
    config = _common(config, args).environment(args.env, env_config=dict(args.env_config))
    config.evaluation(
        evaluation_config=AlgorithmConfig.overrides(
            explore=False, num_envs_per_env_runner=args.eval_episodes
        )
    )
    if env.kind == "atari":
        from envs.pong import PONG_DEFAULTS as ENV_DEFAULTS

        config.environment(clip_rewards=True)
        config.env_runners(gym_env_vectorize_mode="vector_entry_point")
        dim = {**ENV_DEFAULTS, **args.env_config}["dim"]
        return _atari_module(config, pong_model(dim))
    if not env.vector_observations:
        config.env_runners(env_to_module_connector=flatten_observations)
    model = DefaultModelConfig(fcnet_hiddens=list(hiddens), fcnet_activation="relu")
    return config.rl_module(model_config=model)


# RLlib's classic small Atari net for 42x42 frames (42 -> 21 -> 11 -> 1x1x256), a third of the
# 64x64 net's inference cost and a sixth of its training cost on a CPU; the value function
# shares the encoder.
PONG_MODEL: dict[str, Any] = {
    "conv_filters": [[16, 4, 2], [32, 4, 2], [256, 11, 1, "valid"]],
    "conv_activation": "relu",
    "head_fcnet_hiddens": [256],
    "vf_share_layers": True,
}


def _atari_module(config: AlgorithmConfig, model: dict[str, Any]) -> AlgorithmConfig:
    """The algorithm's default RLModule with ``model`` as its CNN, its padding computed without
    copies (``sweeps/algorithms/fast_cnn.py``: the same network, the same outputs)."""
    from sweeps.algorithms.fast_cnn import fused_module_class

    return config.rl_module(
        model_config=DefaultModelConfig(**model),
        rl_module_spec=RLModuleSpec(module_class=fused_module_class(config)),
    )


def pong_model(dim: int) -> dict[str, Any]:
    """The model config for ``dim x dim`` frames: ``PONG_MODEL`` at 42, else RLlib's four
    stride-2 layers (its tuned 64x64 Pong net)."""
    if dim == 42:
        return dict(PONG_MODEL)
    return {**PONG_MODEL, "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]]}

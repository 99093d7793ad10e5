"""What every workload's RLlib config shares, and the Atari model: ``common(config, args)``
sets the env runners, learners, greedy evaluation, fault tolerance, seeding and the suite's
callbacks on any algorithm's config (IMPALA and APPO also learn with bootstrapped V-trace targets
and keep a local env for the gap while a runner restarts); ``atari_module`` and ``pong_model``
are the CNN of the Atari workloads (``sweeps/workloads/pong.py`` and an ``ALE/...`` id in
``sweeps/workloads/gym.py``). Each workload module adds its env (``Workload.configure``); a sweep
file adds only its algorithm's training settings. Imported lazily: it imports RLlib.
"""

from __future__ import annotations

import functools
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.impala import IMPALAConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from sweeps.harness.callbacks import SuiteCallbacks
from sweeps.harness.eval_share import evaluate_within_share
from sweeps.harness.settings import Settings


def common(
    config: AlgorithmConfig, args: Settings, *, episodes_one_length: bool = False
) -> AlgorithmConfig:
    """The settings every workload shares, from the sweep's flags. ``episodes_one_length``: the
    env's episodes all have one length, so RLlib's own evaluation counts them without leaning
    to the short ones (``eval_share.evaluate_within_share``)."""
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
            # The episodes side by side in one vector env: one batched forward pass a step (on
            # cabs, five month-long episodes played one after another took a quarter of the
            # main job's wall-clock: results/cabs/OVERHEAD.md)
            evaluation_config=AlgorithmConfig.overrides(
                explore=False, num_envs_per_env_runner=args.eval_episodes
            ),
            # Within --eval-share of the training clock (sweeps/harness/eval_share.py)
            custom_evaluation_function=_within_share(args, episodes_one_length),
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


def _within_share(args: Settings, episodes_one_length: bool) -> Any:
    """The periodic evaluation, every ``--eval-interval`` iterations where it keeps to
    ``--eval-share`` of the training clock (0: always), and counted; None where it is off."""
    if not args.eval_interval:
        return None
    return functools.partial(
        evaluate_within_share, share=args.eval_share, first_episodes=not episodes_one_length
    )


def _bootstrapped_vtrace(config: AlgorithmConfig) -> AlgorithmConfig:
    """IMPALA and APPO (its subclass) learn with V-trace targets that keep the bootstrap value at
    each fragment's end, and the suite's other learner extras (``algorithms/pg_learner.py``)."""
    if isinstance(config, IMPALAConfig):
        from sweeps.algorithms.pg_learner import learner_class

        config.learners(learner_class=learner_class(config))
    return config


def _local_fallback(config: AlgorithmConfig) -> AlgorithmConfig:
    """IMPALA and APPO (its subclass) sample on the local env runner while no remote one is
    healthy, i.e. between a runner's death and its restart. That runner has no env unless asked
    for one, and the trial then failed ("doesn't have an env! Can't call `sample()`"; found by
    ``benchmarks/faults.py runners``). It gets one; it samples only in that gap."""
    if isinstance(config, IMPALAConfig):
        config.env_runners(create_env_on_local_worker=True)
    return config


def flatten_observations(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    """The env-to-module connector of an env whose observations are not a vector: RLlib's
    ``FlattenObservations`` (Discrete -> one-hot, Dict/Tuple/MultiDiscrete and n-d Boxes
    flattened into one vector). It rewrites the observations in the episodes, so the learners
    and Ape-X's replay (which stores episodes) see the flat ones too. A module-level function:
    the config is pickled to the env runners."""
    from ray.rllib.connectors.env_to_module import FlattenObservations

    return FlattenObservations()


# The suite's Atari net for 42x42 frames (42 -> 13x13x16 -> 5x5x32 -> 256): DQN, Ape-X and APPO
# learn Pong on it (IMPALA keeps RLLIB_42_FILTERS: sweeps/impala_pong.py); the value function
# shares the encoder. Its 5x5 map before the dense layer is what makes Pong learnable: on the
# cheaper 3x3 map of ``CHEAP_42_FILTERS`` DQN never learned and IMPALA's and APPO's policies
# stayed uniform for millions of env steps on some seeds, where on this net APPO's rose within
# ~1M env steps on every seed tried (results/pong/candidates/CURVES.md: pong-dqn-*,
# pong-impala-net-s0, pong-appo-net-s*; results/pong/REPORT.md). About a third of the training
# cost of RLlib's classic 42x42 net (``RLLIB_42_FILTERS``, whose 11x11 map is the costly part).
PONG_42_FILTERS: list[list[Any]] = [[16, 6, 3, "valid"], [32, 4, 2, "valid"], [256, 5, 1, "valid"]]
PONG_MODEL: dict[str, Any] = {
    "conv_filters": PONG_42_FILTERS,
    "conv_activation": "relu",
    "head_fcnet_hiddens": [256],
    "vf_share_layers": True,
}
# The 2013 DQN net's layers (Mnih et al.: 16 8x8 filters stride 4, 32 4x4 stride 2, 256 units;
# 42 -> 9x9x16 -> 3x3x32), the dense layer as a 3x3 "valid" conv: a sixth of RLlib's classic
# net's training cost on one CPU core, but too coarse to learn Pong here reliably (above). The
# suite's Pong net before PONG_42_FILTERS: --set 'model_config={"conv_filters": [[16, 8, 4,
# "valid"], [32, 4, 2, "valid"], [256, 3, 1, "valid"]]}' brings it back.
CHEAP_42_FILTERS: list[list[Any]] = [[16, 8, 4, "valid"], [32, 4, 2, "valid"], [256, 3, 1, "valid"]]
# RLlib's classic small Atari net for 42x42 frames (42 -> 21 -> 11 -> 1x1x256): --set
# 'model_config={"conv_filters": [[16, 4, 2], [32, 4, 2], [256, 11, 1, "valid"]]}'.
RLLIB_42_FILTERS: list[list[Any]] = [[16, 4, 2], [32, 4, 2], [256, 11, 1, "valid"]]


def atari_module(config: AlgorithmConfig, model: dict[str, Any]) -> AlgorithmConfig:
    """The algorithm's default RLModule with ``model`` as its CNN, its padding computed without
    copies (``sweeps/algorithms/fast_cnn.py``: the same network, the same outputs), and the env's
    frames as bytes (``obs_dtype="uint8"``, ``envs/pong.py``), which that module scales to the
    float32 values the env would have made: a quarter of the bytes in episodes, replay and
    transport. An env config that names its own ``obs_dtype`` keeps it."""
    from envs.pong import BYTE_FRAMES
    from sweeps.algorithms.fast_cnn import fused_module_class

    config.environment(env_config={"obs_dtype": BYTE_FRAMES, **(config.env_config or {})})
    return config.rl_module(
        model_config=DefaultModelConfig(**model),
        rl_module_spec=RLModuleSpec(module_class=fused_module_class(config)),
    )


def pong_model(dim: int) -> dict[str, Any]:
    """The model config for ``dim x dim`` frames: ``PONG_MODEL`` at 42, else RLlib's four
    stride-2 layers (its tuned 64x64 Pong net) with ``PONG_MODEL``'s heads."""
    if dim == 42:
        return dict(PONG_MODEL)
    return {**PONG_MODEL, "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]]}

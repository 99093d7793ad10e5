"""The two workloads as RLlib config fragments, shared by every sweep.

``cabs(config, args)`` and ``pong(config, args)`` set the env, env runners, greedy evaluation,
seeding and the suite's callbacks on any algorithm's config; a sweep file adds only its
algorithm's training settings. ``PONG_DEFAULTS`` / ``PONG_SMOKE`` are the sweep defaults every
Pong sweep shares. Envs themselves live in ``envs/`` behind factories.
"""

from __future__ import annotations

import argparse
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from sweeps.callbacks import SuiteCallbacks

# Sweep defaults every Pong sweep starts from (a sweep file adds its own budget): sized up on a GPU
# box with --num-env-runners, one greedy episode per evaluation (a Pong episode is thousands of
# frames); --smoke runs one trial of a few hundred frames.
PONG_DEFAULTS: dict[str, Any] = {"num_env_runners": 1, "reduction_factor": 3, "eval_episodes": 1}
PONG_SMOKE: dict[str, Any] = {"num_samples": 1, "stop_timesteps": 400}


def _common(config: AlgorithmConfig, args: argparse.Namespace) -> AlgorithmConfig:
    gpus = args.num_gpus_per_learner
    return (
        config.env_runners(
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


def pong(
    config: AlgorithmConfig,
    args: argparse.Namespace,
    *,
    stack_in_connectors: bool = False,
    **model: Any,
) -> AlgorithmConfig:
    """Atari Pong with RLlib's preprocessing (64x64 grayscale, frame-skip 4, stack 4).

    ``stack_in_connectors``: the env sends one frame per step and RLlib's frame-stacking
    connectors stack four, on the env runner for inference and on the learner from the
    episodes (as RLlib's tuned ``pong_appo.py``): a quarter of the bytes per step travel from
    runners to the learner. For algorithms whose learner connector builds the train batch
    from episodes (IMPALA, APPO); DQN and Ape-X replay stacked frames."""
    from envs import PONG

    env_config = {"framestack": 0} if stack_in_connectors else {}
    config = _common(config, args).environment(PONG, env_config=env_config, clip_rewards=True)
    if stack_in_connectors:
        config.env_runners(env_to_module_connector=_stack_frames_env_to_module)
        config.training(learner_connector=_stack_frames_learner)
    model_config = DefaultModelConfig(
        **{
            "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]],
            "conv_activation": "relu",
            "head_fcnet_hiddens": [256],
            "vf_share_layers": True,
            **model,
        }
    )
    return config.rl_module(model_config=model_config)


PONG_FRAMES = 4  # frames stacked per observation


def _stack_frames_env_to_module(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule

    return FrameStackingEnvToModule(num_frames=PONG_FRAMES)


def _stack_frames_learner(input_observation_space: Any, input_action_space: Any) -> Any:
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner

    return FrameStackingLearner(num_frames=PONG_FRAMES)

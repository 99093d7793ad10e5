"""Tests of the Pong factory: RLlib's Atari preprocessing over ale-py's Pong."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.pong import make_pong, validate_pong_config


def test_pong_observations_are_stacked_64x64_frames() -> None:
    env = make_pong()
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64, 64, 4) and obs.dtype == np.float32
    assert env.observation_space.shape == (64, 64, 4)
    assert env.action_space == gym.spaces.Discrete(6)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert obs.shape == (64, 64, 4) and obs.dtype == np.float32
        assert obs in env.observation_space
        assert reward in (-1.0, 0.0, 1.0) and not terminated and not truncated
    env.close()


def test_pong_dim_84_through_the_registry() -> None:
    envs.register_envs()
    env = gym.make(envs.PONG, dim=84)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (84, 84, 4)
    env.close()


@pytest.mark.parametrize(
    "config, key",
    [
        ({"dim": "64"}, "dim"),
        ({"frame_stack": 4}, "frame_stack"),
        ({"repeat_action_probability": 2}, "repeat_action_probability"),
    ],
)
def test_bad_pong_config_raises(config: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        validate_pong_config(config)


def test_framestack_0_leaves_stacking_to_the_connectors() -> None:
    env = make_pong(framestack=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64, 64, 1) and env.observation_space.shape == (64, 64, 1)
    env.close()
    with pytest.raises(ValueError, match="framestack"):
        validate_pong_config({"framestack": -1})


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_vtrace_pong_stacks_frames_in_connectors(algo: str) -> None:
    """IMPALA and APPO send one frame per env step (a quarter of the bytes runners ship) and
    stack four in RLlib's connectors: the module still sees (64, 64, 4); DQN and Ape-X, which
    replay stacked frames, keep the env's stacking."""
    import importlib

    from sweeps.cli import build_parser

    envs.register_envs()
    module = importlib.import_module(f"sweeps.{algo}_pong")
    config = module.make_config(build_parser(module.SWEEP).parse_args([]))
    assert config.env_config == {"framestack": 0}
    env = make_pong(config.env_config)
    pipeline = config.build_env_to_module_connector(env=env, spaces=None, device=None)
    assert pipeline.observation_space.shape == (64, 64, 4)
    env.close()
    for other in ("dqn", "apex"):
        module = importlib.import_module(f"sweeps.{other}_pong")
        assert module.make_config(build_parser(module.SWEEP).parse_args([])).env_config == {}

"""Any other Gymnasium env (``envs/gym.py``): a registered id or an entry point
``package.module:Name``, with ``--env-config`` and ``--target``, run by ``sweeps/<algo>_gym.py``.

The env is built and checked against the algorithm before Ray starts; its targets are
``--target`` or the spec's reward_threshold (none: the report shows final returns and curves),
reached by the greedy return; each run measures a uniformly random policy's return, which the
report shows as the reference. In the run record the env is named as given and its config is
its "variant" (another config is another workload). An ``ALE/...`` id takes Pong's recipe.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import TYPE_CHECKING, Any

from sweeps.workloads.base import EnvFlags, Workload

if TYPE_CHECKING:
    from sweeps.harness.settings import Settings

# The random-policy reference of a generic env: episodes, seeded from this seed on.
REFERENCE_EPISODES = 100
REFERENCE_SEED = 0


def variant_of(env_config: dict) -> str | None:
    """An env config as its "variant" in the record and the report (None: defaults)."""
    return json.dumps(env_config, sort_keys=True, separators=(",", ":")) if env_config else None


class Gym(Workload):
    name = "gym"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from sweeps.harness.cli import add_gym_arguments

        add_gym_arguments(parser.add_argument_group("env"))

    def check(self, algo: str, args: Settings) -> None:
        from envs.gym import check, resolve

        check(algo, resolve(args.env, args.env_config))

    def episodes_to_confirm(self, args: Settings) -> int:
        """An ALE game's check plays 10 full games, as Pong's (each is thousands of steps)."""
        from envs.gym import kind_of

        return 10 if kind_of(args.env) == "atari" else self.confirm_episodes

    def env_names(self, args: Settings) -> tuple[str, ...]:
        return (args.env,)

    def configure(self, config: Any, args: Settings, *, hiddens: tuple[int, ...] = (64, 64)) -> Any:
        """A 1-D Box observation goes to an MLP of ``hiddens`` as it is, any other observation
        through ``rllib_config.flatten_observations`` (one-hot for Discrete) to the same MLP; an
        ALE id takes Pong's recipe (ale-py's C++ vector env, 42x42 frames, RLlib's small Atari
        net, rewards clipped for training). Greedy evaluation plays its ``--eval-episodes`` side
        by side in one vector env (one forward pass for all of them, not one per episode)."""
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        from envs.gym import resolve
        from sweeps.workloads.rllib_config import (
            atari_module,
            common,
            flatten_observations,
            pong_model,
        )

        env = resolve(args.env, args.env_config)
        config = common(config, args).environment(args.env, env_config=dict(args.env_config))
        if env.kind == "atari":
            from envs.pong import PONG_DEFAULTS as ENV_DEFAULTS

            config.environment(clip_rewards=True)
            config.env_runners(gym_env_vectorize_mode="vector_entry_point")
            dim = {**ENV_DEFAULTS, **args.env_config}["dim"]
            return atari_module(config, pong_model(dim))
        if not env.vector_observations:
            config.env_runners(env_to_module_connector=flatten_observations)
        model = DefaultModelConfig(fcnet_hiddens=list(hiddens), fcnet_activation="relu")
        return config.rl_module(model_config=model)

    def env_spec(self, args: Settings) -> tuple[str, dict[str, Any]]:
        return args.env, dict(args.env_config)

    def atari(self, args: Settings) -> bool:
        from envs.gym import kind_of

        return kind_of(args.env) == "atari"

    def targets(self, args: EnvFlags) -> list[float]:
        from envs.gym import targets

        return targets(args.env, args.env_config, args.target)

    def record_fields(self, args: Settings) -> dict[str, Any]:
        """The env as named, its config as the variant, and a uniformly random policy's mean
        return on ``REFERENCE_EPISODES`` seeded episodes (fewer when episodes are long:
        ``envs.gym.random_returns`` caps steps and seconds), measured here, in the run; the
        exact optimum where the env publishes its model (the toy-text envs), else None."""
        from envs import exact_optimum
        from envs.gym import random_returns

        random = random_returns(args.env, args.env_config, REFERENCE_EPISODES, REFERENCE_SEED)
        return {
            "env": args.env,
            "variant": variant_of(args.env_config),
            "optimum": exact_optimum(args.env, args.env_config),
            "references": {"random": random},
        }

    def dry_run_lines(self, args: EnvFlags) -> list[str]:
        """What the env is, how it is fed to the network, and its targets."""
        from envs.gym import resolve

        env = resolve(args.env, args.env_config)
        feed = (
            "Atari frames (Pong's recipe)"
            if env.kind == "atari"
            else "a vector to the MLP"
            if env.vector_observations
            else "flattened (Discrete one-hot) to the MLP"
        )
        targets = self.targets(args)
        return [
            f"[dry-run] env {env.name} ({env.kind}), config {json.dumps(args.env_config)}: "
            f"observations {env.observation_space} -> {feed}; actions {env.action_space}",
            "[dry-run] targets (greedy return): "
            + (
                ", ".join(f"{t:g}" for t in targets)
                if targets
                else "none (no --target, no reward_threshold in the env's spec): the report "
                "shows final returns and curves"
            )
            + "; a random policy's return is measured at the start (the report's reference)",
        ]

    def make_raw_env(self, args: Settings, num_envs: int | None = None) -> Any:
        """The env as named, with its config: one env (an ALE id: one game)."""
        from envs.gym import make

        return make(args.env, args.env_config)

    def add_benchmark_arguments(self, args: EnvFlags, algos: list[str]) -> None:
        """The env built once and checked against every algorithm asked for."""
        from envs.gym import check, resolve

        if args.variant is not None:
            raise ValueError(
                f"--variant: {args.env} has no variants (only the cab env has); pass the env's "
                "own settings with --env-config '{...}'"
            )
        args.env_config = args.env_config or {}
        check(algos, resolve(args.env, args.env_config))

    def benchmark_stem(self, args: EnvFlags) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", args.env).strip("-.")  # ALE/Breakout-v5, a:B

    def sweep_flags(self, args: EnvFlags) -> list[str]:
        flags = ["--env", args.env, "--env-config", json.dumps(args.env_config)]
        if args.target:
            flags += ["--target", *map(str, args.target)]
        return flags


GYM = Gym()

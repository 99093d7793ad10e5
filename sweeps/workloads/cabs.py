"""The cab workload: the SuperCabs taxi MDP (``envs/cabs.py``), base and request variants, judged
against its exact optimum (``envs/optimum.py``).

Flags ``--variant`` (base: the seed article's env; requests: the full MDP, actions masked) and
``--tm-seed`` (the city's travel-time matrix); targets are fractions of the exact optimum, reached
by the greedy return; every trial's final policy plays 100 held-out greedy episodes; the report
computes the random, heuristic and optimal policies' returns on the same held-out episodes.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import pandas as pd

from sweeps.workloads.base import EnvFlags, Workload

if TYPE_CHECKING:
    from sweeps.harness.settings import Settings

VARIANTS = ("base", "requests")


class Cabs(Workload):
    name = "cabs"
    final_episodes = 100  # a second or two per trial
    # No cap on periodic evaluation: five month-long episodes side by side cost 15-18% of the main
    # job's training clock (results/cabs/OVERHEAD.md), and a cap would thin only the first
    # iterations' evaluations, the ones ASHA's first rung judges.
    eval_share = 0.0
    has_targets = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from sweeps.harness.cli import count

        c = parser.add_argument_group("cab env")
        c.add_argument(
            "--variant",
            choices=list(VARIANTS),
            help="base: the seed article's env; requests: the full SuperCabs MDP (masked)",
        )
        c.add_argument("--tm-seed", type=count(0), help="seed of the city's travel-time matrix")

    def configure(
        self,
        config: Any,
        args: Settings,
        *,
        masked_module: type | None = None,
        hiddens: tuple[int, ...] = (256, 256),
    ) -> Any:
        """The cab env (``--variant``, ``--tm-seed``) with an MLP of ``hiddens``;
        ``masked_module`` is used on the request variant so that unavailable actions are never
        chosen."""
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        from sweeps.workloads.rllib_config import common

        requests = args.variant == "requests"
        env_id, env_config = self.env_spec(args)
        # (a cab episode is a month, whatever the policy: RLlib's own evaluation counts them)
        config = common(config, args, episodes_one_length=True)
        config.environment(env_id, env_config=env_config)
        model = DefaultModelConfig(fcnet_hiddens=list(hiddens), fcnet_activation="relu")
        if requests and masked_module is not None:
            return config.rl_module(
                rl_module_spec=RLModuleSpec(module_class=masked_module, model_config=model)
            )
        return config.rl_module(model_config=model)

    def env_spec(self, args: Settings) -> tuple[str, dict[str, Any]]:
        from envs import env_id_for
        from envs.cabs import validate_env_config

        requests = args.variant == "requests"
        return env_id_for(args.variant), validate_env_config(
            {"tm_seed": args.tm_seed, "requests": requests}
        )

    def action_mask(self, args: Settings) -> tuple[int, int] | None:
        """The request variant's observation ends in the mask of the available actions."""
        if args.variant != "requests":
            return None
        from envs.cabs import MASK_START, NUM_ACTIONS

        return MASK_START, MASK_START + NUM_ACTIONS

    def targets(self, args: EnvFlags) -> list[float]:
        from envs.optimum import targets

        return targets(args.variant, args.tm_seed)

    def record_fields(self, args: Settings) -> dict[str, Any]:
        from envs import env_id_for, exact_optimum

        optimum = exact_optimum(env_id_for(args.variant), {"tm_seed": args.tm_seed})
        return {"env": self.name, "variant": args.variant, "optimum": optimum, "references": None}

    def add_benchmark_arguments(self, args: EnvFlags, algos: list[str]) -> None:
        named = "{flag}: for a Gymnasium env; --env {env} is a named workload"
        self.refuse(args, ("env_config", "target"), named)
        args.variant = args.variant or "base"
        args.tm_seed = 0  # the benchmark runs the default city

    def benchmark_stem(self, args: EnvFlags) -> str:
        return f"cabs-{args.variant}"

    def sweep_flags(self, args: EnvFlags) -> list[str]:
        return ["--variant", args.variant]

    def make_raw_env(self, args: Settings, num_envs: int | None = None) -> Any:
        from envs.cabs import CabsEnv

        return CabsEnv({"requests": args.variant == "requests"})

    def computes_references(self) -> bool:
        return True

    def reference_rows(
        self, runs: pd.DataFrame, episodes: int, seed: int
    ) -> tuple[pd.DataFrame | None, str | None]:
        """Random / heuristic / optimal mean returns for every variant and tm_seed in ``runs``,
        each policy played on the held-out episodes: the optimal policy's mean there is the
        denominator of every held-out % of optimum; ``exact_optimum`` is the DP value from the
        uniform start. None and a note when ``envs.policies`` is unavailable or fails."""
        variants = zip(runs["variant"], runs["tm_seed"], strict=True)
        pairs = sorted({(v or "base", 0 if pd.isna(t) else int(t)) for v, t in variants})
        try:
            from envs.optimum import optimum_value
            from envs.policies import reference_episode_returns as compute
        except ImportError as err:
            return None, f"reference rows omitted: envs.policies unavailable ({err})"
        rows = []
        for variant, tm_seed in pairs:
            config = {"tm_seed": tm_seed, "requests": variant == "requests"}
            try:
                ref = compute(config, episodes, seed)
                exact = float(optimum_value(variant, tm_seed=tm_seed))
            except Exception as err:  # a broken reference must not lose the report
                return None, f"reference rows omitted: references of {variant!r} failed: {err}"
            means = {name: float(sum(v) / len(v)) for name, v in ref.items()}
            rows.append(
                {
                    "variant": variant,
                    "tm_seed": tm_seed,
                    **means,
                    "episodes": episodes,
                    "seed": seed,
                    "exact_optimum": exact,
                }
            )
        return pd.DataFrame(rows), None


CABS = Cabs()

"""The benchmark on a family of Gymnasium envs, and on two held out: do the defaults travel?

Each env is one benchmark, run one after another. The generic defaults
(``sweeps/gym_family.py``) were tuned on CartPole-v1 alone, and a user's env is rarely CartPole:
they are to be tuned on a family of envs of different kinds (dense and sparse rewards, short and
long episodes, vector, one-hot and image observations) and judged on envs they never saw.
``TUNING`` and ``HELD_OUT`` below are that family, as data: each env's id, its target (the greedy
return that counts as solved, and where that figure comes from) and its budget (training seconds
per run on a 2-core machine). The held-out envs are never run while tuning: their results are
reported apart.

How to run
----------
    python -m sweeps.env_family --dry-run                  # the envs, targets, budgets, commands
    python -m sweeps.env_family --algos dqn,apex,impala,appo,sb3-dqn --benchmark-seeds 3
    python -m sweeps.env_family --held-out --algos dqn,apex,impala,appo,sb3-dqn --benchmark-seeds 3

Each env is ``python -m sweeps.benchmark --env <id> --target <target> --stop-train-time-s
<budget>`` in ``<storage-path>/<name>-<env>`` (the printed commands). The same command run again
reuses every finished run, so an interrupted family goes on where it stopped. LunarLander (Box2D)
and the MinAtar games need the ``family`` extra: ``pip install -e ".[family]"``; the family
checks every env it is asked for before it runs any.

To tune one algorithm's defaults on the tuning envs (an Optuna study whose objective is the
(env, seed) pairs at their target, then the time): ``python -m benchmarks.family_tune``.

Results to expect
-----------------
One benchmark report per env, in its folder (``report: ...`` in the output); all of them in one
report, with a table across the envs and the held-out ones apart: ``python -m analysis report
<the folders> --held-out FrozenLake-v1 MinAtar/SpaceInvaders-v1 --out results/gym``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeps.harness.cli import count, positive_float
from sweeps.harness.errors import OneLineErrorParser

INSTALL = 'pip install -e ".[family]"'
SPEC = "its spec's reward_threshold"
# MinAtar's games have no reward_threshold: a return well above a random policy's, to be checked
# against the family's first runs (the single-process baseline's reach) and revised there.
PROVISIONAL = "provisional: well above a random policy's, to be checked against the first runs"
# Taxi-v3's reward_threshold (8) is above its optimal policy's expected return (7.93, exactly:
# envs.gym.tabular_optimum): only luck in the episodes played can reach it. Its target is 95% of
# the optimum instead, as the cab env's.
OF_OPTIMUM = "95% of the exact optimum 7.93 (value iteration; its reward_threshold 8 is above it)"


@dataclass(frozen=True)
class FamilyEnv:
    """One env of the family: what ``python -m sweeps.benchmark`` is given for it."""

    env: str  # a Gymnasium id
    target: float  # the greedy return that counts as solved
    target_from: str  # where that figure comes from
    budget_s: float  # training seconds per run (each algorithm, each seed), 2-core machine
    kind: str  # what it adds to the family
    env_config: Mapping[str, Any] = field(default_factory=dict)
    extra: bool = False  # needs the ``family`` install extra

    @property
    def slug(self) -> str:
        """The env's part of its benchmark folder's name."""
        return re.sub(r"[^A-Za-z0-9]+", "-", self.env).strip("-").lower()

    def benchmark_argv(self, name: str, scale: float, passed: Sequence[str]) -> list[str]:
        """``python -m sweeps.benchmark``'s arguments for this env."""
        argv = ["--env", self.env, "--target", f"{self.target:g}"]
        if self.env_config:
            argv += ["--env-config", json.dumps(dict(self.env_config), sort_keys=True)]
        budget = f"{self.budget_s * scale:g}"
        return [*argv, "--stop-train-time-s", budget, "--name", f"{name}-{self.slug}", *passed]


TUNING: tuple[FamilyEnv, ...] = (
    FamilyEnv("CartPole-v1", 475, SPEC, 120, "classic control: dense reward, the old defaults'"),
    FamilyEnv("Acrobot-v1", -100, SPEC, 300, "classic control: -1 a step until the goal"),
    FamilyEnv("MountainCar-v0", -110, SPEC, 600, "classic control: exploration-hard"),
    FamilyEnv(
        "LunarLander-v3",
        200,
        SPEC,
        900,
        "Box2D: shaped reward, episodes up to 1,000 steps",
        extra=True,
    ),
    FamilyEnv("Taxi-v3", 7.5, OF_OPTIMUM, 300, "toy text: Discrete observations (one-hot, 500)"),
    FamilyEnv("MinAtar/Breakout-v1", 10, PROVISIONAL, 1200, "image: 10x10x4 frames", extra=True),
)
HELD_OUT: tuple[FamilyEnv, ...] = (
    FamilyEnv(
        "FrozenLake-v1",
        1.0,
        "the goal reached (the only reward; deterministic with is_slippery false)",
        120,
        "toy text: reward only at the goal",
        env_config={"is_slippery": False},
    ),
    FamilyEnv(
        "MinAtar/SpaceInvaders-v1", 30, PROVISIONAL, 1200, "image: 10x10x6 frames", extra=True
    ),
)
FAMILY = {e.env: e for e in (*TUNING, *HELD_OUT)}


def env_list(text: str) -> list[str]:
    """``--envs``: comma-separated env ids."""
    return [t.strip() for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser.of_command("python -m sweeps.env_family", __doc__)
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--envs",
        type=env_list,
        help=f"comma-separated, of {','.join(FAMILY)} (default: the tuning envs)",
    )
    held_out = ",".join(e.env for e in HELD_OUT)
    which.add_argument("--held-out", action="store_true", help=f"the held-out envs: {held_out}")
    p.add_argument("--name", default="family", help="folder prefix (default: %(default)s)")
    p.add_argument(
        "--budget-scale",
        type=positive_float,
        default=1.0,
        help="each env's budget times this (a short probe: 0.1; default: %(default)s)",
    )
    p.add_argument("--algos", help="passed to the benchmark (default: its own)")
    p.add_argument("--benchmark-seeds", type=count(1), help="passed to the benchmark")
    p.add_argument("--seed", type=count(0), help="passed to the benchmark")
    p.add_argument("--storage-path", help="passed to the benchmark (default: its own)")
    p.add_argument("--dry-run", action="store_true", help="each env's benchmark --dry-run")
    return p


def chosen(names: Sequence[str] | None, held_out: bool) -> list[FamilyEnv]:
    """The envs asked for (``--envs``, ``--held-out``, else the tuning envs); a ValueError for
    one not in the family."""
    if held_out:
        return list(HELD_OUT)
    if not names:
        return list(TUNING)
    unknown = [e for e in names if e not in FAMILY]
    if unknown:
        raise ValueError(f"--envs: not in the family: {', '.join(unknown)}")
    return [FAMILY[e] for e in names]


def missing(envs: Sequence[FamilyEnv]) -> list[str]:
    """The envs that cannot be built here, each with its reason (one line)."""
    from envs.gym import resolve

    out = []
    for e in envs:
        try:
            resolve(e.env, e.env_config)
        except ValueError as err:
            hint = f" (install the family extra: {INSTALL})" if e.extra else ""
            out.append(f"{e.env}: {err}{hint}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from sweeps import benchmark

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        envs = chosen(args.envs, args.held_out)
    except ValueError as e:
        parser.error(str(e))
    problems = missing(envs)
    if problems:
        parser.error("cannot build " + "; ".join(problems))
    passed = [
        *(["--algos", args.algos] if args.algos else []),
        *(["--benchmark-seeds", str(args.benchmark_seeds)] if args.benchmark_seeds else []),
        *(["--seed", str(args.seed)] if args.seed is not None else []),
        *(["--storage-path", args.storage_path] if args.storage_path else []),
        *(["--dry-run"] if args.dry_run else []),
    ]
    failed = []
    for k, e in enumerate(envs, start=1):
        bench_argv = e.benchmark_argv(args.name, args.budget_scale, passed)
        print(
            f"[family] ({k}/{len(envs)}) {e.env} ({e.kind}): target {e.target:g} "
            f"({e.target_from}), {e.budget_s * args.budget_scale:g} s per run: "
            "python -m sweeps.benchmark " + " ".join(bench_argv),
            flush=True,
        )
        if benchmark.main(bench_argv) != 0:
            failed.append(e.env)
    if failed:
        print(f"[family] not finished: {', '.join(failed)} (the same command goes on)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

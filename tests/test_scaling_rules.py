"""Recipes that say how they scale (``Sweep.scaling``): --num-env-runners N spreads a Pong
recipe's games over its runners, and the plan says what the rest of the recipe does."""

from __future__ import annotations

import pytest

from sweeps.harness.cli import parse_args, scaling_line
from sweeps.harness.sweep import Scaling


def test_the_recipes_envs_spread_over_the_runners_never_fewer_in_all():
    rule = Scaling()
    assert rule.envs_per_runner(1, 32, 1) == 32  # the recipe as tuned
    assert rule.envs_per_runner(1, 32, 4) == 8
    assert rule.envs_per_runner(1, 32, 13) == 3  # 39 in all: at least the recipe's 32
    assert rule.envs_per_runner(1, 8, 10) == 1
    assert rule.envs_per_runner(1, 32, 0) == 32  # sampling in the learner's process
    assert Scaling(spread_envs=False).envs_per_runner(1, 32, 4) == 32


@pytest.mark.parametrize(
    ("name", "runners", "per_runner"),
    [("impala_pong", 13, 3), ("appo_pong", 4, 8), ("apex_pong", 10, 1), ("dqn_pong", 4, 2)],
)
def test_num_env_runners_applies_the_pong_recipes_rule(name, runners, per_runner, tmp_path):
    import importlib

    sweep = importlib.import_module(f"sweeps.{name}").SWEEP
    argv = ["--storage-path", str(tmp_path), "--num-env-runners", str(runners)]
    args = parse_args(sweep, argv)
    assert args.num_envs_per_env_runner == per_runner
    line = scaling_line(sweep, args)
    assert f"the recipe at {runners} env runner(s)" in line and "stay the recipe's" in line
    # Given on the command line, the envs per runner win; at the recipe's own count, no rule.
    args = parse_args(sweep, [*argv, "--num-envs-per-env-runner", "5"])
    assert args.num_envs_per_env_runner == 5
    args = parse_args(sweep, ["--storage-path", str(tmp_path)])
    assert scaling_line(sweep, args) is None
    assert args.num_envs_per_env_runner == sweep.defaults["num_envs_per_env_runner"]


def test_a_recipe_without_a_rule_keeps_its_envs(tmp_path):
    from sweeps import apex_cabs

    args = parse_args(apex_cabs.SWEEP, ["--storage-path", str(tmp_path), "--num-env-runners", "4"])
    assert apex_cabs.SWEEP.scaling is None and scaling_line(apex_cabs.SWEEP, args) is None

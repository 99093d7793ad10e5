"""The env family (sweeps/env_family.py): its envs, targets and budgets as data, each env one
benchmark, and every env checked before any runs. No Ray is started (the benchmark's --dry-run)."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

from sweeps import env_family
from sweeps.env_family import FAMILY, HELD_OUT, SPEC, TUNING


def test_the_family_is_six_tuning_envs_and_two_held_out_each_its_own_folder():
    assert len(TUNING) >= 6 and len(HELD_OUT) == 2
    assert not {e.env for e in TUNING} & {e.env for e in HELD_OUT}
    assert len({e.slug for e in FAMILY.values()}) == len(FAMILY)
    assert all(math.isfinite(e.target) and e.budget_s > 0 for e in FAMILY.values())


@pytest.mark.parametrize("env", [e for e in FAMILY.values() if e.target_from == SPEC], ids=str)
def test_a_target_said_to_be_the_spec_s_is_the_spec_s(env):
    assert env.target == gym.spec(env.env).reward_threshold


@pytest.mark.parametrize(
    "env", [e for e in FAMILY.values() if e.target_from == env_family.OF_OPTIMUM], ids=str
)
def test_a_target_said_to_be_95_percent_of_the_optimum_is_and_the_spec_s_was_above_it(env):
    from envs.gym import tabular_optimum

    optimum = tabular_optimum(env.env, env.env_config)
    assert f"{optimum:.2f}" in env.target_from
    assert env.target == round(0.95 * optimum, 1)
    assert gym.spec(env.env).reward_threshold > optimum  # why the spec's figure is not used


def test_each_env_is_one_benchmark_with_its_target_budget_and_config():
    lake = FAMILY["FrozenLake-v1"]
    argv = lake.benchmark_argv("fam", 0.5, ["--algos", "appo"])
    assert argv == [
        *("--env", "FrozenLake-v1", "--target", "1"),
        *("--env-config", '{"is_slippery": false}'),
        *("--stop-train-time-s", "60", "--name", "fam-frozenlake-v1", "--algos", "appo"),
    ]


def test_dry_run_prints_each_env_s_benchmark_and_writes_nothing(tmp_path, capsys):
    argv = ["--envs", "CartPole-v1,Taxi-v3", "--algos", "appo", "--benchmark-seeds", "2"]
    rc = env_family.main([*argv, "--storage-path", str(tmp_path), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "[family] (1/2) CartPole-v1" in out and "[family] (2/2) Taxi-v3" in out
    assert "--target 475 --stop-train-time-s 120 --name family-cartpole-v1" in out
    assert not any(tmp_path.iterdir())


def test_an_env_not_in_the_family_is_one_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        env_family.main(["--envs", "CartPole-v1,Nope-v0", "--dry-run"])
    assert exit_.value.code == 2
    assert "not in the family: Nope-v0" in capsys.readouterr().err


def test_an_env_that_cannot_be_built_stops_the_family_before_any_run(monkeypatch, capsys):
    import envs.gym

    def resolve(name, config=None):
        raise ValueError(f"--env {name}: no such Gymnasium env")

    monkeypatch.setattr(envs.gym, "resolve", resolve)
    with pytest.raises(SystemExit) as exit_:
        env_family.main(["--envs", "LunarLander-v3,CartPole-v1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "LunarLander-v3" in err and env_family.INSTALL in err and "[family] (1/" not in err


def test_a_minatar_id_is_registered_by_its_package_s_entry_point():
    pytest.importorskip("minatar")
    from envs.gym import make, resolve

    found = resolve("MinAtar/Breakout-v1")
    assert found.observation_space.shape == (10, 10, 4) and found.discrete_actions
    env = make("MinAtar/Breakout-v1")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (10, 10, 4)
    env.close()

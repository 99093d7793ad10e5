"""The machine's speed that every run records at its start and end
(sweeps/harness/machine_speed.py): the workload's raw env rate, or nothing (and one line) where
it cannot be measured; a run never fails for it."""

from __future__ import annotations

import pytest

from sweeps.harness import machine_speed
from sweeps.harness.settings import Settings
from sweeps.workloads import NAMED
from sweeps.workloads.base import Workload
from sweeps.workloads.gym import GYM


def test_the_raw_env_rate_of_each_kind_of_workload():
    """The cab env, and a Gymnasium env by id: a whole number of env steps/s."""
    cabs = machine_speed.measure(NAMED["cabs"], Settings(variant="requests"), 0.05)
    cartpole = Settings(env="CartPole-v1", env_config={})
    for rate in (cabs, machine_speed.measure(GYM, cartpole, 0.05)):
        assert rate is not None and rate > 0 and rate == round(rate)


class _NoRawEnv(Workload):
    name = "none"


class _BrokenEnv(Workload):
    name = "broken"

    def make_raw_env(self, args, num_envs=None):
        raise RuntimeError("ROM not found\nsecond line")


class _FailingEnv:
    """An env that builds and resets, then fails at its first step."""

    def __init__(self) -> None:
        import gymnasium as gym

        self.action_space = gym.spaces.Discrete(3)
        self.closed = False

    def reset(self, seed=None):
        return 0, {}

    def step(self, action):
        raise ZeroDivisionError("division by zero")

    def close(self) -> None:
        self.closed = True


class _EnvThatFailsToStep(Workload):
    name = "fails"

    def make_raw_env(self, args, num_envs=None):
        self.env = _FailingEnv()
        return self.env


def test_a_workload_without_a_raw_env_or_with_a_broken_one_measures_nothing(capsys):
    args = Settings()
    assert machine_speed.measure(_NoRawEnv(), args, 0.05) is None
    assert capsys.readouterr().out == ""  # no raw env: nothing to say
    assert machine_speed.measure(_BrokenEnv(), args, 0.05) is None
    said = capsys.readouterr().out
    assert said == "[sweep] machine speed not measured: RuntimeError: ROM not found\n"
    failing = _EnvThatFailsToStep()
    assert machine_speed.measure(failing, args, 0.05) is None
    assert "ZeroDivisionError" in capsys.readouterr().out
    assert failing.env.closed  # the env is closed all the same


def test_the_progress_line_says_what_was_measured(monkeypatch):
    monkeypatch.delenv(machine_speed.SECONDS_ENV, raising=False)  # tests/conftest.py sets it
    assert machine_speed.line(4458.0, "start") == (
        "[sweep] machine speed at the start: 4,458 raw env steps/s "
        "(one process, random actions, the fastest 0.25 s of 1 s)"
    )


def test_a_test_suite_shortens_the_measurement_and_a_bad_value_is_said(monkeypatch, capsys):
    monkeypatch.setenv(machine_speed.SECONDS_ENV, "0.02")
    assert machine_speed.run_seconds() == 0.02
    assert "the fastest 0.005 s of 0.02 s" in machine_speed.line(1.0, "end")
    monkeypatch.delenv(machine_speed.SECONDS_ENV)
    assert machine_speed.run_seconds() == machine_speed.RUN_SECONDS
    monkeypatch.setenv(machine_speed.SECONDS_ENV, "soon")
    assert machine_speed.measure(NAMED["cabs"], Settings(variant="base")) is None  # run goes on
    assert capsys.readouterr().out == (
        "[sweep] machine speed not measured: ValueError: SWEEPS_MACHINE_SPEED_S='soon': "
        "give the seconds, a number above 0\n"
    )


def test_the_rate_is_the_fastest_window(monkeypatch):
    """A machine slowed for a moment (one window of four): its speed is the other windows'. The
    clock is the test's own (each step 10 us, the stall 0.1 s), so the figures are exact on a box
    of any speed under any load (on a loaded CI box, real windows of 0.05 s were not)."""
    from envs import bench
    from tests.conftest import FakeClock
    from tests.test_throughput import CountingEnv

    clock = FakeClock().install(monkeypatch, bench)

    class StallsOnce(CountingEnv):
        def step(self, action):
            clock.sleep(1e-5)
            if self.t == 0 and self.resets == 1:  # the first episode's first step: 0.1 s more
                clock.sleep(0.1)
            return super().step(action)

    whole = bench.raw_env_rate(StallsOnce(), 0.2)
    fastest = bench.raw_env_rate(StallsOnce(), 0.2, windows=4)
    # The whole 0.2 s: 0.1 s stalled, 0.1 s stepping at 100,000 steps/s. Four windows of 0.05 s:
    # the first holds the stall, the other three step at full speed.
    assert whole == pytest.approx(50_000, rel=0.01)
    assert fastest == pytest.approx(100_000, rel=0.01)

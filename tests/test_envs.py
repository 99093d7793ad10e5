"""Tests of the cab env: dynamics by hand, both variants, seeding, validation, registration."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.cabs import (
    COST_PER_HOUR,
    MASK_START,
    NUM_ACTIONS,
    OBS_SIZE,
    PROGRESS_INDEX,
    REQUEST_OBS_SIZE,
    REVENUE_PER_HOUR,
    RIDE_ACTIONS,
    CabsEnv,
    CabsRequestsEnv,
    decode_state,
    state_from_observation,
    validate_env_config,
)
from envs.optimum import request_count_probabilities
from tests import faulty_envs as faulty
from tests.faulty_envs import FaultyCabsEnv

MONDAY, SATURDAY, SUNDAY = 0, 5, 6


def action(pickup: int, drop: int) -> int:
    return pickup * 5 + drop


def clock_after(hour: int, day: int, hours: int) -> tuple[int, int]:
    """Hand-written clock arithmetic, independent of the env's."""
    total = hour + hours
    return total % 24, (day + total // 24) % 7


def where(obs: np.ndarray) -> tuple[int, int, int]:
    return decode_state(state_from_observation(obs))


@pytest.fixture
def env() -> CabsEnv:
    env = CabsEnv()
    env.reset(seed=0)
    return env


# --------------------------------------------------------------------------- dynamics


def test_spaces_and_reset() -> None:
    env = CabsEnv()
    obs, info = env.reset(seed=3)
    assert env.observation_space == gym.spaces.Box(0, 1, (OBS_SIZE,), np.float32)
    assert env.action_space == gym.spaces.Discrete(NUM_ACTIONS)
    assert obs.shape == (36,) and obs.dtype == np.float32
    assert obs.sum() == 3 and obs[:5].sum() == obs[5:29].sum() == obs[29:].sum() == 1
    assert info == {"hours_used": 0}
    assert where(obs) == (env.location, env.hour, env.day)


def test_twenty_hour_trip_from_saturday_night_ends_sunday_evening(env: CabsEnv) -> None:
    tm = env.city.travel_times
    assert tm[0, 4, 22, SATURDAY] == 20  # the default city (tm_seed=0) has such a trip
    env.set_state(0, 22, SATURDAY)
    obs, reward, terminated, truncated, info = env.step(action(0, 4))
    assert where(obs) == (4, 18, SUNDAY)
    assert reward == (REVENUE_PER_HOUR - COST_PER_HOUR) * 20 == 80
    assert info == {"hours": 20, "hours_used": 20}
    assert not terminated and not truncated


@pytest.mark.parametrize("location", range(5))
def test_offline_costs_an_hour_and_rolls_the_week_over(env: CabsEnv, location: int) -> None:
    env.set_state(location, 23, SUNDAY, hours_used=100)
    obs, reward, terminated, _, info = env.step(action(location, location))
    assert where(obs) == (location, 0, MONDAY)
    assert reward == -COST_PER_HOUR
    assert info == {"hours": 1, "hours_used": 101}
    assert not terminated
    # Every pickup == drop action is offline, wherever the driver is.
    env.set_state(location, 5, MONDAY)
    obs, reward, *_ = env.step(action((location + 2) % 5, (location + 2) % 5))
    assert where(obs) == (location, 6, MONDAY) and reward == -COST_PER_HOUR


def test_direct_rides_match_hand_computation(env: CabsEnv) -> None:
    tm = env.city.travel_times
    for location, hour, day, drop in [(0, 0, 0, 1), (3, 17, 4, 2), (4, 23, 6, 0), (1, 12, 2, 3)]:
        env.set_state(location, hour, day, hours_used=7)
        t = int(tm[location, drop, hour, day])
        obs, reward, _, _, info = env.step(action(location, drop))
        assert reward == (REVENUE_PER_HOUR - COST_PER_HOUR) * t
        assert where(obs) == (drop, *clock_after(hour, day, t))
        assert info == {"hours": t, "hours_used": 7 + t}


def test_empty_drive_reads_the_ride_time_at_the_pickup_clock(env: CabsEnv) -> None:
    tm = env.city.travel_times
    checked_clock_matters = False
    for location, pickup, drop, hour, day in [(1, 3, 0, 10, 3), (0, 2, 4, 20, 6), (4, 1, 2, 0, 0)]:
        env.set_state(location, hour, day)
        t1 = int(tm[location, pickup, hour, day])
        pickup_hour, pickup_day = clock_after(hour, day, t1)
        t2 = int(tm[pickup, drop, pickup_hour, pickup_day])
        checked_clock_matters |= t2 != tm[pickup, drop, hour, day]
        obs, reward, _, _, info = env.step(action(pickup, drop))
        assert reward == REVENUE_PER_HOUR * t2 - COST_PER_HOUR * (t1 + t2)
        assert where(obs) == (drop, *clock_after(hour, day, t1 + t2))
        assert info["hours"] == t1 + t2
    assert checked_clock_matters  # the cases distinguish the pickup clock from the start clock


def test_termination_at_720_hours(env: CabsEnv) -> None:
    env.set_state(2, 8, 1, hours_used=718)
    *_, terminated, _, info = env.step(0)
    assert not terminated and info["hours_used"] == 719
    *_, terminated, _, info = env.step(0)
    assert terminated and info["hours_used"] == 720
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)

    # A trip that passes 720 hours ends the month and is paid in full.
    t = int(env.city.travel_times[0, 4, 22, SATURDAY])
    env.set_state(0, 22, SATURDAY, hours_used=710)
    _, reward, terminated, _, info = env.step(action(0, 4))
    assert terminated and info["hours_used"] == 710 + t > 720
    assert reward == (REVENUE_PER_HOUR - COST_PER_HOUR) * t


def test_full_episode_sums_to_720_or_more_hours() -> None:
    env = CabsEnv()
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    hours, terminated = 0, False
    while not terminated:
        obs, _, terminated, truncated, info = env.step(int(rng.integers(NUM_ACTIONS)))
        hours += info["hours"]
        assert info["hours_used"] == hours and not truncated
    assert 720 <= hours < 720 + 46


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        CabsEnv().step(0)


def test_observations_are_fresh_arrays(env: CabsEnv) -> None:
    obs, _ = env.reset(seed=1)
    kept = obs.copy()
    obs2, *_ = env.step(3)
    env.step(7)
    assert np.array_equal(obs, kept)
    assert obs.flags.writeable and not np.shares_memory(obs, obs2)
    obs[:] = 0  # a consumer mutating its observation does not corrupt the env
    assert env.reset(seed=1)[0].sum() == 3


@pytest.mark.parametrize("requests", [False, True])
def test_seeding_reproduces_trajectories(requests: bool) -> None:
    def rollout(seed: int) -> list:
        env = CabsEnv(requests=requests)
        obs, info = env.reset(seed=seed)
        trajectory = [obs]
        for a in [3, 0, 17, 24, 8, 11, 2, 5, 19, 13] * 3:
            obs, reward, terminated, _, info = env.step(a)
            trajectory += [obs, reward, info["hours_used"]]
        return trajectory

    first, again, other = rollout(42), rollout(42), rollout(43)
    assert all(np.array_equal(x, y) for x, y in zip(first, again, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(first, other, strict=True))


def test_start_state_is_uniform() -> None:
    env = CabsEnv()
    starts = [where(env.reset(seed=i)[0]) for i in range(1500)]
    for position, size in enumerate((5, 24, 7)):
        counts = np.bincount([start[position] for start in starts], minlength=size)
        expected = len(starts) / size
        assert 0.6 * expected < counts.min() and counts.max() < 1.4 * expected


# --------------------------------------------------------------------------- request variant


def test_request_variant_observation_and_mask() -> None:
    env = CabsRequestsEnv()
    assert env.observation_space == gym.spaces.Box(0, 1, (REQUEST_OBS_SIZE,), np.float32)
    obs, info = env.reset(seed=0)
    for _ in range(300):
        mask = obs[MASK_START:]
        assert obs.shape == (62,) and obs.dtype == np.float32
        assert np.array_equal(mask, info["action_mask"])
        assert mask[0] == 1  # offline is always available
        assert mask[[6, 12, 18, 24]].sum() == 0  # the other offline actions are not
        assert set(np.flatnonzero(mask)) == {0, *env.available_actions[1:]}
        assert mask.sum() - 1 <= 15
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(mask)[-1]))
        if terminated:
            obs, info = env.reset()


def test_request_variant_observes_the_months_progress() -> None:
    env = CabsRequestsEnv()
    obs, info = env.reset(seed=0)
    assert obs[PROGRESS_INDEX] == 0.0 and PROGRESS_INDEX == OBS_SIZE < MASK_START
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        assert obs[PROGRESS_INDEX] == np.float32(min(info["hours_used"] / 720, 1.0))
    assert obs[PROGRESS_INDEX] == 1.0 and info["hours_used"] >= 720
    obs, _ = env.set_state(2, 5, 3, hours_used=540)
    assert obs[PROGRESS_INDEX] == 0.75 and where(obs) == (2, 5, 3)
    assert len(CabsEnv().reset(seed=0)[0]) == OBS_SIZE  # the base variant has no progress


def test_unavailable_action_is_taken_as_offline() -> None:
    env = CabsRequestsEnv()
    env.reset(seed=0)
    obs, info = env.set_state(0, 9, 2, requests=[action(0, 1)])
    assert np.flatnonzero(info["action_mask"]).tolist() == [0, 1]
    assert np.array_equal(obs[MASK_START:], info["action_mask"])
    for unavailable in (action(0, 2), action(3, 4), 6, 24):
        env.set_state(0, 9, 2, requests=[action(0, 1)])
        obs, reward, _, _, info = env.step(unavailable)
        assert reward == -COST_PER_HOUR and info["hours"] == 1
        assert where(obs) == (0, 10, 2)
    env.set_state(0, 9, 2, requests=[action(0, 1)])
    t = int(env.city.travel_times[0, 1, 9, 2])
    obs, reward, _, _, info = env.step(action(0, 1))
    assert reward == (REVENUE_PER_HOUR - COST_PER_HOUR) * t and where(obs)[0] == 1


@pytest.mark.parametrize("location, rate", [(0, 2.0), (1, 12.0)])
def test_request_counts_follow_capped_poisson(location: int, rate: float) -> None:
    env = CabsRequestsEnv()
    env.reset(seed=7)
    counts = np.array(
        [env.set_state(location, 0, 0)[1]["action_mask"].sum() - 1 for _ in range(4000)]
    )
    probabilities = request_count_probabilities(rate)
    mean = float(np.arange(16) @ probabilities)
    std = float(np.sqrt(np.arange(16) ** 2 @ probabilities - mean**2))
    assert abs(counts.mean() - mean) < 4 * std / np.sqrt(len(counts))
    assert counts.max() <= 15
    assert abs((counts == 0).mean() - probabilities[0]) < 0.02
    if rate > 10:
        assert (counts == 15).mean() == pytest.approx(probabilities[15], abs=0.03)


def test_requested_rides_are_uniform() -> None:
    env = CabsRequestsEnv()
    env.reset(seed=11)
    hits = np.zeros(NUM_ACTIONS)
    for _ in range(3000):
        hits += env.set_state(3, 0, 0)[1]["action_mask"]
    rides = hits[list(RIDE_ACTIONS)]
    assert rides.min() > 0.85 * rides.mean() and rides.max() < 1.15 * rides.mean()


# --------------------------------------------------------------------------- config & validation


@pytest.mark.parametrize(
    "config, key",
    [
        ({"tm_seed": "3"}, "tm_seed"),
        ({"tm_seed": -1}, "tm_seed"),
        ({"tm_seed": 1.0}, "tm_seed"),
        ({"tm_seed": True}, "tm_seed"),
        ({"requests": "yes"}, "requests"),
        ({"tm_sead": 1}, "tm_sead"),
        ({"fail_at_step": 5}, "fail_at_step"),  # the test-only env's key (tests/faulty_envs.py)
    ],
)
def test_bad_config_raises_naming_the_key(config: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        validate_env_config(config)
    with pytest.raises(ValueError, match=key):
        CabsEnv(config)


def test_config_sources_merge() -> None:
    from ray.rllib.env.env_context import EnvContext

    assert validate_env_config(None) == {"tm_seed": 0, "requests": False}
    context = EnvContext({"tm_seed": 4}, worker_index=2, num_workers=3)
    assert CabsEnv(context).config["tm_seed"] == 4
    assert CabsEnv({"tm_seed": 4}, tm_seed=5).config["tm_seed"] == 5
    assert CabsEnv(tm_seed=np.int64(2)).config["tm_seed"] == 2
    assert CabsEnv(requests=True).observation_space.shape == (REQUEST_OBS_SIZE,)
    assert CabsRequestsEnv({"tm_seed": 1}).config == {
        **validate_env_config({"tm_seed": 1}),
        "requests": True,
    }
    with pytest.raises(ValueError, match="requests"):
        CabsRequestsEnv(requests=False)
    different = CabsEnv(tm_seed=1).city.travel_times
    assert not np.array_equal(different, CabsEnv().city.travel_times)


@pytest.mark.parametrize("bad", [25, -1, 1.5, "3", None, np.float32(2.0), np.array([1, 2])])
def test_out_of_space_action_raises(env: CabsEnv, bad: object) -> None:
    with pytest.raises(ValueError, match="action"):
        env.step(bad)


def test_numpy_actions_are_accepted(env: CabsEnv) -> None:
    env.step(np.int64(3))
    env.step(np.array(4))
    env.step(np.uint8(5))


# --------------------------------------------------------------------------- fault injection


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process in which no faulty env has stepped yet."""
    monkeypatch.setattr(faulty, "_process_steps", 0)
    monkeypatch.setattr(faulty, "_failure_injected", False)


def test_injected_failure_fires_once(fresh_process: None) -> None:
    env = FaultyCabsEnv(fail_at_step=5)
    env.reset(seed=0)
    for _ in range(4):
        env.step(0)
    with pytest.raises(RuntimeError, match="injected failure"):
        env.step(0)
    for _ in range(20):  # once per process, even for a new env
        env.step(0)
    other = FaultyCabsEnv(fail_at_step=5)
    other.reset(seed=0)
    other.step(0)


def test_failure_marker_survives_a_restart(
    fresh_process: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = tmp_path / "sub" / "failed"
    config = {"fail_at_step": 3, "fail_marker": str(marker)}
    env = FaultyCabsEnv(config)
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    with pytest.raises(RuntimeError, match="injected failure"):
        env.step(0)
    assert marker.exists()
    # A restarted worker: a fresh process counter, but the marker says it already failed.
    monkeypatch.setattr(faulty, "_process_steps", 0)
    monkeypatch.setattr(faulty, "_failure_injected", False)
    env = FaultyCabsEnv(config)
    env.reset(seed=0)
    for _ in range(10):
        env.step(0)


@pytest.mark.parametrize(
    "config, key",
    [
        ({"fail_at_step": 0}, "fail_at_step"),
        ({"fail_at_step": "10"}, "fail_at_step"),
        ({"fail_at_step": True}, "fail_at_step"),
        ({"fail_marker": 3}, "fail_marker"),
        ({"fail_marker": ""}, "fail_marker"),
        ({"fail_at_step": 5, "tm_sead": 1}, "tm_sead"),  # the cab env checks its own keys
    ],
)
def test_faulty_env_bad_config_raises_naming_the_key(config: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        FaultyCabsEnv(config)


def test_faulty_env_is_the_cab_env_until_it_fails(fresh_process: None) -> None:
    faulty_env = FaultyCabsEnv(tm_seed=1, requests=True, fail_at_step=10**6)
    env = CabsEnv(tm_seed=1, requests=True)
    assert faulty_env.config == env.config
    np.testing.assert_array_equal(faulty_env.reset(seed=3)[0], env.reset(seed=3)[0])
    for action in [0, 7, 13, 24, 1]:
        step_a, step_b = faulty_env.step(action), env.step(action)
        np.testing.assert_array_equal(step_a[0], step_b[0])
        assert step_a[1:4] == step_b[1:4]


# --------------------------------------------------------------------------- registration


@pytest.mark.parametrize("env_id", [envs.CABS, envs.CABS_REQUESTS])
def test_check_env_passes(env_id: str) -> None:
    envs.register_envs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_id).unwrapped)


def test_gym_make_passes_config() -> None:
    envs.register_envs()
    assert gym.make(envs.CABS, tm_seed=3).unwrapped.config["tm_seed"] == 3
    made = gym.make(envs.CABS_REQUESTS, config={"tm_seed": 2}).unwrapped
    assert made.config["tm_seed"] == 2 and made.requests
    with pytest.raises(ValueError, match="colour"):
        gym.make(envs.CABS, colour="red")


def test_register_envs_is_idempotent_and_fills_the_tune_registry() -> None:
    from ray.rllib.env.env_context import EnvContext
    from ray.tune.registry import ENV_CREATOR, _global_registry

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        envs.register_envs()
        envs.register_envs()
    for env_id in (envs.CABS, envs.CABS_REQUESTS, envs.PONG):
        assert env_id in gym.registry
        assert _global_registry.contains(ENV_CREATOR, env_id)
    creator = _global_registry.get(ENV_CREATOR, envs.CABS_REQUESTS)
    env = creator(EnvContext({"tm_seed": 1}, worker_index=1))
    assert isinstance(env, CabsRequestsEnv) and env.config["tm_seed"] == 1


def test_env_id_for() -> None:
    assert envs.env_id_for("base") == "Cabs-v0"
    assert envs.env_id_for("requests") == "CabsRequests-v0"
    with pytest.raises(ValueError, match="variant"):
        envs.env_id_for("pong")


def test_importing_envs_is_light_and_registers_nothing() -> None:
    code = (
        "import sys, envs, envs.cabs, envs.optimum, envs.policies, envs.pong, envs.bench\n"
        "import gymnasium as gym\n"
        "assert 'ray' not in sys.modules and 'torch' not in sys.modules, 'heavy import'\n"
        "assert 'Cabs-v0' not in gym.registry, 'registered on import'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

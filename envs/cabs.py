"""The cab-driver MDP: pick trips in a city of 5 locations to maximise a month's profit.

Two variants share one class, :class:`CabsEnv`:

* base (``Cabs-v0``): every one of the 25 actions is available in every state;
* requests (``CabsRequests-v0``, :class:`CabsRequestsEnv` or config ``requests=True``): at
  every state a random set of ride requests arrives and only those rides (plus going offline)
  can be taken; the observation carries the month's progress and a 0/1 mask of the available
  actions.

Conventions
-----------
* Locations ``0..4``, hours ``0..23``, days of the week ``0..6`` with day 0 = Monday ...
  day 5 = Saturday, day 6 = Sunday.
* Action ``a = pickup * 5 + drop``. ``pickup == drop`` goes offline for one hour (reward -C).
  ``pickup == location`` is a direct ride of ``t = tm[p, q, hour, day]`` hours (reward
  ``(R - C) t``). Otherwise the driver first drives empty to the pickup (``t1`` hours) and the
  ride's ``t2`` is read at the clock after ``t1`` (reward ``R t2 - C (t1 + t2)``).
* The clock advances by the step's hours, rolling over midnight into the next day, days
  modulo 7. The episode terminates once the hours used reach or pass 720 (30 days); the last
  trip is paid in full.
* A state ``(location, hour, day)`` has the index ``(location * 24 + hour) * 7 + day``
  (``0..839``), see :func:`state_index`. The observation is the concatenation of the one-hot
  location, hour and day (36 entries), followed on the request variant by the month's progress
  (hours used / 720; 1 once the month is over) and the action mask. The optimal policy depends
  on the hours used (:mod:`envs.optimum` solves over them): without the progress entry a
  Q-function sees one value for every point of the month. It adds nothing to the MDP.

All transitions are precomputed once per city (:func:`city`) as ``840 x 25`` tables of reward,
hours and next state; the env only indexes them, and :mod:`envs.optimum` solves the same tables.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from envs.config import check_int, merged_config

NUM_LOCATIONS = 5
HOURS_PER_DAY = 24
DAYS_PER_WEEK = 7
NUM_STATES = NUM_LOCATIONS * HOURS_PER_DAY * DAYS_PER_WEEK  # 840
NUM_ACTIONS = NUM_LOCATIONS * NUM_LOCATIONS  # 25
COST_PER_HOUR = 5  # C: cost of every hour driven or idle
REVENUE_PER_HOUR = 9  # R: revenue of every hour of paid ride
EPISODE_HOURS = 30 * HOURS_PER_DAY  # 720
MAX_TRAVEL_HOURS = 23  # travel times are drawn from 1..23
MAX_STEP_HOURS = 2 * MAX_TRAVEL_HOURS  # an empty drive plus a ride

# Observation layout: [one-hot location | one-hot hour | one-hot day], then on the request
# variant [progress = hours used / 720 | action mask].
LOCATION_START = 0
HOUR_START = LOCATION_START + NUM_LOCATIONS  # 5
DAY_START = HOUR_START + HOURS_PER_DAY  # 29
OBS_SIZE = DAY_START + DAYS_PER_WEEK  # 36
PROGRESS_INDEX = OBS_SIZE  # 36
MASK_START = PROGRESS_INDEX + 1  # 37
REQUEST_OBS_SIZE = MASK_START + NUM_ACTIONS  # 62

OFFLINE_ACTION = 0
OFFLINE_ACTIONS = tuple(p * NUM_LOCATIONS + p for p in range(NUM_LOCATIONS))  # 0, 6, ..., 24
RIDE_ACTIONS = tuple(a for a in range(NUM_ACTIONS) if a not in OFFLINE_ACTIONS)
NUM_RIDES = len(RIDE_ACTIONS)  # 20
_RIDE_ARRAY = np.array(RIDE_ACTIONS, dtype=np.int64)
_RIDE_ARRAY.flags.writeable = False

# Request variant: Poisson rate of ride requests per location, and the cap on their number.
REQUEST_RATES = (2.0, 12.0, 4.0, 7.0, 8.0)
MAX_REQUESTS = 15

VARIANTS = ("base", "requests")

_CONFIG_DEFAULTS: dict[str, Any] = {"tm_seed": 0, "requests": False}


# --------------------------------------------------------------------------- configuration


def validate_env_config(config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check a cab env config and return it as a plain dict with defaults filled in.

    Known keys: ``tm_seed`` (int >= 0, default 0) and ``requests`` (bool, default False).
    Attributes of RLlib's ``EnvContext`` (``worker_index`` ...) are not keys and are ignored.

    Raises:
        ValueError: on an unknown key or an ill-typed value, naming the key.
    """
    merged = merged_config("cab env config", config, _CONFIG_DEFAULTS)
    tm_seed = check_int("cab env config", "tm_seed", merged["tm_seed"], 0)
    requests = merged["requests"]
    if not isinstance(requests, bool | np.bool_):
        raise ValueError(f"cab env config 'requests' must be a bool, got {requests!r}")
    return {"tm_seed": tm_seed, "requests": bool(requests)}


def is_request_variant(variant: str) -> bool:
    """``"base"`` -> False, ``"requests"`` -> True; anything else is a ValueError."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown cab variant {variant!r}; expected one of {VARIANTS}")
    return variant == "requests"


# --------------------------------------------------------------------------- the city


def state_index(location: int, hour: int, day: int) -> int:
    """Index ``0..839`` of the state ``(location, hour, day)``."""
    return (location * HOURS_PER_DAY + hour) * DAYS_PER_WEEK + day


def decode_state(index: int) -> tuple[int, int, int]:
    """``(location, hour, day)`` of a state index (inverse of :func:`state_index`)."""
    return (
        index // (HOURS_PER_DAY * DAYS_PER_WEEK),
        (index // DAYS_PER_WEEK) % HOURS_PER_DAY,
        index % DAYS_PER_WEEK,
    )


def state_from_observation(obs: np.ndarray) -> int:
    """State index encoded by the first 36 (one-hot) entries of an observation."""
    hot = np.flatnonzero(obs[:OBS_SIZE])
    if len(hot) != 3:
        raise ValueError(f"not a cab observation: {len(hot)} non-zero one-hot entries")
    return state_index(int(hot[0]), int(hot[1]) - HOUR_START, int(hot[2]) - DAY_START)


def advance_clock(hour: Any, day: Any, hours: Any) -> tuple[Any, Any]:
    """Clock ``(hour, day)`` after ``hours`` hours (ints or numpy arrays)."""
    total = hour + hours
    return total % HOURS_PER_DAY, (day + total // HOURS_PER_DAY) % DAYS_PER_WEEK


def travel_time_matrix(tm_seed: int = 0) -> np.ndarray:
    """The city's travel times ``tm[from, to, hour, day]`` in hours (1..23)."""
    rng = np.random.default_rng(tm_seed)
    return rng.integers(1, MAX_TRAVEL_HOURS + 1, size=(NUM_LOCATIONS,) * 2 + (24, 7))


@dataclass(frozen=True)
class City:
    """A city's travel times and its precomputed transition tables (all arrays read-only).

    ``reward[s, a]``, ``hours[s, a]`` and ``next_state[s, a]`` give the reward, the hours
    spent and the next state index of action ``a`` in state ``s``.
    """

    tm_seed: int
    travel_times: np.ndarray  # (5, 5, 24, 7) int
    reward: np.ndarray  # (840, 25) float64
    hours: np.ndarray  # (840, 25) int64, 1..46
    next_state: np.ndarray  # (840, 25) int64


@functools.lru_cache(maxsize=16)
def city(tm_seed: int = 0) -> City:
    """The city of ``tm_seed`` with its transition tables (cached)."""
    tm = travel_time_matrix(tm_seed)
    states = np.arange(NUM_STATES)[:, None]
    location, hour, day = decode_state(states)  # type: ignore[arg-type]
    actions = np.arange(NUM_ACTIONS)[None, :]
    pickup, drop = actions // NUM_LOCATIONS, actions % NUM_LOCATIONS

    offline = pickup == drop
    empty_hours = np.where(pickup == location, 0, tm[location, pickup, hour, day])
    pickup_hour, pickup_day = advance_clock(hour, day, empty_hours)
    ride_hours = tm[pickup, drop, pickup_hour, pickup_day]

    hours = np.where(offline, 1, empty_hours + ride_hours)
    reward = np.where(
        offline,
        -COST_PER_HOUR,
        REVENUE_PER_HOUR * ride_hours - COST_PER_HOUR * (empty_hours + ride_hours),
    ).astype(np.float64)
    end_location = np.where(offline, location, drop)
    end_hour, end_day = advance_clock(hour, day, hours)
    next_state = (end_location * HOURS_PER_DAY + end_hour) * DAYS_PER_WEEK + end_day

    arrays = (tm, reward, hours.astype(np.int64), next_state.astype(np.int64))
    for array in arrays:
        array.flags.writeable = False
    return City(tm_seed, *arrays)


@functools.lru_cache(maxsize=16)
def _flat_tables(tm_seed: int) -> tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]]:
    """The city's tables as flat tuples of Python numbers, indexed ``s * 25 + a`` (fast)."""
    c = city(tm_seed)
    return (
        tuple(c.reward.ravel().tolist()),
        tuple(c.hours.ravel().tolist()),
        tuple(c.next_state.ravel().tolist()),
    )


@functools.cache
def _observation_table(size: int) -> np.ndarray:
    """Read-only ``(840, size)`` table of the one-hot observations; mask offline if present."""
    table = np.zeros((NUM_STATES, size), dtype=np.float32)
    for s in range(NUM_STATES):
        location, hour, day = decode_state(s)
        table[s, [LOCATION_START + location, HOUR_START + hour, DAY_START + day]] = 1.0
    if size > OBS_SIZE:
        table[:, MASK_START + OFFLINE_ACTION] = 1.0
    table.flags.writeable = False
    return table


def base_observations() -> np.ndarray:
    """The base variant's observation of every state index: a read-only ``(840, 36)`` array
    whose row ``s`` is what the env shows in state ``s`` (for evaluating a policy on all states
    at once, e.g. :func:`envs.optimum.evaluate_policy`)."""
    return _observation_table(OBS_SIZE)


# --------------------------------------------------------------------------- the env


def _action_index(action: Any) -> int:
    """The action as an int in ``0..24``, or a ValueError."""
    if type(action) is int:
        index = action
    elif isinstance(action, np.integer) or (
        isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"
    ):
        index = int(action)
    else:
        raise ValueError(f"cab env action must be an int in [0, {NUM_ACTIONS}), got {action!r}")
    if not 0 <= index < NUM_ACTIONS:
        raise ValueError(f"cab env action must be in [0, {NUM_ACTIONS}), got {index}")
    return index


class CabsEnv(gym.Env):
    """The cab driver's month. See the module docstring for the dynamics.

    Build it from RLlib (``CabsEnv(env_context)``), from Gymnasium
    (``gym.make("Cabs-v0", tm_seed=1)`` or ``gym.make("Cabs-v0", config={...})``) or directly;
    keyword arguments override ``config`` entries. ``info`` holds the step's ``hours`` and the
    cumulative ``hours_used`` (and ``action_mask`` on the request variant).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = validate_env_config({**(config or {}), **kwargs})
        self.config = settings
        self.requests: bool = settings["requests"]
        self.city = city(settings["tm_seed"])

        self._reward, self._hours, self._next = _flat_tables(settings["tm_seed"])
        obs_size = REQUEST_OBS_SIZE if self.requests else OBS_SIZE
        self._obs_table = _observation_table(obs_size)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)

        self._state = 0
        self._hours_used = EPISODE_HOURS  # "episode over" until the first reset
        self._available: frozenset[int] = frozenset(range(NUM_ACTIONS))
        self._mask: np.ndarray | None = None

    # ---------------------------------------------------------------- gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a month at a uniformly random ``(location, hour, day)``."""
        super().reset(seed=seed)
        self._state = int(self.np_random.integers(NUM_STATES))
        self._hours_used = 0
        obs = self._observe()
        return obs, self._reset_info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Take trip ``action``; an unavailable action (request variant) is taken as offline."""
        a = _action_index(action)
        if self._hours_used >= EPISODE_HOURS:
            raise RuntimeError("the cab episode is over (or never started): call reset()")
        if a not in self._available:
            a = OFFLINE_ACTION

        k = self._state * NUM_ACTIONS + a
        hours = self._hours[k]
        self._state = self._next[k]
        self._hours_used += hours
        obs = self._observe()
        info: dict[str, Any] = {"hours": hours, "hours_used": self._hours_used}
        if self.requests:
            info["action_mask"] = self._mask.copy()  # type: ignore[union-attr]
        return obs, self._reward[k], self._hours_used >= EPISODE_HOURS, False, info

    # ---------------------------------------------------------------- state access

    @property
    def location(self) -> int:
        return decode_state(self._state)[0]

    @property
    def hour(self) -> int:
        return decode_state(self._state)[1]

    @property
    def day(self) -> int:
        """Day of the week, 0 = Monday ... 6 = Sunday."""
        return decode_state(self._state)[2]

    @property
    def hours_used(self) -> int:
        return self._hours_used

    @property
    def state(self) -> int:
        """Current state index (see :func:`state_index`)."""
        return self._state

    @property
    def available_actions(self) -> list[int]:
        """The actions available now, ascending (all 25 on the base variant)."""
        return sorted(self._available)

    def set_state(
        self,
        location: int,
        hour: int,
        day: int,
        hours_used: int = 0,
        requests: Sequence[int] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Put the env in a chosen state, for tests and debugging; returns ``(obs, info)``.

        ``requests`` (request variant only) lists the requested ride actions; by default they
        are drawn as usual. Call :meth:`reset` first if the draws should be seeded.
        """
        if not (
            0 <= location < NUM_LOCATIONS
            and 0 <= hour < HOURS_PER_DAY
            and 0 <= day < DAYS_PER_WEEK
            and 0 <= hours_used < EPISODE_HOURS
        ):
            raise ValueError(f"invalid cab state {(location, hour, day, hours_used)}")
        if requests is not None and not self.requests:
            raise ValueError("requests can only be set on the request variant")
        if requests is not None and not set(requests) <= set(RIDE_ACTIONS):
            raise ValueError(f"requests must be ride actions {RIDE_ACTIONS}, got {requests}")
        self._state = state_index(location, hour, day)
        self._hours_used = hours_used
        obs = self._observe(None if requests is None else np.asarray(requests, dtype=np.int64))
        return obs, self._reset_info()

    # ---------------------------------------------------------------- internals

    def _observe(self, rides: np.ndarray | None = None) -> np.ndarray:
        """Observation of the current state; on the request variant, the month's progress and
        the drawn (or set) requests."""
        obs = self._obs_table[self._state].copy()
        if self.requests:
            obs[PROGRESS_INDEX] = min(self._hours_used / EPISODE_HOURS, 1.0)
            if rides is None:
                rides = self._draw_requests()
            obs[MASK_START + rides] = 1.0
            self._mask = obs[MASK_START:].copy()
            self._available = frozenset((OFFLINE_ACTION, *rides.tolist()))
        return obs

    def _draw_requests(self) -> np.ndarray:
        """Ride actions requested at the current location: capped Poisson many, distinct."""
        rng = self.np_random
        rate = REQUEST_RATES[self._state // (HOURS_PER_DAY * DAYS_PER_WEEK)]
        count = min(int(rng.poisson(rate)), MAX_REQUESTS)
        return _RIDE_ARRAY[rng.permutation(NUM_RIDES)[:count]]

    def _reset_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"hours_used": self._hours_used}
        if self.requests:
            info["action_mask"] = self._mask.copy()  # type: ignore[union-attr]
        return info


class CabsRequestsEnv(CabsEnv):
    """The request variant: :class:`CabsEnv` with ``requests=True`` (which cannot be unset)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = validate_env_config({"requests": True, **(config or {}), **kwargs})
        if not settings["requests"]:
            raise ValueError("cab env config 'requests' must be True for the request variant")
        super().__init__(settings)

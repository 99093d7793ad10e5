"""Exact optimal expected return of the cab MDP by finite-horizon dynamic programming.

The state of the month is ``(hours used, location, hour, day)``; with hours used ``h`` in
``0..719`` and the 840 ``(location, hour, day)`` states, backward induction over ``h`` is

    Q[h, s, a] = reward[s, a] + V[h + hours[s, a], next_state[s, a]],   V[h >= 720] = 0,

vectorised over the ``840 x 25`` table of :func:`envs.cabs.city` per level ``h`` (a step jumps
ahead by up to 46 hours; the last step of a month may overshoot 720 and is paid in full).

* Base variant: all 25 actions are available, ``V[h, s] = max_a Q[h, s, a]``.
* Request variant: only offline (action 0) and the requested rides ``S`` are available, with
  ``|S| = k ~ min(Poisson(rate[location]), 15)`` and ``S`` uniform among the k-subsets of the
  20 rides. With ``q0 = Q[h, s, 0]`` and the ride values sorted descending
  ``q(1) >= ... >= q(20)``, the best ride of ``S`` has rank ``j`` with probability
  ``C(20 - j, k - 1) / C(20, k)``, hence

      V[h, s] = sum_k P(k) sum_j C(20 - j, k - 1) / C(20, k) * max(q0, q(j))   (k = 0: q0).

The value of the MDP is the mean of ``V[0, s]`` over the 840 (uniform) start states.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.cabs import (
    DAYS_PER_WEEK,
    EPISODE_HOURS,
    HOURS_PER_DAY,
    MAX_REQUESTS,
    MAX_STEP_HOURS,
    NUM_LOCATIONS,
    NUM_RIDES,
    NUM_STATES,
    OFFLINE_ACTION,
    REQUEST_RATES,
    RIDE_ACTIONS,
    city,
    is_request_variant,
    state_from_observation,
)


def request_count_probabilities(rate: float, cap: int = MAX_REQUESTS) -> np.ndarray:
    """``P(k)`` for ``k = 0..cap`` of ``min(Poisson(rate), cap)``."""
    pmf = np.array([math.exp(-rate) * rate**k / math.factorial(k) for k in range(cap)])
    return np.append(pmf, 1.0 - pmf.sum())


def best_rank_weights(rate: float) -> tuple[float, np.ndarray]:
    """Weights of the request-variant expectation at a location with Poisson ``rate``.

    Returns ``(w0, w)``: ``w0 = P(no request)`` and ``w[j - 1] = P(the best requested ride has
    rank j among the 20 rides)`` for ``j = 1..20``; ``w0 + w.sum() == 1``.
    """
    counts = request_count_probabilities(rate)
    ranks = np.arange(1, NUM_RIDES + 1)
    weights = np.zeros(NUM_RIDES)
    for k in range(1, len(counts)):
        rank_given_k = np.array([math.comb(NUM_RIDES - j, k - 1) for j in ranks])
        weights += counts[k] * rank_given_k / math.comb(NUM_RIDES, k)
    return float(counts[0]), weights


@dataclass(frozen=True, eq=False)
class Solution:
    """The solved MDP of one city and variant.

    Attributes:
        tm_seed: the city.
        requests: whether this is the request variant.
        V: ``(720, 840)`` optimal expected return-to-go by hours used and state index
            (expectation over the request draws on the request variant).
        value: the optimal expected return from the uniform start, ``V[0].mean()``.
    """

    tm_seed: int
    requests: bool
    V: np.ndarray
    value: float
    _V_padded: np.ndarray  # V with zero rows for hours used 720..765
    _greedy: np.ndarray  # (720, 840) int8: best action when all 25 are available

    @property
    def Q(self) -> np.ndarray:
        """``(720, 840, 25)`` action values (float64, ~120 MB, computed on each access)."""
        c = city(self.tm_seed)
        levels = np.arange(EPISODE_HOURS)[:, None, None]
        return c.reward[None] + self._V_padded[levels + c.hours[None], c.next_state[None]]

    def q_values(self, hours_used: int, state: int) -> np.ndarray:
        """The 25 action values at ``hours_used`` in state index ``state``."""
        c = city(self.tm_seed)
        return c.reward[state] + self._V_padded[hours_used + c.hours[state], c.next_state[state]]

    def policy(self) -> OptimalPolicy:
        """The optimal policy, usable in the env (see :class:`OptimalPolicy`)."""
        return OptimalPolicy(self)


class OptimalPolicy:
    """Acts optimally: the best available action by the solution's action values.

    Call ``policy(obs, info)`` with the env's observation and info; it reads
    ``info["hours_used"]`` and, on the request variant, ``info["action_mask"]``.
    """

    def __init__(self, solution: Solution) -> None:
        self.solution = solution

    def reset(self) -> None:
        """Nothing to reset: the policy is Markov in (hours used, state)."""

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        state = state_from_observation(obs)
        hours_used = int(info["hours_used"])
        if not self.solution.requests:
            return int(self.solution._greedy[hours_used, state])
        q = self.solution.q_values(hours_used, state)
        q = np.where(np.asarray(info["action_mask"]) > 0, q, -np.inf)
        return int(np.argmax(q))


def _weights_by_state() -> tuple[np.ndarray, np.ndarray]:
    """:func:`best_rank_weights` of each state's location: ``(840,)`` and ``(840, 20)``."""
    location = np.arange(NUM_STATES) // (HOURS_PER_DAY * DAYS_PER_WEEK)
    w0 = np.empty(NUM_LOCATIONS)
    w = np.empty((NUM_LOCATIONS, NUM_RIDES))
    for loc, rate in enumerate(REQUEST_RATES):
        w0[loc], w[loc] = best_rank_weights(rate)
    return w0[location], w[location]


@functools.lru_cache(maxsize=8)
def solve(tm_seed: int = 0, requests: bool = False) -> Solution:
    """Solve the cab MDP of city ``tm_seed`` exactly (about a second; cached)."""
    c = city(tm_seed)
    padded = np.zeros((EPISODE_HOURS + MAX_STEP_HOURS, NUM_STATES))
    greedy = np.zeros((EPISODE_HOURS, NUM_STATES), dtype=np.int8)
    states = np.arange(NUM_STATES)

    w0_state, w_state = _weights_by_state()
    rides = np.array(RIDE_ACTIONS)

    for h in range(EPISODE_HOURS - 1, -1, -1):
        q = c.reward + padded[h + c.hours, c.next_state]
        greedy[h] = q.argmax(axis=1)
        if requests:
            offline = q[:, OFFLINE_ACTION]
            ride_values = -np.sort(-q[:, rides], axis=1)  # descending
            best = np.maximum(ride_values, offline[:, None])
            padded[h] = w0_state * offline + (w_state * best).sum(axis=1)
        else:
            padded[h] = q[states, greedy[h]]

    for array in (padded, greedy):
        array.flags.writeable = False
    values = padded[:EPISODE_HOURS]
    return Solution(tm_seed, requests, values, float(values[0].mean()), padded, greedy)


def discounted_greedy_value(gamma: float, tm_seed: int = 0, requests: bool = False) -> float:
    """The true expected return of the best policy for a return discounted by ``gamma`` per step.

    DQN discounts per step (a trip of 1 to 46 hours), not per hour. With the hours used observed
    (the request variant's progress entry), the best it can converge to is the greedy policy of
    ``Q_g[h, s, a] = reward[s, a] + gamma * V_g[h + hours[s, a], next_state[s, a]]``; this is that
    policy's expected (undiscounted) month's return from the uniform start, so divided by the
    optimum it is the ceiling ``gamma`` puts on a learner (the optimum itself at ``gamma = 1``).
    """
    c = city(tm_seed)
    w0, w = _weights_by_state()
    rides = np.array(RIDE_ACTIONS)
    states = np.arange(NUM_STATES)
    discounted = np.zeros((EPISODE_HOURS + MAX_STEP_HOURS, NUM_STATES))
    actual = np.zeros_like(discounted)
    for h in range(EPISODE_HOURS - 1, -1, -1):
        q = c.reward + gamma * discounted[h + c.hours, c.next_state]
        g = c.reward + actual[h + c.hours, c.next_state]
        if not requests:
            best = q.argmax(axis=1)
            discounted[h], actual[h] = q[states, best], g[states, best]
            continue
        # The best requested ride by q (ties: the lower action, as argmax), unless offline's
        # q is at least as high; expectation over the requests as in solve().
        order = np.argsort(-q[:, rides], axis=1, kind="stable")
        ride_q = np.take_along_axis(q[:, rides], order, axis=1)
        ride_g = np.take_along_axis(g[:, rides], order, axis=1)
        offline_q, offline_g = q[:, [OFFLINE_ACTION]], g[:, [OFFLINE_ACTION]]
        discounted[h] = w0 * offline_q[:, 0] + (w * np.maximum(ride_q, offline_q)).sum(axis=1)
        taken = np.where(ride_q > offline_q, ride_g, offline_g)
        actual[h] = w0 * offline_g[:, 0] + (w * taken).sum(axis=1)
    return float(actual[0].mean())


# The month's last two days: where a policy blind to the month's clock loses nearly all it loses
# (its end-game, short rides then a long one paid in full, needs the clock).
MONTH_END_HOURS = 2 * HOURS_PER_DAY


@dataclass(frozen=True)
class PolicyValue:
    """The exact value of a deterministic policy on the base variant (:func:`evaluate_policy`).

    Attributes:
        value: its expected month's return from the uniform start.
        optimum: the optimal policy's, :attr:`Solution.value`.
        lost_by_hour: ``(720,)``: the expected return lost to the optimum by the actions taken
            at each hours-used level, ``sum_s P(h, s) * (V[h, s] - Q[h, s, policy])``; it sums to
            ``optimum - value`` (the performance-difference identity), so it says *when* in the
            month a policy loses what it loses.
    """

    value: float
    optimum: float
    lost_by_hour: np.ndarray

    @property
    def pct_of_optimum(self) -> float:
        return 100.0 * self.value / self.optimum

    def pct_lost(self, start: int, stop: int = EPISODE_HOURS) -> float:
        """% of the optimum lost by the actions taken at hours used ``start .. stop - 1``."""
        return 100.0 * float(self.lost_by_hour[start:stop].sum()) / self.optimum


def evaluate_policy(actions: np.ndarray, tm_seed: int = 0) -> PolicyValue:
    """Evaluate a deterministic base-variant policy exactly (no sampling noise), in milliseconds.

    ``actions`` is ``(840,)`` (a stationary policy, e.g. the greedy policy of a Q-function that
    does not see the month's clock, or the heuristic) or ``(720, 840)`` (by hours used), of
    action indices ``0..24`` by state index. Raises ValueError on another shape or value.
    """
    pi = np.asarray(actions)
    if pi.shape == (NUM_STATES,):
        pi = np.broadcast_to(pi, (EPISODE_HOURS, NUM_STATES))
    if pi.shape != (EPISODE_HOURS, NUM_STATES) or pi.dtype.kind not in "iu":
        raise ValueError(
            f"actions must be integers of shape ({NUM_STATES},) or ({EPISODE_HOURS}, "
            f"{NUM_STATES}), got {pi.dtype} {pi.shape}"
        )
    if pi.min() < 0 or pi.max() >= NUM_LOCATIONS * NUM_LOCATIONS:
        raise ValueError(f"actions must be in 0..{NUM_LOCATIONS * NUM_LOCATIONS - 1}")
    c, solution = city(tm_seed), solve(tm_seed, False)
    states = np.arange(NUM_STATES)
    padded = np.zeros((EPISODE_HOURS + MAX_STEP_HOURS, NUM_STATES))
    for h in range(EPISODE_HOURS - 1, -1, -1):
        a = pi[h]
        padded[h] = c.reward[states, a] + padded[h + c.hours[states, a], c.next_state[states, a]]
    # Occupancy of (hours used, state) from the uniform start, and what each level's actions lose.
    occupancy = np.zeros_like(padded)
    occupancy[0] = 1.0 / NUM_STATES
    lost = np.zeros(EPISODE_HOURS)
    for h in range(EPISODE_HOURS):
        a = pi[h]
        np.add.at(occupancy, (h + c.hours[states, a], c.next_state[states, a]), occupancy[h])
        q = (
            c.reward[states, a]
            + solution._V_padded[h + c.hours[states, a], c.next_state[states, a]]
        )
        lost[h] = float(occupancy[h] @ (solution.V[h] - q))
    value = float(padded[0].mean())
    lost.flags.writeable = False
    return PolicyValue(value, solution.value, lost)


def optimum_value(variant: str, tm_seed: int = 0) -> float:
    """Optimal expected return of ``variant`` (``"base"`` or ``"requests"``) from the start."""
    return solve(tm_seed, is_request_variant(variant)).value


def targets(variant: str, tm_seed: int = 0) -> list[float]:
    """The returns a cab run is judged at, ascending: 2,500 and 95% of the optimum, and on the
    request variant 97% too (the bar its tuned defaults are held to). Rounded to 0.1."""
    fractions = (0.95, 0.97) if is_request_variant(variant) else (0.95,)
    optimum = optimum_value(variant, tm_seed)
    return [2500.0, *(round(f * optimum, 1) for f in fractions)]

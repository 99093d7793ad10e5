"""Tests of the exact DP optimum and the reference policies of the cab MDP."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from envs.cabs import NUM_RIDES, REQUEST_RATES, CabsEnv, city
from envs.optimum import (
    best_rank_weights,
    discounted_greedy_value,
    optimum_value,
    request_count_probabilities,
    solve,
    targets,
)
from envs.policies import HeuristicPolicy, RandomPolicy, evaluate, reference_returns

VARIANTS = [("base", False), ("requests", True)]


def test_capped_poisson_probabilities() -> None:
    p = request_count_probabilities(12.0)
    assert len(p) == 16 and p.sum() == pytest.approx(1.0) and (p >= 0).all()
    assert p[3] == pytest.approx(math.exp(-12) * 12**3 / 6)
    below_cap = sum(math.exp(-12) * 12**k / math.factorial(k) for k in range(15))
    assert p[15] == pytest.approx(1 - below_cap)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_best_rank_formula_matches_enumeration(k: int) -> None:
    """P(best of a uniform k-subset of 20 ranked items has rank j) = C(20-j, k-1) / C(20, k)."""
    counts = np.zeros(NUM_RIDES)
    for subset in itertools.combinations(range(NUM_RIDES), k):
        counts[min(subset)] += 1
    formula = [math.comb(NUM_RIDES - j, k - 1) / math.comb(NUM_RIDES, k) for j in range(1, 21)]
    np.testing.assert_allclose(counts / counts.sum(), formula)


@pytest.mark.parametrize("rate", REQUEST_RATES)
def test_best_rank_weights_are_a_distribution(rate: float) -> None:
    w0, w = best_rank_weights(rate)
    assert w0 == pytest.approx(math.exp(-rate))
    assert w0 + w.sum() == pytest.approx(1.0)
    assert (np.diff(w) <= 1e-15).all()  # better ranks are likelier to be the best requested


@pytest.mark.parametrize("variant, requests", VARIANTS)
def test_solution_shapes_and_last_level(variant: str, requests: bool) -> None:
    solution = solve(0, requests)
    assert solution is solve(0, requests)  # cached
    assert solution.V.shape == (720, 840)
    assert solution.value == pytest.approx(solution.V[0].mean())
    assert optimum_value(variant) == solution.value
    q = solution.q_values(719, 123)
    c = city(0)
    np.testing.assert_array_equal(q, c.reward[123])  # every action ends the month at 719
    if not requests:
        np.testing.assert_array_equal(solution.V[719], c.reward.max(axis=1))
    np.testing.assert_allclose(solution.Q[5, 77], solution.q_values(5, 77))


def test_base_optimum_is_bounded_by_the_best_hourly_profit() -> None:
    # Direct rides earn R - C = 4 per hour, the best rate; the last trip may run past 720 hours.
    value = optimum_value("base")
    assert 4 * 720 <= value <= 4 * (719 + 23)


@pytest.mark.parametrize("variant, requests", VARIANTS)
def test_dp_policy_achieves_the_dp_value(variant: str, requests: bool) -> None:
    solution = solve(0, requests)
    mean, std = evaluate(solution.policy(), variant, episodes=300, seed=1000)
    standard_error = std / np.sqrt(300)
    assert abs(mean - solution.value) <= 3 * standard_error + 1e-9


def test_dp_policy_on_another_city() -> None:
    solution = solve(3, True)
    mean, std = evaluate(solution.policy(), {"tm_seed": 3, "requests": True}, episodes=200)
    assert abs(mean - solution.value) <= 3 * std / np.sqrt(200)


@pytest.mark.parametrize("variant, requests", VARIANTS)
def test_discounted_greedy_value(variant: str, requests: bool) -> None:
    optimum = optimum_value(variant)
    assert discounted_greedy_value(1.0, requests=requests) == pytest.approx(optimum, rel=1e-12)
    if requests:  # the ceiling a per-step discount puts on a learner that sees the hours used
        ceilings = [
            discounted_greedy_value(g, requests=True) / optimum for g in (0.95, 0.99, 0.995)
        ]
        assert [round(c, 3) for c in ceilings] == [0.881, 0.975, 0.990]


def test_targets() -> None:
    assert targets("base") == [2500.0, round(0.95 * optimum_value("base"), 1)] == [2500.0, 2818.0]
    assert targets("requests") == [2500.0, 2630.7, 2686.1]
    assert targets("requests", tm_seed=3)[1:] == [
        round(f * optimum_value("requests", 3), 1) for f in (0.95, 0.97)
    ]


@pytest.mark.parametrize("variant", ["base", "requests"])
def test_optimum_beats_heuristic_beats_random(variant: str) -> None:
    returns = reference_returns(variant, episodes=100)
    assert set(returns) == {"random", "heuristic", "optimum"}
    assert returns["optimum"] >= returns["heuristic"] >= returns["random"]


def test_policies_only_take_available_actions() -> None:
    env = CabsEnv(requests=True)
    policies = [RandomPolicy(0), HeuristicPolicy(0), solve(0, True).policy()]
    for policy in policies:
        obs, info = env.reset(seed=0)
        policy.reset()
        for _ in range(200):
            a = policy(obs, info)
            assert info["action_mask"][a] == 1
            obs, _, terminated, _, info = env.step(a)
            if terminated:
                obs, info = env.reset()


def test_heuristic_base_takes_the_longest_direct_ride() -> None:
    env = CabsEnv()
    obs, info = env.reset(seed=2)
    a = HeuristicPolicy(0)(obs, info)
    tm = city(0).travel_times
    assert a // 5 == env.location and a % 5 != env.location
    longest = max(tm[env.location, q, env.hour, env.day] for q in range(5) if q != env.location)
    assert tm[env.location, a % 5, env.hour, env.day] == longest


def test_evaluate_is_reproducible() -> None:
    first = evaluate(RandomPolicy(1), "requests", episodes=5, seed=3)
    assert first == evaluate(RandomPolicy(1), "CabsRequests-v0", episodes=5, seed=3)


def test_exact_evaluation_of_a_policy() -> None:
    """``evaluate_policy``: the optimal policy scores 100% and loses nothing; the heuristic's
    exact value agrees with its sampled episodes, what it loses by hour sums to its gap to the
    optimum (the performance-difference identity), all of it in the month's last days; a
    stationary policy is the same as its (720, 840) table; a bad table is a ValueError."""
    from envs.cabs import EPISODE_HOURS, NUM_STATES
    from envs.optimum import evaluate_policy
    from envs.policies import episode_returns

    optimal = evaluate_policy(solve(0)._greedy.astype(np.int64))
    assert optimal.pct_of_optimum == pytest.approx(100.0, abs=1e-9)
    assert np.allclose(optimal.lost_by_hour, 0.0, atol=1e-9)

    actions = HeuristicPolicy().base_actions()
    heuristic = evaluate_policy(actions)
    sampled = episode_returns(HeuristicPolicy(), {}, 300, 0)
    half_width = 2.6 * sampled.std(ddof=1) / math.sqrt(len(sampled))
    assert abs(sampled.mean() - heuristic.value) < half_width + 1.0
    assert heuristic.lost_by_hour.sum() == pytest.approx(optimal.value - heuristic.value)
    assert heuristic.pct_lost(0) == pytest.approx(100.0 - heuristic.pct_of_optimum)
    assert heuristic.pct_lost(EPISODE_HOURS - 48) > 0.9 * heuristic.pct_lost(0) > 0
    table = np.broadcast_to(actions, (EPISODE_HOURS, NUM_STATES)).copy()
    assert evaluate_policy(table).value == heuristic.value

    for bad in (actions[:10], actions.astype(float), actions + 25, -actions - 1):
        with pytest.raises(ValueError, match="actions must"):
            evaluate_policy(bad)

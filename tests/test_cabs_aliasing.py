"""benchmarks/cabs_aliasing.py: the fixed points of a Q-learner blind to the month's clock."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from envs.cabs import NUM_STATES, city
from envs.optimum import evaluate_policy
from envs.policies import HeuristicPolicy

REPO = Path(__file__).resolve().parents[1]


def _module():
    """``benchmarks/cabs_aliasing.py`` (a script, not a package), imported by path."""
    path = REPO / "benchmarks" / "cabs_aliasing.py"
    spec = importlib.util.spec_from_file_location("cabs_aliasing", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cabs_aliasing", module)
    spec.loader.exec_module(module)
    return module


def test_occupancy_end_probability_and_the_myopic_fixed_point():
    """The occupancy starts uniform and spreads with exploration; a longer ride from the same
    state ends the month at least as often; at γ = 0 the fixed point is the best reward now."""
    m, c = _module(), city(0)
    heuristic = HeuristicPolicy().base_actions()
    d = m.occupancy(heuristic, 0.0)
    assert d.shape == (720, NUM_STATES) and d.min() >= 0.0
    np.testing.assert_allclose(d[0], 1.0 / NUM_STATES)
    explored = m.occupancy(heuristic, 0.5)
    assert (explored > 0).sum() > (d > 0).sum()

    p = m.end_probability(d)
    assert p.shape == c.reward.shape and 0.0 <= p.min() and p.max() <= 1.0
    by_length = np.take_along_axis(p, np.argsort(c.hours, axis=1, kind="stable"), axis=1)
    assert (np.diff(by_length, axis=1) >= -1e-12).all()

    assert (m.td_fixed_point(p, 0.0, per_hour=False) == c.reward.argmax(axis=1)).all()
    improved = m.monte_carlo_improvement(heuristic, 0.99)
    assert improved.shape == (NUM_STATES,) and 0 <= improved.min() <= improved.max() < 25


def test_on_the_heuristics_data_per_hour_discounting_settles_above_it_per_step_below():
    """Q-learning's tabular fixed point on the heuristic's data: discounting per step (as DQN
    does; a 40-hour ride counts as one step) settles well below the heuristic, discounting per
    hour above it (exact values)."""
    m = _module()
    heuristic = HeuristicPolicy().base_actions()
    p = m.end_probability(m.occupancy(heuristic, 0.0))
    bar = evaluate_policy(heuristic).value
    assert evaluate_policy(m.td_fixed_point(p, 0.95, per_hour=False)).value < 0.98 * bar
    assert evaluate_policy(m.td_fixed_point(p, 0.99, per_hour=True)).value > bar

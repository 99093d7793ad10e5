"""The report's interval estimates (analysis/stats.py) on data whose answer is known, the
hyperparameter importance and best-trial command (analysis/hparams.py), readable schedules."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import hparams, stats
from sweeps.harness.cli import setting
from sweeps.harness.values import readable


def test_km_median_of_seeds_that_all_reached_is_their_median_inside_its_interval():
    m = stats.km_median([3.0, 1.0, 2.0], [True, True, True])
    assert m.value == 2.0
    assert m.low <= 2.0 <= m.high
    assert (m.low, m.high) == (1.0, 3.0)  # three seeds bound the median by the extremes only


def test_km_median_is_unbounded_above_where_too_few_seeds_reached():
    # One seed of three reached the target at 10; two ran 20 without: fewer than half are
    # known to be there, so there is no median and no upper end to its interval.
    m = stats.km_median([10.0, 20.0, 20.0], [True, False, False])
    assert math.isnan(m.value) and m.low == 10.0 and math.isinf(m.high)
    assert math.isnan(stats.km_median([5.0, 5.0], [False, False]).value)


def test_kaplan_meier_counts_a_missed_seed_as_still_running():
    t, p, low, high = stats.kaplan_meier([5.0, 6.0, 20.0], [True, True, False])
    assert list(t) == [5.0, 6.0, 20.0]
    assert list(p) == pytest.approx([1 / 3, 2 / 3, 2 / 3])  # the budget is no arrival
    assert all(lo <= x <= hi for lo, x, hi in zip(low, p, high, strict=True))


def test_two_clearly_separated_groups_are_separated():
    fast = [1.0, 1.2, 1.1, 0.9, 1.05]
    slow = [10.0, 12.0, 11.0, 9.5, 10.5]
    ratio = stats.ratio_of_medians(slow, fast)
    assert ratio.value == pytest.approx(10.5 / 1.05)
    assert ratio.low > 1.0 and stats.separated(ratio)
    # The same by the log-rank test, with seeds of the slow one missing at their budget.
    p = stats.logrank_p(fast, [True] * 5, [10.0] * 5, [False] * 5)
    assert p < 0.01


def test_two_draws_of_one_distribution_are_not_separated():
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(0.0, 0.5, size=5), rng.lognormal(0.0, 0.5, size=5)
    ratio = stats.ratio_of_medians(a, b)
    assert ratio.low < 1.0 < ratio.high and not stats.separated(ratio)
    needed = stats.seeds_to_separate(ratio, 5)
    assert needed is None or needed > 5
    assert stats.logrank_p(a, [True] * 5, b, [True] * 5) > 0.05


def test_one_seed_gives_a_ratio_without_an_interval():
    ratio = stats.ratio_of_medians([2.0], [1.0])
    assert ratio.value == 2.0 and not ratio.has_interval and not stats.separated(ratio)


def test_seeds_to_separate_grows_as_the_ratio_nears_one():
    wide = stats.Estimate(1.5, 0.8, 2.8)
    assert stats.seeds_to_separate(wide, 3) > 3
    closer = stats.Estimate(1.1, 0.8, 2.8)
    assert stats.seeds_to_separate(closer, 3) > stats.seeds_to_separate(wide, 3)


def test_iqm_needs_five_seeds_for_an_interval():
    assert not stats.iqm([1.0, 2.0, 3.0, 4.0]).has_interval
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0, -50.0]
    from scipy.stats import trim_mean

    est = stats.iqm(values)
    assert est.value == pytest.approx(trim_mean(values, 0.25))
    assert est.low <= est.value <= est.high and est.high < 100.0  # the outliers are trimmed


def test_readable_schedules_and_numbers():
    assert readable([[0, 0.003], [60000, 0.0003]]) == "0.003 → 0.0003 over 60k steps"
    assert readable("[[0, 0.002], [3000000, 0.001]]") == "0.002 → 0.001 over 3M steps"
    assert readable([[0, 1.0], [1e6, 0.1], [3e6, 0.0]]) == "1 at 0 → 0.1 at 1M → 0 at 3M"
    assert readable(0.006110400397657679) == "0.00611"
    assert readable(64) == "64" and readable("adam") == "adam"


def _trials(n: int, seed: int = 0) -> pd.DataFrame:
    """A sweep whose final metric depends on lr only; batch is noise."""
    rng = np.random.default_rng(seed)
    lr = rng.uniform(1e-4, 1e-2, size=n)
    return pd.DataFrame(
        {
            "hp/lr": lr,
            "hp/train_batch_size": rng.choice([32.0, 64.0, 128.0], size=n),
            "hp/gamma": 0.99,  # one value: not a searched dimension
            "final_metric": -np.abs(np.log10(lr) + 3.0),  # best at lr = 1e-3
        }
    )


def test_importance_finds_the_hyperparameter_that_matters():
    imp = hparams.importances(_trials(40))
    assert list(imp.index)[0] == "lr"
    assert "gamma" not in imp.index
    assert imp.sum() == pytest.approx(1.0)
    assert hparams.importances(_trials(hparams.MIN_TRIALS - 1)).empty


def test_best_command_round_trips_through_set():
    trial = pd.Series(
        {
            "trial_id": "abc",
            "hp/lr": "[[0, 0.003], [60000, 0.0003]]",
            "hp/replay_buffer_config.capacity": 50000.0,
            "hp/replay_buffer_config.alpha": 0.6,
            "hp/gamma": 0.95,
            "hp/unused": float("nan"),
        }
    )
    config = hparams.best_config(trial)
    assert config == {
        "lr": [[0, 0.003], [60000, 0.0003]],
        "replay_buffer_config": {"capacity": 50000, "alpha": 0.6},
        "gamma": 0.95,
    }
    command = hparams.best_command("apex_cabs", trial)
    assert command.startswith("python sweeps/apex_cabs.py --num-samples 1 --set ")
    import shlex

    words = shlex.split(command)
    parsed = dict(setting(words[i + 1]) for i, w in enumerate(words) if w == "--set")
    assert parsed == config

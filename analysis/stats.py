"""Interval estimates for the report: what a handful of seeds supports, and what it does not.

* **Time to target is censored data.** A seed that never reached the target is right-censored at
  its budget (how long it ran). Per configuration, the Kaplan–Meier estimate of "fraction of
  seeds at the target by t" (:func:`kaplan_meier`, ``scipy.stats.ecdf`` on ``CensoredData``),
  and its median with a 95% interval read off scipy's pointwise log-log band (the
  Brookmeyer–Crowley construction: the times where the band's upper and lower edges cross 1/2).
  An upper end of ∞ says the band never crossed: too few seeds reached the target to bound it.
* **Ratios** (speedups) between two configurations that reached the target on every seed:
  ratio of the median times, with a 95% percentile bootstrap interval over seeds
  (``scipy.stats.bootstrap``, the two configurations resampled independently).
  :func:`separated` says whether the interval excludes 1; :func:`seeds_to_separate` roughly how
  many seeds each would make an interval this wide, in log ratio, exclude 1 at the same ratio.
* Where seeds missed on one side, the two are compared by scipy's **log-rank test**
  (:func:`logrank_p`), which uses the censored seeds as "at least this long".
* **Final performance with ≥ 5 seeds**: the interquartile mean (``scipy.stats.trim_mean`` at
  25%, rliable's IQM) with a 95% percentile bootstrap interval (:func:`iqm`).

No estimator is written here: scipy computes each one; this module only reads its results.
Resampling is seeded (:data:`SEED`), so a report regenerated from the same table has the same
bytes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
N_RESAMPLES = 9999
SEED = 0
ALPHA = 1.0 - CONFIDENCE
# Below this many seeds, final performance is a median and a range, not an IQM (rliable's
# estimators need a few seeds inside the interquartile range).
IQM_MIN_SEEDS = 5


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its 95% interval (``low``/``high`` NaN where none can be given;
    ``high`` is ∞ where the data bound it from below only)."""

    value: float
    low: float = math.nan
    high: float = math.nan

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


def _censored(times: Sequence[float], reached: Sequence[bool]):
    from scipy.stats import CensoredData

    t = np.asarray(times, dtype=float)
    hit = np.asarray(reached, dtype=bool)
    keep = ~np.isnan(t)
    return CensoredData(uncensored=t[keep & hit], right=t[keep & ~hit])


def kaplan_meier(times: Sequence[float], reached: Sequence[bool]):
    """The Kaplan–Meier estimate of the fraction of seeds at the target by ``t``: ``(t, p, low,
    high)`` arrays, a step function (value at t holds until the next t) with its 95% pointwise
    log-log band. ``times``: per seed, when it reached the target, or its budget where it did
    not (``reached`` False). None where no seed reached it (the fraction is 0 throughout)."""
    from scipy.stats import ecdf

    if not any(bool(r) and not math.isnan(float(t)) for t, r in zip(times, reached, strict=True)):
        return None
    cdf = ecdf(_censored(times, reached)).cdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # undefined where p is 1: the band is 1
        band = cdf.confidence_interval(CONFIDENCE, method="log-log")
    p = cdf.probabilities
    low = np.where(np.isnan(band.low.probabilities) & (p >= 1.0), 1.0, band.low.probabilities)
    high = np.where(np.isnan(band.high.probabilities) & (p >= 1.0), 1.0, band.high.probabilities)
    return cdf.quantiles, p, low, high


def km_median(times: Sequence[float], reached: Sequence[bool]) -> Estimate:
    """The Kaplan–Meier median time to target and its 95% interval. ``value`` is NaN where
    fewer than half the seeds are known to have reached it; ``high`` is ∞ where the band's lower
    edge never reaches 1/2 (the data don't bound the median from above)."""
    km = kaplan_meier(times, reached)
    if km is None:
        return Estimate(math.nan)
    t, p, low, high = km

    def first(mask: np.ndarray, otherwise: float) -> float:
        return float(t[np.argmax(mask)]) if mask.any() else otherwise

    return Estimate(
        value=first(p >= 0.5, math.nan),
        low=first(high >= 0.5, math.nan),
        high=first(low >= 0.5, math.inf),
    )


def ratio_of_medians(reference: Sequence[float], other: Sequence[float]) -> Estimate:
    """median(reference) / median(other) (> 1: ``other`` is faster) with its 95% percentile
    bootstrap interval over seeds; no interval with fewer than 2 seeds on a side."""
    from scipy.stats import bootstrap

    a = np.asarray(reference, dtype=float)
    b = np.asarray(other, dtype=float)
    value = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:
        return Estimate(value)

    def statistic(x, y, axis):
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples (all seeds equal): a point
        res = bootstrap(
            (a, b),
            statistic,
            n_resamples=N_RESAMPLES,
            vectorized=True,
            paired=False,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(SEED),
        )
    ci = res.confidence_interval
    return Estimate(value, float(ci.low), float(ci.high))


def separated(ratio: Estimate) -> bool:
    """True where the ratio's interval excludes 1: the seeds tell the two apart."""
    return ratio.has_interval and (ratio.low > 1.0 or ratio.high < 1.0)


def seeds_to_separate(ratio: Estimate, seeds: int) -> int | None:
    """Roughly how many seeds per configuration would narrow the interval (its half-width in
    log ratio, shrinking as 1/sqrt(seeds)) enough to exclude 1 at the measured ratio. None
    where the ratio is 1 or has no interval."""
    if not ratio.has_interval or ratio.low <= 0 or ratio.value <= 0 or ratio.value == 1.0:
        return None
    half = (math.log(ratio.high) - math.log(ratio.low)) / 2.0
    gap = abs(math.log(ratio.value))
    if half <= 0:
        return None
    return max(seeds + 1, math.ceil(seeds * (half / gap) ** 2))


def logrank_p(
    times_a: Sequence[float],
    reached_a: Sequence[bool],
    times_b: Sequence[float],
    reached_b: Sequence[bool],
) -> float:
    """Two-sided log-rank p-value of "the two reach the target at the same rate" (censored
    seeds count as at least their budget); NaN where neither reached it."""
    from scipy.stats import logrank

    if not (any(reached_a) or any(reached_b)):
        return math.nan
    return float(logrank(_censored(times_a, reached_a), _censored(times_b, reached_b)).pvalue)


def iqm(values: Sequence[float]) -> Estimate:
    """Interquartile mean (25% trimmed mean) over seeds with its 95% percentile bootstrap
    interval; NaN interval below :data:`IQM_MIN_SEEDS` seeds."""
    from scipy.stats import bootstrap, trim_mean

    v = np.asarray([x for x in values if not math.isnan(float(x))], dtype=float)
    if v.size == 0:
        return Estimate(math.nan)
    value = float(trim_mean(v, 0.25))
    if v.size < IQM_MIN_SEEDS:
        return Estimate(value)

    def statistic(x, axis):
        return trim_mean(x, 0.25, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap(
            (v,),
            statistic,
            n_resamples=N_RESAMPLES,
            vectorized=True,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(SEED),
        )
    return Estimate(value, float(res.confidence_interval.low), float(res.confidence_interval.high))

"""When a run's learning fell apart: its training return ended below a random policy's after
having been above it, each by more than the return's own step-to-step noise. One rule for the
live line (``reporting.ProgressCallback``) and the report (``analysis.stability``), so that what
a run warns about while it runs is what its report says afterwards."""

from __future__ import annotations

import math
from collections.abc import Sequence

TAIL = 3  # the last reported training returns whose mean is the run's end


def noise(returns: Sequence[float]) -> float:
    """The training return's own step-to-step noise: the median absolute change between
    successive values (0 with fewer than two)."""
    changes = sorted(abs(b - a) for a, b in zip(returns, returns[1:], strict=False))
    if not changes:
        return 0.0
    mid = len(changes) // 2
    return changes[mid] if len(changes) % 2 else (changes[mid - 1] + changes[mid]) / 2


def ended_below(returns: Sequence[float], random: float | None) -> bool:
    """Whether ``returns`` (finite training returns, in iteration order) were above ``random``
    at their best, by more than their ``noise`` up to it, and their last ``TAIL`` average below
    it, by more than their noise over the run: a return that only wanders about the random
    policy's (a game whose first iterations score what a random policy does, give or take) is
    no collapse. False without a random return."""
    if not returns or random is None or math.isnan(random):
        return False
    tail = returns[-TAIL:]
    best = max(range(len(returns)), key=returns.__getitem__)
    # Above at its best by more than its noise up to then; below at its end by more than its
    # noise over the whole run. (A whole run's noise for the first test would let the wild swings
    # after a collapse, IMPALA's on LunarLander among them, erase the best that came before.)
    # Its noise up to then over TAIL changes at least: a best that comes first (a run's first
    # returns are a random policy's, give or take) has no changes before it to measure.
    above = returns[best] - random > noise(returns[: max(best + 1, TAIL + 1)])
    return above and random - sum(tail) / len(tail) > noise(returns)

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
    at their best and their last ``TAIL`` average below it, each by more than the returns' own
    ``noise``: a return that only wanders about the random policy's (a game whose first
    iterations score what a random policy does, give or take) is no collapse. False without a
    random return."""
    if not returns or random is None or math.isnan(random):
        return False
    tail = returns[-TAIL:]
    margin = noise(returns)
    return max(returns) - random > margin and random - sum(tail) / len(tail) > margin

"""When a run's learning fell apart: its training return ended below a random policy's after
having been above it. One rule for the live line (``reporting.ProgressCallback``) and the
report (``analysis.stability``), so that what a run warns about while it runs is what its
report says afterwards."""

from __future__ import annotations

import math
from collections.abc import Sequence

TAIL = 3  # the last reported training returns whose mean is the run's end


def ended_below(returns: Sequence[float], random: float | None) -> bool:
    """Whether ``returns`` (finite training returns, in iteration order) were above ``random``
    at their best and their last ``TAIL`` average below it; False without a random return."""
    if not returns or random is None or math.isnan(random):
        return False
    tail = returns[-TAIL:]
    return max(returns) > random and sum(tail) / len(tail) < random

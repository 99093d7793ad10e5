"""The metrics seam: RLlib's timer objects, restarted as running means for the profiler
(``sweeps/perf/timer_shares.py``; read from Ray 2.60.0, ``ray/rllib/utils/metrics/stats``).

RLlib times a stage as an exponential moving average (coefficient 0.01) from its first call ever,
so a timer still carries the build and the warm-up long after; a profile of a window wants the
mean over the window's own calls. No option of ``MetricsLogger`` restarts one timer (``reset``
drops every stat, counters included), so the timer object keeps its class (an ``EmaStats``: its
value is what the driver aggregates) and only its value and its ``push`` change.
"""

from __future__ import annotations

import math
import types
from typing import Any


def restart_as_running_mean(stats: Any) -> None:
    """From now on ``stats`` (an ``EmaStats`` timer) holds the plain mean of the values pushed
    after this call: its ``_value`` reset, its ``push`` replaced on this object.

    Waits for: a window option on RLlib's timers (``MetricsLogger.log_time(window=...)`` that
    can be changed on a live logger), or ``MetricsLogger.reset`` for one key."""
    stats._value = math.nan
    stats._profile_calls = 0
    stats.push = types.MethodType(_running_mean_push, stats)


def _running_mean_push(stats: Any, value: Any) -> None:
    """``EmaStats.push`` as a plain running mean (installed on single timer objects)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return
    if not math.isfinite(value):
        return
    stats._profile_calls += 1
    if stats._profile_calls == 1:
        stats._value = value
    else:
        stats._value += (value - stats._value) / stats._profile_calls

"""Throughput around faults (issue 63 part 4): a trial's env steps per second of training clock
after its faults, against the same trial before them and, where the experiment ran one, against
the fault-free run of the same seed over the same env steps.

Read from the trial's rows alone (``result.json``). Each pair of consecutive rows of one
lifetime (``iterations_since_restore`` one up, the training clock forward) gives its env steps
over its training seconds; a window's rate is the sum of one over the sum of the other, so the
gap of a restore (a new actor, a checkpoint loaded) is never counted, and neither is
evaluation (off the suite's training clock). A window is chosen by the rows' wall-clock stamps
(``timestamp``, whole seconds) or by env steps.

Why the fault-free run at the same env steps is the comparison that decides: a trial's rate
changes as it trains without any fault (Ape-X samples fastest before its learner starts, the
cab env's episodes lengthen as the policy learns), so "after the kills / before them" mixes the
fault's cost with the trial's own drift. The fault-free run of the same seed has the same drift
at the same env steps and no fault.
"""

from __future__ import annotations

import math
from typing import Any

# Rows this long after the last fault count as after it: the restore and its first iteration.
SETTLE_S = 10.0
# Fewer env steps than this in a window, and its rate is not given (a few iterations at most).
MIN_WINDOW_STEPS = 1_000


def _point(row: dict[str, Any]) -> tuple[float, float, float, float]:
    """(wall-clock stamp, lifetime iteration, env steps, training clock) of a row."""
    from sweeps.harness import keys

    values = (
        row.get("timestamp"),
        row.get("iterations_since_restore"),
        keys.get(row, keys.ENV_STEPS),
        keys.get(row, keys.TRAIN_TIME_S),
    )
    return tuple(math.nan if v is None else float(v) for v in values)  # type: ignore[return-value]


def window_rate(
    rows: list[dict[str, Any]],
    *,
    from_unix: float = -math.inf,
    to_unix: float = math.inf,
    from_steps: float = -math.inf,
    to_steps: float = math.inf,
) -> dict[str, float]:
    """Env steps per training second over the row pairs of one lifetime inside the window: by
    wall-clock, the pairs wholly inside it; by env steps, each pair's share inside it (its
    seconds pro rata: another run's iterations end at other env steps). ``rate`` is NaN where
    the window holds fewer than ``MIN_WINDOW_STEPS``."""
    steps = seconds = 0.0
    first = last = math.nan
    for a, b in zip(map(_point, rows), map(_point, rows[1:]), strict=False):
        if not (b[1] == a[1] + 1 and b[3] > a[3] and b[2] > a[2]):
            continue  # across a restore, no env step, or a row without its clocks
        if a[0] < from_unix or b[0] > to_unix:
            continue
        lo, hi = max(a[2], from_steps), min(b[2], to_steps)
        if hi <= lo:
            continue
        steps += hi - lo
        seconds += (b[3] - a[3]) * (hi - lo) / (b[2] - a[2])
        first, last = (lo if math.isnan(first) else first), hi
    rate = steps / seconds if steps >= MIN_WINDOW_STEPS and seconds > 0 else math.nan
    return {"rate": rate, "env_steps": steps, "from_steps": first, "to_steps": last}


def around_faults(
    rows: list[dict[str, Any]],
    faults_unix: list[float],
    *,
    fault_free: list[dict[str, Any]] | None = None,
    settle_s: float = SETTLE_S,
) -> dict[str, Any] | None:
    """A trial's rate before its first fault and after its last (``settle_s`` on); with the
    fault-free run's rows of the same trial, that run's rate over the after window's env steps.
    None where the trial has no rows on one side of the faults (it ran wholly before or after
    them) or no fault is given."""
    if not faults_unix or not rows:
        return None
    before = window_rate(rows, to_unix=min(faults_unix))
    after = window_rate(rows, from_unix=max(faults_unix) + settle_s)
    if math.isnan(before["rate"]) and math.isnan(after["rate"]):
        return None
    out: dict[str, Any] = {
        "hit": lost_a_process(rows),
        "before": _round(before["rate"]),
        "after": _round(after["rate"]),
        "after_env_steps": [_round(after["from_steps"], 0), _round(after["to_steps"], 0)],
        "ratio": _round(after["rate"] / before["rate"], 3),
    }
    if fault_free is not None and not math.isnan(after["rate"]):
        same = window_rate(fault_free, from_steps=after["from_steps"], to_steps=after["to_steps"])
        out["fault_free"] = _round(same["rate"])
        out["ratio_to_fault_free"] = _round(after["rate"] / same["rate"], 3)
        # Over the whole trial, each fault's gap (the restart, on the training clock) included.
        out["lifetime_ratio_to_fault_free"] = _round(_lifetime(rows) / _lifetime(fault_free), 3)
    return out


def lost_a_process(rows: list[dict[str, Any]]) -> bool:
    """Whether the trial lost one of its processes: a restore (its lifetime iteration starting
    again: Tune retried it from a checkpoint) or a restart that RLlib or Ape-X counted (an env
    runner, a replay shard). A node kill can miss a trial: its node held none of them."""
    from benchmarks.faultlab.common import COUNTER_KEY
    from sweeps.harness import keys

    lives = [_point(r)[1] for r in rows]
    restored = any(b <= a for a, b in zip(lives, lives[1:], strict=False))
    counted = any(keys.get(r, key) for r in rows for key in COUNTER_KEY.values())
    return restored or bool(counted)


def _lifetime(rows: list[dict[str, Any]]) -> float:
    """The trial's env steps over its training clock at its last row."""
    _, _, steps, clock = _point(rows[-1]) if rows else (0, 0, math.nan, math.nan)
    return steps / clock if clock > 0 else math.nan


def _round(x: float, digits: int = 1) -> float | None:
    """JSON-safe: NaN (no rate) becomes None."""
    return None if x is None or math.isnan(x) else round(x, digits)

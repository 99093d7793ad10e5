"""Values as the suite reads and prints them: a dotted hyperparameter of a config, a number or
NaN, a hyperparameter (schedules included) as people read it. Standard library only."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def dotted(config: Mapping[str, Any], path: str) -> Any:
    """A dotted hyperparameter (``"a.b"``) of a config dict or params.json; RLlib stores some
    config keys as ``_<name>``, so ``b`` falls back to ``_b``. None when a part is missing."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node[part] if part in node else node.get(f"_{part}")
    return node


def number(value: Any) -> float:
    """``value`` as a float; None, booleans and anything non-numeric are NaN."""
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _steps(t: float) -> str:
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if abs(t) >= size:
            return f"{t / size:.3g}{unit}"
    return f"{t:.0f}"


def _is_schedule(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) >= 2
        and all(
            isinstance(p, list | tuple)
            and len(p) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in p)
            for p in value
        )
    )


def readable(value: Any) -> str:
    """A hyperparameter as people read it: a float to 4 significant digits; a schedule (RLlib's
    piecewise-linear ``[[step, value], ...]``, also as its JSON text) as "0.003 → 0.0003 over
    60k steps" (from step 0) or "0.003 at 0 → 0.001 at 1M → 0 at 3M"."""
    if isinstance(value, str) and value.lstrip().startswith("[["):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if _is_schedule(value):
        points = [(float(t), float(v)) for t, v in value]
        if len(points) == 2 and points[0][0] == 0:
            (_, v0), (t1, v1) = points
            return f"{v0:.3g} → {v1:.3g} over {_steps(t1)} steps"
        return " → ".join(f"{v:.3g} at {_steps(t)}" for t, v in points)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

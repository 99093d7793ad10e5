"""Env configs checked the same way for every env of the suite: a mapping of known keys, each
with a default, merged over the defaults; a bad key or value is one ``ValueError`` naming it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np


def merged_config(
    what: str,
    config: Mapping[str, Any] | None,
    defaults: Mapping[str, Any],
    also_known: Iterable[str] = (),
) -> dict[str, Any]:
    """``config`` over ``defaults`` as a plain dict; ``what`` names the env in errors (e.g.
    "cab env config"). Keys in ``also_known`` are accepted without a default."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ValueError(f"{what} must be a mapping, got {type(config).__name__}")
    known = {*defaults, *also_known}
    unknown = sorted(str(key) for key in config if key not in known)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {unknown}; known keys: {sorted(defaults)}")
    return {**defaults, **config}


def is_int(value: Any) -> bool:
    """An int (numpy's too), not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def check_int(what: str, key: str, value: Any, least: int) -> int:
    if not is_int(value) or value < least:
        raise ValueError(f"{what} {key!r} must be an int >= {least}, got {value!r}")
    return int(value)

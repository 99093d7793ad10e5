"""Test-only fault injection: the cab env that raises once, at a chosen step. Not a benchmark env
(it lives with the tests, not in the package).

The reliability tests (``tests/test_reliability.py``) run a cab sweep on ``FaultyCabs-v0`` to check
that a trial whose env runner raises is retried from its checkpoint, and that one which keeps
failing fails the sweep. Nothing else uses this module, :func:`envs.register_envs` does not
register it (a test calls :func:`register`), and the cab env (:mod:`envs.cabs`) knows nothing of it.

Config: the cab env's keys (:func:`envs.cabs.validate_env_config`) plus

* ``fail_at_step`` (int >= 1, or None: never): raise at this step, counted over every env of the
  process (an env runner's vectorised copies share one count), at most once per process;
* ``fail_marker`` (file path, or None): fail only while this file does not exist, and create it,
  so that a restarted process (a retried trial) does not fail again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envs.cabs import CabsEnv

FAULTY_CABS = "FaultyCabs-v0"

_process_steps = 0  # steps taken by all faulty envs in this process
_failure_injected = False  # the injected failure fires at most once per process


def split_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], int | None, str | None]:
    """``(cab env config, fail_at_step, fail_marker)`` from a faulty env's config; a ValueError
    naming the key on an ill-typed fault setting (the cab env checks its own keys)."""
    settings = dict(config)
    fail_at_step = settings.pop("fail_at_step", None)
    fail_marker = settings.pop("fail_marker", None)
    if fail_at_step is not None and (
        not isinstance(fail_at_step, int) or isinstance(fail_at_step, bool) or fail_at_step < 1
    ):
        raise ValueError(f"'fail_at_step' must be None or an int >= 1, got {fail_at_step!r}")
    if fail_marker is not None and (
        not isinstance(fail_marker, str | os.PathLike) or not os.fspath(fail_marker)
    ):
        raise ValueError(f"'fail_marker' must be None or a file path, got {fail_marker!r}")
    return settings, fail_at_step, None if fail_marker is None else os.fspath(fail_marker)


def _inject_failure(fail_at_step: int, fail_marker: str | None) -> None:
    """Raise the configured failure, once per process (and once overall with a marker)."""
    global _failure_injected
    if _failure_injected:
        return
    _failure_injected = True
    if fail_marker is not None:
        marker = Path(fail_marker)
        if marker.exists():
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"cab env failure injected at process step {_process_steps}\n")
    raise RuntimeError(
        f"injected failure at step {_process_steps} (fail_at_step={fail_at_step}, "
        f"pid={os.getpid()})"
    )


class FaultyCabsEnv(CabsEnv):
    """:class:`envs.cabs.CabsEnv` that raises at ``fail_at_step`` (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings, self.fail_at_step, self.fail_marker = split_config({**(config or {}), **kwargs})
        super().__init__(settings)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        global _process_steps
        _process_steps += 1
        if self.fail_at_step is not None and _process_steps >= self.fail_at_step:
            _inject_failure(self.fail_at_step, self.fail_marker)
        return super().step(action)


def register() -> None:
    """Register ``FaultyCabs-v0`` with Ray Tune (in the driver, before Tune starts)."""
    from ray.tune.registry import register_env

    register_env(FAULTY_CABS, FaultyCabsEnv)

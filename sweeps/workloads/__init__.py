"""The workloads: one module per environment, asked by the machinery (``base.Workload``).

``cabs`` (the SuperCabs MDP), ``pong`` (Atari Pong) and ``gym`` (any other Gymnasium env);
:func:`for_env` finds the workload of an ``--env`` (the benchmark's, the throughput
benchmark's) or of a run record's env: a named workload, a ``Workload`` object at an entry point
``package.module:NAME`` (a workload of your own, in one file), else the generic Gymnasium one.
Importing this package imports neither Ray nor torch.
"""

from __future__ import annotations

import importlib

from sweeps.workloads.base import Workload
from sweeps.workloads.cabs import CABS
from sweeps.workloads.gym import GYM
from sweeps.workloads.pong import PONG

NAMED: dict[str, Workload] = {w.name: w for w in (CABS, PONG)}

__all__ = ["CABS", "GYM", "NAMED", "PONG", "Workload", "for_env"]


def for_env(env: str) -> Workload:
    """The workload that runs ``env``: a named one (``cabs``, ``pong``), the ``Workload`` at an
    entry point ``package.module:NAME``, else the generic Gymnasium workload (``GYM``: a
    registered id or an env's entry point)."""
    if env in NAMED:
        return NAMED[env]
    module, sep, attr = env.partition(":")
    if sep and module and attr:
        try:
            found = getattr(importlib.import_module(module), attr, None)
        except Exception:  # not importable here: the Gymnasium workload says why, in one line
            found = None
        if isinstance(found, Workload):
            return found
    return GYM

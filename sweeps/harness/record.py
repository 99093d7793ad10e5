"""The run record (``run.json``): how to reproduce a sweep, and what it found.

Written atomically at start (status "running") and again at the end; analysis reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeps.harness import common, storage
from sweeps.harness.placement import Plan


def _git(*args: str) -> str | None:
    """``git ARGS`` run in this checkout: its stdout, or None outside a checkout / on failure."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit() -> str | None:
    return (_git("rev-parse", "HEAD") or "").strip() or None


def git_dirty() -> bool | None:
    """Whether tracked files differ from the commit (a run from a modified tree is not exactly
    reproducible from ``git_commit`` alone); None outside a git checkout."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status.strip())


def versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("ray", "torch", "gymnasium", "ale-py", "optuna", "numpy", "tensorboard"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def machine(plan: Plan) -> dict[str, Any]:
    import platform

    cpu_model = common.cpu_model()
    return {
        "cpus": plan.cpus,
        "gpus": plan.gpus,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "load_at_start": load_average(),
    }


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none): what else ran beside
    a timed run."""
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_jsonable(v) for v in value]
        return repr(value)


def write_record(location: str, record: dict[str, Any]) -> None:
    """Write ``run.json`` at ``location`` (a local path or a storage URI), its folder created."""
    storage.write_text(location, json.dumps(_jsonable(record), indent=2, sort_keys=True))

"""The run record (``run.json``): how to reproduce a sweep, and what it found.

Written atomically at start (status "running") and again at the end; analysis reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeps.common import atomic_write_text
from sweeps.placement import Plan
from sweeps.sweep import SampleFn


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

    cpu_model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": plan.cpus,
        "gpus": plan.gpus,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
    }


def search_space_description(sample_params: SampleFn) -> dict[str, str]:
    """Run the sample function against a recorder to describe the space (for run.json)."""
    space: dict[str, str] = {}

    class Recorder:
        def suggest_float(self, name, low, high, *, log=False, step=None):
            space[name] = f"{'loguniform' if log else 'uniform'}({low:g}, {high:g})"
            return low

        def suggest_int(self, name, low, high, *, step=1, log=False):
            space[name] = f"{'logint' if log else 'int'}({low}, {high})"
            return low

        def suggest_categorical(self, name, choices):
            space[name] = f"choice({list(choices)})"
            return choices[0]

    sample_params(Recorder())  # the real searcher passes an optuna.Trial with this interface
    return space


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


def write_record(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(_jsonable(record), indent=2, sort_keys=True))

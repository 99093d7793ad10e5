"""Small helpers shared by the sweeps and the analysis, written once.

Standard library only (no Ray, torch or pandas), so that ``analysis/`` can import it without
pulling in a trainer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A trial folder's final greedy evaluation, written by ``python -m sweeps.evaluate`` and read by
# ``python -m analysis``.
EVALUATION_FILE = "final_evaluation.json"
# Its episodes are seeded from here on (training and the periodic evaluation use small seeds),
# the same for every trial: the held-out episodes.
HELD_OUT_SEED = 1_000_000


class UsageError(Exception):
    """Bad input: one clear line, exit code 2, nothing written."""


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2 (argparse prints the usage
    too by default)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*: \S")


def error_line(text: str) -> str:
    """The telling line of a traceback: the last ``SomeError: message`` line (RLlib re-raises
    env errors as a bare ``RuntimeError`` from the original), else the last line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    with_message = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if with_message:
        return with_message[-1]
    return lines[-1] if lines else "(no error text)"


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


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through ``<path>.tmp`` and a rename: a reader (or a run killed
    mid-write) never sees a half-written file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def check_writable(path: Path) -> None:
    """Raise ``UsageError`` unless ``path`` (a file or folder to be created) can be written.

    The nearest existing folder takes a probe folder, made and removed at once: ``os.access``
    says yes to root on read-only and virtual file systems (``/proc``, a read-only mount)."""
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{path}: not writable")
    parent = path if path.is_dir() else path.parent  # an existing file is written in place
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{path}: cannot be created ({parent} is not a directory)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: not writable ({parent} is not writable)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-probe-", dir=parent))
    except OSError as e:
        raise UsageError(
            f"{path}: cannot be created ({parent} refuses new folders: {e.strerror})"
        ) from None


def cpu_model() -> str:
    """This machine's CPU model name (``/proc/cpuinfo``; else the platform's processor)."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()

"""Files the suite writes: atomically, after checking they can be written; the name and seed of
a trial's held-out evaluation; the JSON-lines files it and Tune append to, read back. Standard
library only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from sweeps.harness.errors import UsageError

# A trial folder's final greedy evaluation, written by ``python -m sweeps.evaluate`` and read by
# ``python -m analysis``.
EVALUATION_FILE = "final_evaluation.json"
# Its episodes are seeded from here on (training and the periodic evaluation use small seeds),
# the same for every trial: the held-out episodes.
HELD_OUT_SEED = 1_000_000


def json_lines(text: str) -> tuple[list[dict], int]:
    """The JSON objects of a JSON-lines file's ``text`` (Tune's ``result.json``, the suite's
    ``failures.jsonl``), one a line in order, and how many non-blank lines were not one: a writer
    killed mid-line leaves a torn last line, passed over and counted, never an error."""
    rows: list[dict] = []
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through ``<path>.tmp`` and a rename: a reader (or a run killed
    mid-write) never sees a half-written file."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """``atomic_write_text`` for bytes."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
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

"""A clean stop, by a signal, for a tool that runs sweeps one after another in child processes
(``benchmarks/family_tune.py``): ``with on_signal("tune"):`` around its work, and ``STOPPING``
checked before each run.

A tool started in the background (``nohup ... &`` from a script) ignores SIGINT, and a tool killed
outright leaves its running sweep to run its whole budget. Here SIGTERM (``kill PID``) sends
SIGTERM to the tool's sweeps (its children running a ``sweeps.`` module, found in /proc), which
stop as they stop on their own (their experiment state saved, exit 130), also a sweep started in
the next ``STOP_WATCH_S`` seconds; and it sets ``STOPPING``, so that no run starts after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_TAG = ["tool"]  # the tool's name in its stop line

# Set by SIGTERM or SIGINT (``_stop``): no run starts after it, and the one running is stopped.
STOPPING = threading.Event()
STOP_WATCH_S = 60.0  # how long after a SIGTERM a sweep the benchmark starts is still stopped


def _sweeps() -> list[int]:
    """The running benchmark's sweep: this process's children that run a ``sweeps.`` module
    (Linux: /proc; not a git commit or the report's process)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:  # a process that ended since the listing
            continue
        # (after the name: the state, then the parent's pid)
        if int(fields[1]) == me and any(a.startswith(b"sweeps.") for a in argv):
            found.append(int(stat.parent.name))
    return found


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM to the tool (``kill PID``): its running sweep gets SIGTERM and stops cleanly (its
    experiment state saved), and the tool stops where it checks ``STOPPING``; a killed tool would
    leave its sweep running. SIGINT (Ctrl-C at a terminal, which reaches the sweep too): the
    same, the sweep left to its own Ctrl-C."""
    if STOPPING.is_set():
        return
    STOPPING.set()
    # (os.write: a print here could land inside the main thread's own print)
    line = f"[{_TAG[0]}] {signal.Signals(signum).name}: stopping the running sweep\n"
    os.write(2, line.encode())
    if signum == signal.SIGTERM:  # also a sweep the benchmark is about to start
        threading.Thread(target=_stop_sweeps, daemon=True).start()


def _stop_sweeps(for_s: float = STOP_WATCH_S) -> None:
    """SIGTERM, once, to each sweep child this process has or starts within ``for_s`` seconds
    (the benchmark may be between printing a run and starting it), while ``STOPPING`` holds."""
    signalled: set[int] = set()
    end = time.monotonic() + for_s
    while STOPPING.is_set() and time.monotonic() < end:
        for pid in set(_sweeps()) - signalled:
            signalled.add(pid)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(0.25)


@contextlib.contextmanager
def on_signal(tag: str) -> Iterator[None]:
    """SIGTERM and SIGINT handled as the module docstring says, within the block (a stop left by
    an earlier block cleared); the handlers as they were after it."""
    _TAG[0] = tag
    STOPPING.clear()
    previous = {n: signal.signal(n, _stop) for n in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)

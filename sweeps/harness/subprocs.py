"""A child process that a SIGINT stops as Ctrl-C at a terminal does, however this process was
started: the one home of that rule for the tools that stop their runs with SIGINT (the Pong
queue, ``benchmarks/records.py``; the fault lab, ``benchmarks/faultlab/procs.py``)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from typing import Any


def popen_stoppable(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(cmd, start_new_session=True, **kwargs)`` with SIGINT at its default
    action and not blocked in the child, whatever this process's: a tool started in the
    background by a script (``nohup ... &`` in a shell without job control) has SIGINT ignored,
    and a child inherits an ignored signal and the signal mask through exec, so a SIGINT sent to
    stop the child would not reach one that sets no handler of its own (a Python process keeps
    an ignored SIGINT ignored). Set here, in the main thread, for the moment of the start (a
    handled signal is reset to its default in the child); no ``preexec_fn``, which is unsafe
    where threads run."""
    try:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: as it is
        return subprocess.Popen(list(cmd), start_new_session=True, **kwargs)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        return subprocess.Popen(list(cmd), start_new_session=True, **kwargs)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)

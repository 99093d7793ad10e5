"""A sweep in its own process group, and what is left of it: start it, send it a fault, find and
kill the Ray processes of that sweep and nothing else on the machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.faultlab.common import REPO
from sweeps.harness.subprocs import popen_stoppable


def start_sweep(sweep: str, argv: list[str], log: Path) -> subprocess.Popen:
    """``python sweeps/<sweep>.py ARGV`` in its own process group (a session), output to ``log``,
    on a new local Ray instance (``RAY_ADDRESS=local``: without it, ``ray.init()`` joins a
    cluster that another user started on this machine with ``ray start``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "RAY_ADDRESS": "local"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        # Ctrl-C as in a terminal, however the harness was started (sweeps.harness.subprocs).
        return popen_stoppable(
            [sys.executable, f"sweeps/{sweep}.py", *argv],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


class SweepProcesses:
    """The processes of one sweep: its process group (the driver and the Ray instance it
    started: GCS, raylet, agents) and Ray's workers, which run in sessions of their own and are
    known by the ``RAY_RAYLET_PID`` in their environment. Raylets are remembered while alive, so
    that their workers are still found once a SIGKILL took the group down."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.raylets: set[int] = set()

    def list(self) -> list[tuple[int, str]]:
        """(pid, title) of the live processes of the sweep (Ray's workers show their actor as
        title, e.g. ``ray::SingleAgentEnvRunner.sample()``); zombies left out."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, ...
                if fields[0] == "Z":
                    continue
                title = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                title = title.decode(errors="replace").strip()
                if int(fields[2]) == self.pgid:
                    if "/raylet/raylet " in title:
                        self.raylets.add(int(entry))
                elif not title.startswith("ray::") or self._raylet_of(entry) not in self.raylets:
                    continue
            except (OSError, ValueError, IndexError):
                continue
            found.append((int(entry), title))
        return found

    @staticmethod
    def _raylet_of(pid: str) -> int | None:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        for item in environ:
            if item.startswith(b"RAY_RAYLET_PID="):
                return int(item.split(b"=", 1)[1])
        return None

    def reap(self, timeout_s: float = 30.0) -> int:
        """SIGKILL whatever is left of the sweep and wait until none is alive; returns how many
        processes were left."""
        left = self.list()
        deadline = time.monotonic() + timeout_s
        while (alive := self.list()) and time.monotonic() < deadline:
            for pid, _ in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        return len(left)

    def watch(self, proc: subprocess.Popen, timeout_s: float, until: Any = None) -> int | None:
        """Wait up to ``timeout_s`` for the driver to exit (its exit code) or ``until()`` to be
        true (None), noting the sweep's raylets meanwhile."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.list()
            if until is not None and until():
                return None
            rc = _wait(proc, min(0.5, max(deadline - time.monotonic(), 0.01)))
            if rc is not None:
                return rc
        return proc.poll()


def _wait(proc: subprocess.Popen, timeout_s: float) -> int | None:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def send_fault(proc: subprocess.Popen, name: str) -> None:
    """SIGKILL: the whole group; SIGINT: the whole group (what a terminal's Ctrl-C does);
    SIGTERM: the driver alone (``kill PID``)."""
    try:
        if name == "SIGTERM":
            os.kill(proc.pid, signal.SIGTERM)
        else:
            os.killpg(proc.pid, getattr(signal, name))
    except ProcessLookupError:
        pass

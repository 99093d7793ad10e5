"""A child process that stops as a sweep does at Ctrl-C, for the tests of what runs sweeps (the
benchmark, the queue of Pong runs of record): at SIGINT it takes a moment to save, writes "saved"
to the file it was given, and exits 130. Its own child shares its process group, as a sweep's Ray
processes do. Run as ``python tests/stopping_child.py PATH``; ``PATH.started`` appears once it
listens for the signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

SAVE_S = 0.5  # longer than the 0.25 s that subprocess.call gives a child after a Ctrl-C
COMMAND = [sys.executable, str(Path(__file__).resolve())]


def main(path: str) -> None:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    def stop(*_: object) -> None:
        time.sleep(SAVE_S)
        Path(path).write_text("saved")
        sys.exit(130)

    signal.signal(signal.SIGINT, stop)
    Path(f"{path}.started").write_text("")
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1])

"""Interruption, failures and resume for the shared runner: Ctrl-C/SIGTERM noted for a clean stop
(``InterruptWatch``, ``INTERRUPTED``), every trial failure appended to ``failures.jsonl``
(``FailureLog``, ``read_failures``), how often Tune saves its experiment state, and the run
record of a resumed sweep (``resumed_record``).
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import threading
from pathlib import Path
from typing import Any

from ray.tune.callback import Callback

from sweeps.harness import storage
from sweeps.harness.common import error_line
from sweeps.harness.record import git_commit, git_dirty

# Set when Ctrl-C/SIGTERM asked the sweep to stop. Module-level, not callback state: Tune pickles
# the callbacks into tuner.pkl and a resumed sweep runs the unpickled copies.
INTERRUPTED = threading.Event()
FAILURES_FILE = "failures.jsonl"
# Seconds between saves of Tune's experiment state (which trials exist, their status and latest
# checkpoint). Tune's "auto" saves at most every 10 s: a trial started and killed (SIGKILL, a lost
# node) within that window is not in the saved state, so a resume reruns its configuration as a
# new trial and leaves the old folder orphaned. A save is a few MB of JSON: cheap at this period.
EXPERIMENT_STATE_PERIOD_S = 2


class InterruptWatch(Callback):
    """Notes a Ctrl-C in ``INTERRUPTED`` and hands it on to Tune's own handler.

    Tune installs its SIGINT handler when ``fit()`` starts (it then stops the trials, saves the
    experiment state and returns normally, so no KeyboardInterrupt reaches the runner); callbacks
    are set up right after that, so wrapping the handler here sees the signal first.
    """

    def setup(self, **info: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        tune_handler = signal.getsignal(signal.SIGINT)

        def on_sigint(signum, frame):
            INTERRUPTED.set()
            if callable(tune_handler):
                tune_handler(signum, frame)
            else:
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)


class FailureLog(Callback):
    """Appends each trial failure (retried or final) to ``<sweep folder>/failures.jsonl``.

    A file, not callback state, so that failures survive a resume and a killed driver."""

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._log(trial, retried=True)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._log(trial, retried=False)

    @staticmethod
    def _log(trial: Any, retried: bool) -> None:
        latest = trial.latest_checkpoint_result
        entry = {
            "trial": trial.trial_id,
            "failure": trial.num_failures,
            "retried": retried,
            "iteration": (trial.last_result or {}).get("training_iteration", 0),
            # The iteration a retry resumes from (0: from the start, no checkpoint yet).
            "checkpoint_iteration": (latest.metrics or {}).get("training_iteration", 0)
            if latest
            else 0,
            "error": _last_error_line(trial.error_file),
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        # Beside run.json, through the filesystem Tune writes the sweep folder with (a local
        # folder or cloud storage; Trial.storage is Ray 2.60.0's StorageContext).
        fs = trial.storage.storage_filesystem
        try:
            storage.append_line(
                fs, f"{trial.remote_experiment_path}/{FAILURES_FILE}", json.dumps(entry)
            )
        except OSError:
            pass


def _last_error_line(error_file: str | None) -> str:
    """The exception line of the latest failure in a trial's error.txt."""
    try:
        text = Path(error_file).read_text() if error_file else ""
    except OSError:
        return "(error.txt unreadable)"
    return error_line(text)


def read_failures(experiment: str) -> list[dict[str, Any]]:
    """The failures a sweep (a local folder or a storage URI) has logged so far (unreadable
    lines are skipped)."""
    out = []
    try:
        lines = storage.read_text(storage.join(experiment, FAILURES_FILE)).splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def resumed_record(record_path: str, args) -> dict[str, Any]:
    record = json.loads(storage.read_text(record_path))  # checked readable by the CLI
    record.setdefault("resumes", []).append(
        {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "argv": args.argv,
            "previous_status": record.get("status"),
            "git_commit": git_commit(),
            "git_dirty": git_dirty(),
        }
    )
    record.update(status="running", ended_at=None)
    return record

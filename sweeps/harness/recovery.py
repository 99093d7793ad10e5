"""Interruption, failures and resume for the shared runner: Ctrl-C/SIGTERM noted for a clean stop
(``stop_signals_noted``, ``on_stop_signal``, ``INTERRUPTED``), every trial failure appended to
``failures.jsonl`` (``FailureLog``, ``read_failures``), how often Tune saves its experiment
state, a child sweep or tool left to stop cleanly at a Ctrl-C (``call_to_its_end``), the run
record of a resumed sweep (``resumed_record``), a trial's result files trimmed to
its checkpoint when it restarts from it (``ResultJsonLogger``, ``ProgressCsvLogger``), a trial
pointed at a newer checkpoint when the one the saved state names is gone (``CheckpointGuard``),
and the Optuna trials a killed driver left RUNNING (``close_stale_study_trials``).

One file (over 500 lines): each piece is what one kind of interruption leaves behind, and the
resume reads all of them together; apart, a reader would have to find them to see what a resume
repairs.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow.fs as pafs
from ray.air.constants import EXPR_PROGRESS_FILE, EXPR_RESULT_FILE
from ray.tune import Checkpoint
from ray.tune.callback import Callback
from ray.tune.result import EPISODES_TOTAL, TIME_TOTAL_S, TIMESTEPS_TOTAL, TRAINING_ITERATION

from sweeps.harness import storage
from sweeps.harness.errors import error_line
from sweeps.harness.files import json_lines
from sweeps.harness.record import RunRecord, git_commit, git_dirty
from sweeps.harness.settings import Settings
from sweeps.seams import checkpointing
from sweeps.seams.tune import CsvLogger, JsonLogger

# Set when Ctrl-C/SIGTERM asked the sweep to stop. Module-level, not callback state: Tune pickles
# the callbacks into tuner.pkl and a resumed sweep runs the unpickled copies.
INTERRUPTED = threading.Event()
FAILURES_FILE = "failures.jsonl"
# Seconds between saves of Tune's experiment state (which trials exist, their status and latest
# checkpoint). Tune's "auto" saves at most every 10 s: a trial started and killed (SIGKILL, a lost
# node) within that window is not in the saved state, so a resume reruns its configuration as a
# new trial and leaves the old folder orphaned. A save is a few MB of JSON: cheap at this period.
EXPERIMENT_STATE_PERIOD_S = 2


def on_stop_signal(signum: int, frame: Any) -> None:
    """The runner's handler of Ctrl-C and SIGTERM while Tune runs (``runner.fit``; Tune's own
    SIGINT handler is off): noted in ``INTERRUPTED``, then handed to Tune as SIGUSR1 where Tune
    listens for it (it stops the trials, saves the experiment state and returns normally);
    before Tune listens, and at a second signal, a KeyboardInterrupt (no final save).

    Tune installs its SIGINT handler when ``fit()`` starts but the callbacks only after building
    its controller, which on a resume restores the whole experiment: a Ctrl-C in between reached
    Tune's handler alone, and a run stopped with its trials PENDING called itself finished
    (the CI of stop 52). Handling the signal here, from before ``fit()``, leaves no such gap."""
    first = not INTERRUPTED.is_set()
    INTERRUPTED.set()
    if first and callable(signal.getsignal(signal.SIGUSR1)):
        signal.raise_signal(signal.SIGUSR1)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def stop_signals_noted() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM go to ``on_stop_signal`` (SIGUSR1 at its default
    until Tune installs its handler); the previous handlers come back after. The runner holds it
    from its first step (parsing) to its last: a signal anywhere in start-up is noted in
    ``INTERRUPTED`` even where the KeyboardInterrupt it raises is lost on its way (a handler's
    exception inside an at-fork hook, e.g. logging's while ``ray.init`` starts its processes,
    is printed as "Exception ignored" and dropped: the sweep then ran to its end, exit 0)."""
    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)
    previous = {s: signal.getsignal(s) for s in stop_signals}
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    signal.signal(signal.SIGINT, on_stop_signal)
    signal.signal(signal.SIGTERM, on_stop_signal)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def call_to_its_end(cmd: Sequence[str]) -> int:
    """Run ``cmd`` (a sweep or one of its tools, in this process's group) and return its exit
    status (130: it was interrupted), waiting through Ctrl-C for it to stop cleanly.

    A Ctrl-C at a terminal (or SIGINT to the process group) reaches the child as well as this
    process. ``subprocess.call`` kills the child 0.25 s after it, before the child's own clean
    stop (Tune's last experiment-state save, its run record) is done, and leaves it to be resumed
    from whatever was saved before. Here this process waits; a second Ctrl-C reaches the child
    too, and the child stops at once (``on_stop_signal``)."""
    with subprocess.Popen(list(cmd)) as proc:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue


class InterruptWatch(Callback):
    """Nothing now: ``on_stop_signal`` notes a Ctrl-C. Kept so that a sweep folder saved with it
    in its callbacks (tuner.pkl) still resumes."""


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
    try:
        text = storage.read_text(storage.join(experiment, FAILURES_FILE))
    except OSError:
        return []
    return json_lines(text)[0]


def resumed_record(
    record_path: str, args: Settings, raw_env_steps_per_s: float | None = None
) -> RunRecord:
    """The run record of a sweep being resumed: this resume appended (with the machine's raw
    env rate now, where measured: sweeps/harness/machine_speed.py), running again."""
    record = RunRecord.read(record_path)  # checked readable by the CLI
    resume = {
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "argv": args.argv,
        "previous_status": record.status,
        # where the run before ended (its wall-clock: the pause between runs is no one's)
        "previous_ended_at": record.ended_at,
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
    }
    if raw_env_steps_per_s is not None:
        resume["raw_env_steps_per_s"] = raw_env_steps_per_s
    cap = args.time_budget_s
    if record.args is not None and cap != record.args.get("time_budget_s"):
        # A larger cap given with --resume (a sweep cut short): the sweep's from now on
        resume["time_budget_s"] = cap
        record.args = {**record.args, "time_budget_s": cap}
    record.resumes = [*(record.resumes or []), resume]
    record.status, record.ended_at, record.cut_short = "running", None, None
    return record


# ------------------------------------------------------------------------------------------------
# A checkpoint deleted after the last saved experiment state: the trial restarts from a newer one
# ------------------------------------------------------------------------------------------------

# Beside each checkpoint's files: the metrics Tune restores a trial's counters from (its
# iteration, clock, env steps), which Tune itself keeps only in the experiment state.
CHECKPOINT_METRICS_FILE = "sweep_checkpoint_metrics.json"
_FILES = "files"  # in that file: the checkpoint's own files and sizes, to tell a whole one
_RESTORED_METRICS = (TRAINING_ITERATION, TIME_TOTAL_S, TIMESTEPS_TOTAL, EPISODES_TOTAL)


class CheckpointGuard(Callback):
    """A trial never restarts from a checkpoint that is gone.

    Tune deletes a trial's older checkpoints (``num_to_keep``) as soon as a newer one is
    registered, and saves the experiment state that names the latest one a moment later (every
    ``EXPERIMENT_STATE_PERIOD_S``, or forced after ``num_to_keep`` checkpoints). A driver killed
    in between (SIGKILL, a lost node) leaves a saved state naming a deleted checkpoint; on
    ``--resume`` the trial then failed its restore on every retry ("Could not recover from
    checkpoint as it does not exist on storage anymore") and the sweep ended in error. A driver
    killed *while* Tune deleted it leaves the folder half deleted, and the restore failed on a
    missing file instead (tests/test_faults.py's random interruptions, once in a few runs).
    Here each checkpoint gets its metrics and the list of its files written beside them
    (``on_checkpoint``), and a pending trial whose checkpoint is gone or lacks a listed file is
    pointed, before it starts, at the newest whole one in its folder whose rows its result.json
    holds: it goes on from there, its clock and counters restored. With none, it starts over.
    A trial whose saved state names no checkpoint at all (the driver killed after its first
    checkpoint and before the next save of the state) goes on from the newest whole one in its
    folder the same way, and starts over only without one. Tune's checkpoint manager is changed
    through ``sweeps.seams.checkpointing``.
    """

    def __init__(self) -> None:
        self._checked: set[tuple[str, str]] = set()

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        result = trial.last_result or {}
        metrics = {k: result[k] for k in _RESTORED_METRICS if result.get(k) is not None}
        try:
            metrics[_FILES] = _files(checkpoint.filesystem, checkpoint.path)
        except OSError:  # unlisted: judged by its metrics file alone, as before the list
            pass
        try:
            with checkpoint.filesystem.open_output_stream(
                f"{checkpoint.path}/{CHECKPOINT_METRICS_FILE}"
            ) as f:
                f.write(json.dumps(metrics).encode())
        except OSError:  # the checkpoint stands without it; only a repair would miss it
            pass

    def on_step_begin(self, iteration, trials, **info):
        for trial in trials:
            if trial.status == "PENDING":
                self._repair(trial)

    def _repair(self, trial: Any) -> None:
        latest = trial.latest_checkpoint_result
        if latest is None or latest.checkpoint is None:
            self._newer_than_none(trial)
            return
        checkpoint = latest.checkpoint
        key = (trial.trial_id, checkpoint.path)
        if key in self._checked:
            return
        self._checked.add(key)
        fs = checkpoint.filesystem
        if fs.get_file_info(checkpoint.path).type != pafs.FileType.NotFound:
            if _metrics_if_whole(fs, checkpoint.path) is not None:
                return
        trial_dir = str(PurePosixPath(checkpoint.path).parent)
        gone = PurePosixPath(checkpoint.path).name
        why = f"its checkpoint {gone} is gone or half deleted"
        if self._restart_from_newest(trial, fs, trial_dir, why):
            return
        checkpointing.forget_checkpoints(trial.run_metadata.checkpoint_manager)
        print(
            f"[sweep] trial {trial.trial_id}: its checkpoint {gone} is gone (or half deleted) "
            "and no newer one has its metrics and rows: it starts over",
            flush=True,
        )

    def _newer_than_none(self, trial: Any) -> None:
        """A trial whose saved state names no checkpoint: one its folder holds all the same (a
        driver killed after the trial's first checkpoint and before the next save of the state)
        is where it goes on from, not from nothing over its own checkpoints."""
        key = (trial.trial_id, "")
        storage = getattr(trial, "storage", None)
        if key in self._checked or storage is None or storage.trial_dir_name is None:
            return  # (a trial that never started has no folder yet)
        self._checked.add(key)
        fs, trial_dir = storage.storage_filesystem, storage.trial_fs_path
        self._restart_from_newest(trial, fs, trial_dir, "the saved state names no checkpoint")

    def _restart_from_newest(self, trial: Any, fs: Any, trial_dir: str, why: str) -> bool:
        """Point ``trial`` at the newest whole checkpoint in ``trial_dir`` whose rows its
        result.json holds; False where there is none."""
        logged = last_logged_iteration(fs, f"{trial_dir}/{EXPR_RESULT_FILE}")
        found = newest_checkpoint(fs, trial_dir, up_to=logged)
        if found is None:
            return False
        path, index, metrics = found
        manager = trial.run_metadata.checkpoint_manager
        checkpointing.restart_from(manager, Checkpoint(path, filesystem=fs), metrics)
        trial.storage.current_checkpoint_index = index  # its next checkpoint: index + 1
        self._checked.add((trial.trial_id, path))
        print(
            f"[sweep] trial {trial.trial_id}: {why} (a driver killed before the next saved "
            f"experiment state); it restarts from {PurePosixPath(path).name} "
            f"(iteration {metrics[TRAINING_ITERATION]})",
            flush=True,
        )
        return True


def newest_checkpoint(
    fs: Any, trial_dir: str, up_to: int | None = None
) -> tuple[str, int, dict[str, Any]] | None:
    """The newest ``checkpoint_NNNNNN`` folder in ``trial_dir`` whose metrics file is readable,
    of training iteration ``up_to`` at most (the last row of the trial's result.json: a trial
    restored past its rows would leave the ones in between missing): (path, index, metrics);
    None without one."""
    try:
        infos = fs.get_file_info(pafs.FileSelector(trial_dir))
    except OSError:
        return None
    found = []
    for info in infos:
        name = PurePosixPath(info.path).name
        if info.type == pafs.FileType.Directory and name.startswith("checkpoint_"):
            suffix = name.removeprefix("checkpoint_")
            if suffix.isdigit():
                found.append((int(suffix), info.path))
    for index, path in sorted(found, reverse=True):
        metrics = _metrics_if_whole(fs, path)
        if metrics is None:
            continue
        if up_to is None or metrics[TRAINING_ITERATION] <= up_to:
            return path, index, metrics
    return None


def _files(fs: Any, path: str) -> dict[str, int]:
    """Every file under checkpoint folder ``path``: its path there and its size."""
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    return {
        str(PurePosixPath(i.path).relative_to(path)): i.size
        for i in infos
        if i.type == pafs.FileType.File
    }


def _metrics_if_whole(fs: Any, path: str) -> dict[str, Any] | None:
    """The restored metrics of checkpoint folder ``path`` (``on_checkpoint``'s file), or None
    where it is not whole: its metrics file gone or unreadable (a deletion cut short takes it
    as soon as any other file), or a file its list names missing or of another size. A
    checkpoint saved before the list existed is judged by its metrics file alone."""
    try:
        with fs.open_input_stream(f"{path}/{CHECKPOINT_METRICS_FILE}") as f:
            metrics = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict) or TRAINING_ITERATION not in metrics:
        return None
    listed = metrics.pop(_FILES, None)
    if listed is not None:
        try:
            present = _files(fs, path)
        except OSError:
            return None
        if any(present.get(name) != size for name, size in listed.items()):
            return None
    return metrics


# ------------------------------------------------------------------------------------------------
# A restarted trial's result files: the rows after its checkpoint are dropped, not written twice
# ------------------------------------------------------------------------------------------------


def writes_in_sweep_folder(trial: Any) -> bool:
    """Whether a trial's ``result.json`` and ``progress.csv`` are written in the sweep folder
    itself. Tune writes them in a staging folder under /tmp/ray and copies that to the sweep
    folder in the background at each save of its state, so that a SIGKILLed driver left the
    sweep folder a few rows behind the checkpoints the trainable had written there itself; a
    resumed trial pointed at the newest of those (``CheckpointGuard``) then lacked the rows in
    between. With the sweep folder on this machine the files are written
    in it directly, each row flushed before its checkpoint is registered; on remote storage,
    Tune's staging as before (and the guard picks no checkpoint past the rows there)."""
    return getattr(trial.storage.storage_filesystem, "type_name", None) == "local"


def result_file(trial: Any, name: str) -> Path:
    """Where the trial's result file ``name`` is written (``writes_in_sweep_folder``)."""
    if writes_in_sweep_folder(trial):
        path = Path(trial.path, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    return Path(trial.local_path, name)


def last_logged_iteration(fs: Any, path: str) -> int:
    """The last training iteration of the ``result.json`` at ``path`` on ``fs`` (0 without)."""
    try:
        with fs.open_input_stream(path) as f:
            lines = f.read().splitlines(keepends=True)
    except OSError:
        return 0
    return int(max((i for i in map(_row_iteration, lines) if i is not None), default=0))


def _row_iteration(line: bytes) -> float | None:
    """The training iteration of one whole line of a ``result.json``; None for a torn write
    (no newline, not JSON, not UTF-8) or a row without one."""
    try:
        row = json.loads(line) if line.endswith(b"\n") else None
    except ValueError:
        return None
    iteration = row.get("training_iteration") if isinstance(row, dict) else None
    return iteration if isinstance(iteration, int | float) else None


def restart_iteration(trial: Any) -> int:
    """The training iteration a (re)starting trial continues from: its latest checkpoint's,
    0 without one (it starts over)."""
    latest = trial.latest_checkpoint_result
    return int((latest.metrics or {}).get("training_iteration", 0)) if latest else 0


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite ``path`` with ``data`` in place (same inode: a logger that holds the file open
    in append mode goes on writing at its new end)."""
    with path.open("rb+") as f:
        f.write(data)
        f.truncate(len(data))


def trim_result_json(path: Path, keep_through: int) -> int:
    """Keep the rows of a trial's ``result.json`` up to iteration ``keep_through`` (what its
    checkpoint holds) and drop the rest, and a half-written last line; returns how many lines
    were dropped. The trial re-reports the dropped iterations after its restore."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    kept, dropped = [], 0
    for line in data.splitlines(keepends=True):
        iteration = _row_iteration(line)
        if iteration is not None and iteration <= keep_through:
            kept.append(line)
        elif line.strip():
            dropped += 1
    if dropped:
        _rewrite_in_place(path, b"".join(kept))
    return dropped


def trim_progress_csv(path: Path, keep_through: int) -> int:
    """``trim_result_json`` for ``progress.csv`` (the header is kept)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return 0
    lines = text.splitlines(keepends=True)
    if not lines or not lines[0].endswith("\n"):
        return 0
    header = next(csv.reader([lines[0]]))
    if "training_iteration" not in header:
        return 0
    column = header.index("training_iteration")
    kept, dropped = [lines[0]], 0
    for line in lines[1:]:
        cells = next(csv.reader([line]), [])
        try:
            ok = line.endswith("\n") and int(float(cells[column])) <= keep_through
        except (IndexError, ValueError):
            ok = False
        if ok:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        _rewrite_in_place(path, "".join(kept).encode())
    return dropped


class ResultJsonLogger(JsonLogger):
    """Tune's ``result.json`` logger, writing in the sweep folder itself where it can
    (``writes_in_sweep_folder``; else appending to the staged file Tune brings back from
    there); a trial that (re)starts from a checkpoint (retried after a failure, resumed
    after an interruption) has its rows past that checkpoint removed first, so that no (trial,
    iteration) row is there twice. Tune's open files: ``sweeps.seams.tune.JsonLogger``."""

    def log_trial_start(self, trial: Any) -> None:
        path = result_file(trial, EXPR_RESULT_FILE)
        if writes_in_sweep_folder(trial):
            if trial in self.trial_files:
                self.trial_files.pop(trial).close()
            trial.init_local_path()  # params.json goes there: Tune copies it over
            self.update_config(trial, trial.config)
            self.trial_files[trial] = path.open("at")
        else:
            super().log_trial_start(trial)  # the file restored from storage, open to append
        trim_result_json(path, restart_iteration(trial))


class ProgressCsvLogger(CsvLogger):
    """Tune's ``progress.csv`` logger, trimmed like ``ResultJsonLogger``; and a continued file
    keeps its header's columns (Tune's logger writes the new rows in the key order of the first
    new result, under the old header). Tune's files and writers: ``sweeps.seams.tune.CsvLogger``."""

    def log_trial_start(self, trial: Any) -> None:
        if trial in self.trial_files:  # a retried trial: set up again at its next result
            self.trial_files.pop(trial).close()
            self.csv_writers.pop(trial, None)

    def setup_trial(self, trial: Any) -> None:
        path = result_file(trial, EXPR_PROGRESS_FILE)
        if writes_in_sweep_folder(trial):
            if trial in self.trial_files:
                self.trial_files.pop(trial).close()
            self.trial_files[trial] = path.open("at")
            self.csv_writers[trial] = None
        else:
            super().setup_trial(trial)  # the file restored from storage, open for appending
        trim_progress_csv(path, restart_iteration(trial))
        self.continues[trial] = path.exists() and path.stat().st_size > 0
        if self.continues[trial]:
            with path.open(newline="") as f:
                header = next(csv.reader(f), None)
            if header:
                self.csv_writers[trial] = csv.DictWriter(self.trial_files[trial], header)


# ------------------------------------------------------------------------------------------------
# The Optuna study after a killed driver
# ------------------------------------------------------------------------------------------------


def close_stale_study_trials(url: str | None, study_name: str) -> int:
    """Mark FAIL the Optuna trials still RUNNING in a sweep's study (``--optuna-storage``) once
    the sweep has ended: a driver killed right after the searcher asked Optuna for a trial, and
    before Tune saved the searcher, leaves that trial RUNNING for ever (the resumed searcher
    asks for a new one). Returns how many were closed."""
    if not url:
        return 0
    import optuna
    from optuna.trial import TrialState

    study = optuna.load_study(study_name=study_name, storage=storage.optuna_storage(url))
    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for trial in stale:
        study.tell(trial.number, state=TrialState.FAIL)
    return len(stale)

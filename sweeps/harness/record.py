"""The run record (``run.json``): how to reproduce a sweep, and what it found.

Written atomically at start (status "running") and again at the end; analysis reads it. One typed
record, ``RunRecord``: the runner builds and writes it, and everything that reads a run folder
(resume, ``--configs-from``, the benchmark's reuse check, analysis, the fault lab) reads it back
through ``RunRecord.read``, which also reads the records written before it had a schema version.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.harness import storage

if TYPE_CHECKING:
    from sweeps.harness.placement import Plan

RECORD_FILE = "run.json"
# The layout ``RunRecord.write`` writes; a record without ``schema_version`` is version 1 (the
# same key names, written before the record was typed).
SCHEMA_VERSION = 2
# Fields written only once they are set (as the untyped record did: a run that has not ended has
# no "failures", one never resumed no "resumes"); the others are written even when None.
_WHEN_SET = {"when_set": True}


@dataclass
class Machine:
    """The machine a run started on (``run.json`` "machine")."""

    cpus: float | None = None
    gpus: float | None = None
    cpu_model: str | None = None
    platform: str | None = None
    load_at_start: float | None = None  # the 1-minute load average
    load_at_end: float | None = field(default=None, metadata=_WHEN_SET)
    # The workload's raw env rate, env steps/s (sweeps/harness/machine_speed.py): how fast the
    # machine was, which the load average does not show (a throttled host)
    raw_env_steps_per_s_at_start: float | None = field(default=None, metadata=_WHEN_SET)
    raw_env_steps_per_s_at_end: float | None = field(default=None, metadata=_WHEN_SET)
    # The cores the run's processes could use (affinity: ``taskset`` narrows it); ``cpus`` above
    # is what Ray declares (``--num-cpus`` may declare more, on purpose)
    cores: int | None = field(default=None, metadata=_WHEN_SET)
    # Seconds the run's cores were busy from its start to its summary, every process (its runs
    # and resumes together; /proc/stat): with its wall-clock, what a plan predicts from
    # (sweeps/harness/budget.py)
    busy_s: float | None = field(default=None, metadata=_WHEN_SET)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know


@dataclass
class RunRecord:
    """One sweep's ``run.json``: how to reproduce it, and what it found.

    ``schema_version`` is the layout the record was read from (1: written before it had one);
    ``write`` always writes the current layout (``SCHEMA_VERSION``). Keys this version does not
    know are kept in ``extra`` and written back as they were."""

    schema_version: int = SCHEMA_VERSION
    sweep: str | None = None  # the sweep file's name, e.g. "dqn_cabs"
    algo: str | None = None
    env: str | None = None  # "cabs", "pong" or a Gymnasium env id
    variant: str | None = None  # the cab variant, or a generic env's config as JSON
    env_id: str | None = None  # the env as registered with RLlib
    kind: str | None = None  # "sweep" or "benchmark"
    command: str | None = None
    argv: list[str] = field(default_factory=list)
    args: dict[str, Any] | None = None  # the parsed flags (None: not recorded)
    hyperparameters: list[str] = field(default_factory=list)
    search_space: dict[str, str] = field(default_factory=dict)
    base_config: dict[str, Any] | None = None  # the algorithm config, tuned defaults
    metric: str | None = None  # the flat result key that judges a trial
    mode: str = "max"
    stop: dict[str, float | None] = field(default_factory=dict)  # flat result key: threshold
    scheduler: dict[str, Any] = field(default_factory=dict)  # "type" ("fifo", "asha") and ASHA's
    optimum: float | None = None  # the cab env's exact optimum
    references: dict[str, dict[str, Any]] | None = None  # e.g. "random": {"mean", "episodes"}
    targets: list[float] = field(default_factory=list)
    git_commit: str | None = None
    git_dirty: bool | None = None
    versions: dict[str, str] = field(default_factory=dict)  # package: version
    machine: Machine = field(default_factory=Machine)
    plan: dict[str, Any] | None = None  # bundles, strategy, concurrent
    started_at: str | None = None  # ISO 8601, UTC
    ended_at: str | None = None
    status: str | None = None  # "running", "interrupted", "cut short", "failed", "finished"
    first_trial: dict[str, Any] | None = None  # the tuned defaults as search parameters
    failures: list[dict[str, Any]] | None = field(default=None, metadata=_WHEN_SET)
    held_out: dict[str, Any] | None = field(default=None, metadata=_WHEN_SET)
    optuna_stale_trials_failed: int | None = field(default=None, metadata=_WHEN_SET)
    resumes: list[dict[str, Any]] | None = field(default=None, metadata=_WHEN_SET)
    # A sweep its wall-clock cap stopped: trials planned, ran, ... (sweeps/harness/budget.py)
    cut_short: dict[str, Any] | None = field(default=None, metadata=_WHEN_SET)
    # CPU seconds per kind of process over the run's trials (sweeps/harness/cpu_time.py)
    cpu: dict[str, Any] | None = field(default=None, metadata=_WHEN_SET)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know

    @classmethod
    def read(cls, source: str | os.PathLike[str] | Mapping[str, Any]) -> RunRecord:
        """The record in file ``source`` (a local path or a storage URI) or in an already read
        JSON object. Missing fields get their defaults; a field of the wrong type is one
        ValueError naming the file and the field, as is a file that is not a JSON object;
        OSError when the file cannot be read."""
        is_file = isinstance(source, str | os.PathLike)
        where = str(source) if is_file else RECORD_FILE
        data = _load(where) if is_file else source
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: not a JSON object")
        record = _from_dict(cls, data, where, "")
        if record.schema_version > SCHEMA_VERSION:
            raise ValueError(
                f"{where}: schema_version {record.schema_version} is newer than this suite's "
                f"({SCHEMA_VERSION})"
            )
        if "schema_version" not in data:
            record.schema_version = 1
        return record

    @classmethod
    def of_folder(cls, folder: str | os.PathLike[str]) -> RunRecord | None:
        """The record of the run in local ``folder``: None where the folder holds none that says
        how the run went (no readable ``run.json``, or one without its arguments); a ValueError
        naming the file where ``run.json`` is not a run record."""
        try:
            record = cls.read(Path(folder) / RECORD_FILE)
        except OSError:  # no such file, or ``folder`` is not a folder
            return None
        return None if record.args is None else record

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``run.json`` holds: the same key names as every earlier record, and
        ``schema_version``."""
        return {**_to_dict(self), "schema_version": SCHEMA_VERSION}

    def write(self, location: str) -> None:
        """Write the record at ``location`` (a local path or a storage URI) atomically."""
        write_record(location, self.to_json())


def _load(where: str) -> Any:
    """The JSON value in file ``where``; OSError, or ValueError naming the file."""
    try:
        text = storage.read_text(where) if storage.is_uri(where) else Path(where).read_text("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e})") from None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _from_dict(cls: type, data: Mapping[str, Any], where: str, prefix: str) -> Any:
    """``cls`` (a record dataclass) from a JSON object, each field's type checked."""
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
    values: dict[str, Any] = {}
    for name in (n for n in names if n in data):
        hint, value = hints[name], data[name]
        if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
            values[name] = _from_dict(hint, value, where, f"{prefix}{name}.")
        elif dataclasses.is_dataclass(hint) or not _is(value, hint):
            shown = "null" if value is None else type(value).__name__
            expected = "object" if dataclasses.is_dataclass(hint) else _describe(hint)
            where_in = f"{prefix}{name}"
            raise ValueError(f"{where}: field {where_in!r} is {shown}, expected {expected}")
        else:
            values[name] = value
    extra = {k: v for k, v in data.items() if k not in names}
    return cls(**values, extra=extra)


def _is(value: Any, hint: Any) -> bool:
    """Whether a JSON value has type ``hint`` (an int is a float; a bool is neither)."""
    origin, params = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (types.UnionType, typing.Union):
        return any(_is(value, p) for p in params)
    if hint is type(None):
        return value is None
    if hint in (int, float):
        number = int if hint is int else (int, float)
        return isinstance(value, number) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    if origin is list:
        return isinstance(value, list) and all(_is(v, params[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            isinstance(k, str) and _is(v, params[1]) for k, v in value.items()
        )
    raise TypeError(f"no check for {hint!r}")


def _describe(hint: Any) -> str:
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def _to_dict(record: Any) -> dict[str, Any]:
    """A record dataclass as a JSON object: its ``extra`` keys, then its fields (fields set only
    once set left out while None); nested records as objects."""
    out = dict(record.extra)
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name == "extra" or (value is None and f.metadata.get("when_set")):
            continue
        out[f.name] = _to_dict(value) if dataclasses.is_dataclass(value) else value
    return out


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


def machine(plan: Plan) -> Machine:
    import platform

    from sweeps.harness.cpu_time import cores

    return Machine(
        cores=cores(),
        cpus=plan.cpus,
        gpus=plan.gpus,
        cpu_model=cpu_model(),
        platform=platform.platform(),
        load_at_start=load_average(),
    )


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none): what else ran beside
    a timed run."""
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def jsonable(value: Any) -> Any:
    """``value`` as ``run.json`` holds it: objects JSON cannot hold as their repr."""
    try:
        json.dumps(value)
        return value
    except TypeError:
        if isinstance(value, dict):
            return {str(k): jsonable(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [jsonable(v) for v in value]
        return repr(value)


def write_record(location: str, record: dict[str, Any]) -> None:
    """Write ``run.json`` at ``location`` (a local path or a storage URI), its folder created."""
    storage.write_text(location, json.dumps(jsonable(record), indent=2, sort_keys=True))


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

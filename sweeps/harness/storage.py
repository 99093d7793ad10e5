"""Where a sweep's data lives: its folder, a local folder or a storage URI (``s3://bucket/runs``,
``gs://…``, ``file:///abs/path``) that goes to Tune untouched; and, with ``--optuna-storage``,
the database or Optuna journal file that holds its Optuna study.

Tune reads and writes its storage through pyarrow's filesystems (``RunConfig(storage_path=...)``);
the suite's own files in a sweep folder (``run.json``, ``failures.jsonl``) go through the same
filesystems here, so they sit beside Tune's files wherever that is. A *location* is a local path
(expanded and resolved) or a URI (kept as given, a ``?query`` included).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sweeps.harness.errors import UsageError, error_line
from sweeps.harness.files import atomic_write_text, check_writable

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(text: str) -> bool:
    """``scheme://…`` (s3, gs, file, ...), as opposed to a local path."""
    return bool(_SCHEME.match(str(text)))


def mangled_scheme(text: str) -> str | None:
    """The scheme of a URI written with one slash (``s3:/bucket``), which a local path would
    turn into a folder named ``s3:``; None otherwise."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)", str(text))
    return match.group(1) if match else None


def root(storage_path: str) -> str:
    """``--storage-path`` as Tune gets it: a URI untouched, a local path expanded and resolved."""
    if is_uri(storage_path):
        return str(storage_path)
    return str(Path(storage_path).expanduser().resolve())


def sweep_folder(storage_path: str, name: str) -> str:
    """The sweep folder ``<--storage-path>/<--name>`` as a location."""
    return join(root(storage_path), name)


def join(location: str, *names: str) -> str:
    """``location/name/...`` (before a URI's ``?query``)."""
    if not is_uri(location):
        return str(Path(location, *names))
    base, sep, query = location.partition("?")
    return "/".join([base.rstrip("/"), *names]) + sep + query


def split(location: str) -> tuple[str, str]:
    """(parent location, folder name) of a sweep folder."""
    if not is_uri(location):
        path = Path(location)
        return str(path.parent), path.name
    base, sep, query = location.partition("?")
    parent, _, name = base.rstrip("/").rpartition("/")
    return parent + sep + query, name


def filesystem(location: str) -> tuple[Any, str]:
    """pyarrow's filesystem for ``location`` and the path on it (Tune resolves URIs the same
    way); a UsageError for a URI pyarrow cannot use (unknown scheme, missing bucket, a client
    library it lacks)."""
    import pyarrow.fs

    if not is_uri(location):
        return pyarrow.fs.LocalFileSystem(), str(location)
    try:
        return pyarrow.fs.FileSystem.from_uri(location)
    except (ValueError, OSError) as e:  # pyarrow.ArrowInvalid is a ValueError
        raise UsageError(error_line(f"{type(e).__name__}: {e}")) from None


def local_path(location: str) -> Path | None:
    """The local path of ``location`` (a path, or a ``file://`` URI); None for remote storage."""
    if not is_uri(location):
        return Path(location)
    if location.lower().startswith("file://"):
        return Path(filesystem(location)[1])
    return None


def kind(location: str) -> str:
    """ "file", "dir" or "missing"; OSError when the storage cannot be reached."""
    import pyarrow.fs

    fs, path = filesystem(location)
    info = fs.get_file_info(path)
    if info.type == pyarrow.fs.FileType.NotFound:
        return "missing"
    return "dir" if info.type == pyarrow.fs.FileType.Directory else "file"


def names(location: str) -> list[str]:
    """The names in folder ``location`` (empty when it does not exist)."""
    import pyarrow.fs

    fs, path = filesystem(location)
    selector = pyarrow.fs.FileSelector(path, allow_not_found=True)
    return [info.base_name for info in fs.get_file_info(selector)]


def read_text(location: str) -> str:
    """The text of file ``location``; OSError (FileNotFoundError) when it cannot be read."""
    fs, path = filesystem(location)
    with fs.open_input_stream(path) as f:
        return f.read().decode("utf-8")


def write_text(location: str, text: str) -> None:
    """Write file ``location``, its folder created: locally through a rename (a reader never
    sees half a file); on object storage one upload, which is whole or absent anyway."""
    local = local_path(location)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(local, text)
        return
    fs, path = filesystem(location)
    fs.create_dir(path.rpartition("/")[0], recursive=True)
    with fs.open_output_stream(path) as f:
        f.write(text.encode("utf-8"))


def append_line(fs: Any, path: str, line: str) -> None:
    """Append ``line`` to file ``path`` on pyarrow filesystem ``fs``; object stores cannot
    append, so there the (small) file is read and written again."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        with fs.open_append_stream(path) as f:
            f.write(data)
        return
    except NotImplementedError:  # pyarrow.ArrowNotImplementedError: S3, GCS
        pass
    try:
        with fs.open_input_stream(path) as f:
            data = f.read() + data
    except FileNotFoundError:
        pass
    with fs.open_output_stream(path) as f:
        f.write(data)


def is_journal(text: str) -> bool:
    """``--optuna-storage`` naming a local file (no ``scheme://``): Optuna's journal file."""
    return not is_uri(text)


def optuna_storage_url(text: str) -> str:
    """``--optuna-storage``, checked without writing, as the runner keeps it.

    A local file path (no ``scheme://``, e.g. ``runs/optuna.journal``): Optuna's journal file
    storage, an append-only log built to survive a killed writer (returned absolute). Otherwise a
    database URL for Optuna's RDBStorage (SQLAlchemy's form, e.g. ``sqlite:///runs/optuna.db``,
    ``postgresql://user@host/db``): a SQLite file's folder must be one that can be made (it is,
    when the sweep starts), another database must answer; a SQLite path is made absolute, so
    that a resumed sweep started elsewhere finds the same file. A UsageError says what is wrong
    in one line."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    if is_journal(text):
        if mangled_scheme(text):
            raise UsageError(f"a URL needs two slashes ({mangled_scheme(text)}://...)")
        return str(_checked_file(Path(text)))
    try:
        url = make_url(text)
        url.get_dialect()
    except (ArgumentError, NoSuchModuleError) as e:
        raise UsageError(
            f"not a database URL Optuna can use ({e}); e.g. sqlite:///runs/optuna.db, or a "
            "file path for Optuna's journal file"
        ) from None
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:"):
            raise UsageError("an in-memory database keeps nothing; name a file (sqlite:///PATH)")
        path = _checked_file(Path(url.database))
        return url.set(database=str(path)).render_as_string(hide_password=False)
    try:
        with create_engine(url).connect():
            pass
    except Exception as e:  # a database driver not installed, a server that does not answer
        raise UsageError(f"cannot connect: {error_line(f'{type(e).__name__}: {e}')}") from None
    return text


def _checked_file(path: Path) -> Path:
    path = path.expanduser().resolve()
    if path.is_dir():
        raise UsageError(f"{path} is a folder; name a file inside it")
    check_writable(path)
    return path


def without_password(text: str) -> str:
    """``text`` with the password of any ``scheme://user:password@host`` URL in it replaced by
    ``***``: what the run record and the terminal keep of ``--optuna-storage``."""
    return re.sub(r"(://[^/:@\s]+:)[^@/\s]+@", r"\1***@", text)


def optuna_storage(url: str, read_only: bool = False) -> Any:
    """Optuna's storage at a checked ``url`` (``optuna_storage_url``): a journal file
    (``JournalStorage``) for a path, else RDBStorage; the file's folder is made first (SQLite and
    the journal make the file, not its folder). ``read_only``: a journal as it is, to read while
    a writer may be appending to it (no repair of its last record, no folder made)."""
    import optuna
    from sqlalchemy.engine import make_url

    if is_journal(url) and read_only:
        return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(url)))
    if is_journal(url):
        Path(url).parent.mkdir(parents=True, exist_ok=True)
        repair_journal(url)
        backend = optuna.storages.journal.JournalFileBackend(str(url))
        return optuna.storages.JournalStorage(backend)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.RDBStorage(url)


def repair_journal(url: str | None) -> bool:
    """Cut a half-written last record off an Optuna journal file (``--optuna-storage PATH``),
    left by a writer killed mid-append: the next record would be glued to it and the study
    could no longer be read. True when something was cut; no-op for a database URL."""
    if not url or not is_journal(url):
        return False
    path = Path(url)
    try:
        with path.open("rb+") as f:
            data = f.read()
            if not data or data.endswith(b"\n"):
                return False
            f.truncate(data.rfind(b"\n") + 1)
            return True
    except FileNotFoundError:
        return False


def study_call(name: str, url: str) -> str:
    """The call that opens the Optuna study ``name`` in ``url`` (a sweep's: its --name, its
    --optuna-storage) in Python."""
    storage = without_password(url)
    if is_journal(storage):
        storage_expr = (
            "optuna.storages.JournalStorage("
            f"optuna.storages.journal.JournalFileBackend({storage!r}))"
        )
        return f"optuna.load_study(study_name={name!r}, storage={storage_expr})"
    return f"optuna.load_study(study_name={name!r}, storage={storage!r})"

"""How the store's DuckDB file is opened: briefly, safely, and with one clear error.

DuckDB lets one process write a file, and nobody read it meanwhile. So a :class:`Store`
never keeps the file open: it holds an in-memory DuckDB connection and ATTACHes the
file only for the statements of one call (about a millisecond), read-only when it only
reads. A session writing its rows and any number of readers (``stedge runs``, reports,
the dashboard) then take turns; whoever finds the file busy retries for a few seconds.

Every failure to open becomes a :class:`~pytest_stedge.errors.StoreError` of one line
naming the file: missing, under a regular file, not a DuckDB file, damaged, busy, or a
full disk (:class:`StoreFullError`). Extension autoinstall and autoload are off, so a
file that is not a DuckDB store never makes DuckDB fetch anything.
"""

from __future__ import annotations

import errno
import time
from pathlib import Path

import duckdb

from pytest_stedge.errors import StoreBusyError, StoreError

CATALOG = "stedge"
# No network, no extension loading behind our back (a SQLite or Parquet file given as
# the store would otherwise make DuckDB download a scanner).
SAFE_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
RETRY_S = 0.02
HEADER_BYTES = 3 * 4096  # DuckDB: the file header and two database headers
DEFAULT_WAIT_S = 5.0
MEMORY = ":memory:"


class StoreFullError(StoreError):
    """The disk holding the store is full: nothing more can be written there."""


def connect_memory() -> duckdb.DuckDBPyConnection:
    """The in-memory connection a Store runs its SQL on (the file is attached to it)."""
    return duckdb.connect(":memory:", config=SAFE_CONFIG)


def quote_literal(text: str) -> str:
    """A SQL string literal (ATTACH and COPY take file names as literals, not parameters)."""
    return "'" + text.replace("'", "''") + "'"


def check_location(path: Path, *, create: bool) -> None:
    """Refuse a store path that cannot be a file: a missing store (unless ``create``), a
    folder, or a parent that is a regular file. Creates the parent folder when asked."""
    if path.is_dir():
        raise StoreError(f"store {path} is a folder; give the path of a .duckdb file")
    if path.exists():
        return
    if not create:
        raise StoreError(f"no store at {path}: run `pytest corpus` first, or pass --db PATH")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(f"cannot create store {path}: {parent} is a file, not a folder")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create store {path}: {exc.strerror or exc}") from None


def attach(
    db: duckdb.DuckDBPyConnection, path: str, *, read_only: bool, wait_s: float
) -> None:
    """ATTACH the store file as :data:`CATALOG` and make it the default catalog.

    Waits up to ``wait_s`` for another process to release the file.
    """
    mode = "TYPE DUCKDB, READ_ONLY" if read_only else "TYPE DUCKDB"
    sql = f"ATTACH {quote_literal(path)} AS {CATALOG} ({mode})"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute(sql)
            break
        except duckdb.Error as exc:
            if not is_lock_error(exc):
                raise translate(exc, path) from None
            _say_someone_waits(path)
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"store {path} is in use by another pytest-stedge session "
                    f"(waited {wait_s:g} s): {lock_holder(exc)}. Wait for it to finish, "
                    "or give this session its own store with --stedge-db PATH."
                ) from None
            time.sleep(RETRY_S)
    db.execute(f"USE {CATALOG}")


def waiting_flag(path: str) -> Path:
    """The file whoever waits for the store touches (a reader, an ingest, another session):
    a session holding the file for its writes lets it go when the flag is newer than its
    hold."""
    return Path(f"{path}.waiting")


def _say_someone_waits(path: str) -> None:
    try:
        waiting_flag(path).touch()
    except OSError:  # a read-only folder: the writer's hold still ends within MAX_HOLD_S
        pass


def detach(db: duckdb.DuckDBPyConnection, path: str) -> None:
    """Release the file (DuckDB checkpoints its WAL into it on the way)."""
    try:
        db.execute("USE memory")
        db.execute(f"DETACH {CATALOG}")
    except duckdb.Error as exc:
        raise translate(exc, path) from None


def is_lock_error(exc: BaseException) -> bool:
    """Whether ``exc`` says another process holds the file."""
    text = str(exc).lower()
    return isinstance(exc, duckdb.IOException) and "lock" in text and "conflicting" in text


def translate(exc: BaseException, path: str) -> StoreError:
    """One line naming the file, for any DuckDB or OS error met on the store."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    lower = text.lower()
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "no space left" in lower:
        return StoreFullError(f"store {path}: the disk is full ({first})")
    if "not a valid duckdb database file" in lower:
        return StoreError(f"store {path} is not a DuckDB file (it exists, but holds something else)")
    if "not a directory" in lower:
        return StoreError(f"cannot open store {path}: a parent of it is a file, not a folder")
    if "permission denied" in lower or "read-only file system" in lower:
        return StoreError(f"cannot write store {path}: {first}")
    if "extension" in lower:
        return StoreError(f"store {path} is not a DuckDB file ({first})")
    damaged = ("could not read", "corrupt", "checksum", "invalid", "failed to read", "serializ")
    if any(word in lower for word in damaged) or isinstance(exc, duckdb.InternalException):
        return StoreError(
            f"store {path} is damaged or truncated ({first}); restore a copy, or move it "
            "away and let the next session start a new store"
        )
    return StoreError(f"store {path}: {first}")


def lock_holder(exc: Exception) -> str:
    """The part of DuckDB's lock error that names the process holding the file."""
    text = str(exc)
    marker = "Conflicting lock is held in"
    if marker in text:
        return text[text.index(marker) :].split("\n")[0].rstrip(".")
    return text.split("\n")[0]

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
import re
import stat
import time
from pathlib import Path

import duckdb

from pytest_stedge.errors import StoreBusyError, StoreError

from .foreign import is_other_release, other_release_message

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
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # a parent that is a file: said below
        mode = None
    except OSError as exc:  # a name too long, a loop of links, no permission to look
        raise StoreError(f"cannot open store {path}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise StoreError(f"store {path} is a folder; give the path of a .duckdb file")
    if mode is not None and not stat.S_ISREG(mode):
        # DuckDB would open a FIFO and wait for a writer for ever, or read a device
        raise StoreError(
            f"store {path} is {_file_kind(mode)}, not a regular file; give the path of a "
            ".duckdb file"
        )
    if mode is not None:
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


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "not a file")


def attach(
    db: duckdb.DuckDBPyConnection, path: str, *, read_only: bool, wait_s: float
) -> None:
    """ATTACH the store file as :data:`CATALOG` and make it the default catalog.

    Waits while other processes hold the file: up to ``wait_s`` for one process holding
    it, and up to :data:`TURNS` x ``wait_s`` in all while several take turns (8 sessions
    writing one file: none holds it long, and each waiter gets its turn).
    """
    mode = "TYPE DUCKDB, READ_ONLY" if read_only else "TYPE DUCKDB"
    sql = f"ATTACH {quote_literal(path)} AS {CATALOG} ({mode})"
    start = time.monotonic()
    deadline = start + TURNS * wait_s
    # A writer lets a waiting reader go first (see reader_waits_now), for all its wait but
    # the last second: sessions writing one file in turns would otherwise never leave it
    # free, while a reader, once in, reads in milliseconds and stops saying it waits.
    polite_until = deadline - min(1.0, wait_s / 4)
    holder, held_since = "", start
    while True:
        now = time.monotonic()
        if not read_only and now < polite_until and reader_waits_now(path):
            time.sleep(RETRY_S)
            continue
        try:
            db.execute(sql)
            break
        except duckdb.Error as exc:
            if not is_lock_error(exc):
                raise translate(exc, path) from None
            _say_someone_waits(path, reader=read_only)
            who = lock_holder(exc)
            if who != holder:
                holder, held_since = who, now
            if now - held_since >= wait_s or now >= deadline:
                waited = (f"waited {wait_s:g} s" if now - held_since >= wait_s else
                          f"waited {now - start:.0f} s while other sessions took turns")
                raise StoreBusyError(
                    f"store {path} is in use by another pytest-stedge session "
                    f"({waited}): {who}. Wait for it to finish, "
                    "or give this session its own store with --stedge-db PATH."
                ) from None
            time.sleep(RETRY_S)
    db.execute(f"USE {CATALOG}")


TURNS = 6  # how many times wait_s a process waits in all while others take turns


# A reader touches its flag at each failed try (every RETRY_S): one touched this recently
# still waits (0.5 s: a reader on a loaded machine is not scheduled every 20 ms); one that
# got the file has stopped touching it.
READER_FRESH_S = 25 * RETRY_S


def reader_waits_now(path: str) -> bool:
    """Whether a reader is waiting for the file at this moment (its flag is fresh)."""
    try:
        return time.time() - reader_flag(path).stat().st_mtime < READER_FRESH_S
    except OSError:
        return False


def reader_flag(path: str) -> Path:
    """The file only readers touch while they wait for the store: writers about to take
    the file let them go first (see :func:`attach`)."""
    return Path(f"{path}.readers")


def waiting_flag(path: str) -> Path:
    """The file whoever waits for the store touches (a reader, an ingest, another session):
    a session holding the file for its writes lets it go when the flag is newer than its
    hold."""
    return Path(f"{path}.waiting")


def _say_someone_waits(path: str, *, reader: bool) -> None:
    try:
        waiting_flag(path).touch()
        if reader:
            reader_flag(path).touch()
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
    if is_other_release(lower):
        return StoreError(other_release_message(path, first))
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


_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


def lock_holder(exc: Exception) -> str:
    """Who holds the file, from DuckDB's lock error: the process id and its command line
    (DuckDB's own advice after it, a link about its CLI and concurrency, is left out: it
    is not what a pytest-stedge user does about a busy store)."""
    text = str(exc)
    match = _HOLDER.search(text)
    if match is None:
        return text.split("\n")[0].split(" See also ")[0]
    pid = match.group("pid")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().rstrip(b"\0").split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv)[:200]
    except OSError:
        command = match.group("exe")
    return f"held by process {pid} ({command})"

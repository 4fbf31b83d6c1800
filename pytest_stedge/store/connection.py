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
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import duckdb

from pytest_stedge import __version__
from pytest_stedge.errors import StoreBusyError, StoreError, StoreVersionError

from .location import display, is_server
from .migrations import MIGRATIONS

CATALOG = "stedge"
# No network, no extension loading behind our back (a SQLite or Parquet file given as
# the store would otherwise make DuckDB download a scanner).
SAFE_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
RETRY_S = 0.02
_HEADER_BYTES = 3 * 4096  # DuckDB: the file header and two database headers
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
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"store {path} is in use by another pytest-stedge session "
                    f"(waited {wait_s:g} s): {lock_holder(exc)}. Wait for it to finish, "
                    "or give this session its own store with --stedge-db PATH."
                ) from None
            time.sleep(RETRY_S)
    db.execute(f"USE {CATALOG}")


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


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class StoreConnection:
    """The store's file and how it is held: opening, migrations, attach per call.

    :class:`~pytest_stedge.store.database.Store` adds the results on top. Each method
    attaches the file for its own statements; wrap several calls in :meth:`attached`
    to run them on one snapshot without re-attaching.
    """

    def __init__(self, path: str, *, read_only: bool = False, wait_s: float = DEFAULT_WAIT_S) -> None:
        self.location = path
        self.server = is_server(path)  # a PostgreSQL server (see .server), not a file
        self.path = display(path)  # what messages show: a password is masked
        self.read_only = read_only
        self.wait_s = wait_s
        self.db = connect_memory()
        self._depth = 0
        self._writing = False
        self._in_transaction = False
        if self.server:
            self._attach_server()

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        create: bool = True,
        read_only: bool = False,
        wait_s: float = DEFAULT_WAIT_S,
    ) -> Self:
        """Open (and, for writing, migrate) the store at ``path``; ``":memory:"`` is a store.

        :param create: create the file when it does not exist (else :class:`StoreError`).
        :param read_only: only read: the file is attached read-only, so it may be a
            read-only file and other readers may read it at the same time.
        :param wait_s: how long to wait for another process to release the file.
        """
        name = str(path)
        if name != MEMORY and not is_server(name):
            check_location(Path(name), create=create and not read_only)
            if not Path(name).exists():
                cls._create(Path(name))
        store = cls(name, read_only=read_only and name != MEMORY, wait_s=wait_s)
        try:
            store._migrate()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _create(cls, path: Path) -> None:
        """Create a new store whole, then link it into place: a session killed while
        creating it never leaves half a store behind."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
        try:
            for leftover in (tmp, Path(f"{tmp}.wal")):
                leftover.unlink(missing_ok=True)
        except OSError as exc:  # a read-only folder or disk: no store can be made there
            raise StoreError(f"cannot create store {path}: {exc.strerror or exc} "
                             f"({path.parent})") from None
        fresh = cls(str(tmp))
        try:
            fresh._migrate()
        finally:
            fresh.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it meanwhile: use theirs
        except OSError as exc:
            raise translate(exc, str(path)) from None
        finally:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self.db.close()
        except duckdb.Error:  # pragma: no cover
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def attached(self, *, write: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the store's file for the block (re-entrant) and yield the 

        DuckDB errors inside become one-line :class:`StoreError` naming the file.
        """
        if write and self.read_only:
            raise StoreError(f"store {self.path} was opened read-only; this needs to write")
        if self.path == MEMORY or self.server:  # always attached: nothing to take turns on
            yield from self._guarded()
            return
        if self._depth:
            if write and not self._writing:
                raise StoreError("internal: a write inside a read-only hold of the store")
            self._depth += 1
            try:
                yield from self._guarded()
            finally:
                self._depth -= 1
            return
        attach(self.db, self.path, read_only=not write, wait_s=self.wait_s)
        self._depth, self._writing = 1, write
        failed = False
        try:
            yield from self._guarded()
        except BaseException:
            failed = True
            raise
        finally:
            self._depth, self._writing = 0, False
            try:
                detach(self.db, self.path)
            except StoreError:
                self._reset()
                if not failed:
                    raise
            if failed and write:
                self._reset()  # a failed write may leave DuckDB's instance unusable

    def _guarded(self) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            yield self.db
        except duckdb.Error as exc:
            if self.server:
                from .server import server_error

                raise server_error(exc, self.location) from None
            raise translate(exc, self.path) from None
        except OSError as exc:
            raise translate(exc, self.path) from None

    def _reset(self) -> None:
        self.close()
        self.db = connect_memory()
        if self.server:
            self._attach_server()

    def _attach_server(self) -> None:
        from .server import attach_server

        try:
            attach_server(self.db, self.location, CATALOG, read_only=self.read_only)
        except BaseException:
            self.close()
            raise

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block in one write transaction, rolled back on error (re-entrant: an
        inner block joins the outer transaction)."""
        with self.attached(write=True) as db:
            if self._in_transaction:
                yield
                return
            db.execute("BEGIN TRANSACTION")
            self._in_transaction = True
            try:
                yield
            except BaseException:
                self._in_transaction = False
                try:
                    db.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                raise
            self._in_transaction = False
            db.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the store for reads that must agree with each other (re-entrant; inside a
        transaction, that transaction's view): every statement of the block sees the store
        as it was at its start, whatever other sessions commit meanwhile (a shared store
        written by several machines while a dashboard reads it)."""
        with self.attached() as db:
            if self._in_transaction:
                yield db
                return
            db.execute("BEGIN TRANSACTION")
            self._in_transaction = True
            try:
                yield db
            finally:
                self._in_transaction = False
                try:
                    db.execute("ROLLBACK")  # nothing was written: nothing to keep
                except duckdb.Error:
                    pass

    def _migrate(self) -> None:
        if self.server and not self.read_only:
            self._migrate_server()
            return
        with self.attached(write=not self.read_only) as db:
            self._check_size(db)
            if self.read_only:
                pending = self._pending_migrations(db)
                if pending:
                    raise StoreError(
                        f"store {self.path} needs schema migration {', '.join(pending)} and is "
                        "opened read-only; run any pytest-stedge command that writes it "
                        f"(stedge migrate --db {self.path}) with write access first"
                    )
                return
            db.execute(
                "CREATE TABLE IF NOT EXISTS _stedge_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
            )
            pending = self._pending_migrations(db)
        for step in MIGRATIONS:
            if step.name not in pending:
                continue
            with self.transaction():
                step.apply(self.db)
                self.db.execute("INSERT INTO _stedge_migrations VALUES (?, ?)", [step.name, _now()])

    def _migrate_server(self) -> None:
        """All pending migrations in one transaction under the server's migration lock
        (sessions starting together on a new store migrate it once, in turn)."""
        from .server import lock_migrations, raced

        for attempt in range(5):
            try:
                self._migrate_server_once(lock_migrations)
                return
            except StoreError as exc:
                if attempt == 4 or not raced(exc):
                    raise
                # Another session migrated while we waited for the lock, and our snapshot
                # predates its commit: forget DuckDB's copy of the catalog and look again.
                self.db.execute("CALL pg_clear_cache()")

    def _migrate_server_once(self, lock_migrations: Any) -> None:
        with self.transaction():
            lock_migrations(self.db, CATALOG)
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS _stedge_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
            )
            pending = self._pending_migrations(self.db)
            for step in MIGRATIONS:
                if step.name in pending:
                    step.apply(self.db)
                    self.db.execute(
                        "INSERT INTO _stedge_migrations VALUES (?, ?)", [step.name, _now()]
                    )

    def _check_size(self, db: duckdb.DuckDBPyConnection) -> None:
        """Refuse a truncated file: shorter than the blocks its header counts and cut
        between two blocks (DuckDB would read past its end and fail later, half-way
        through a write). Either sign alone is no proof: with a WAL pending a healthy file
        is shorter than its count, and a write cut by a full disk leaves a partial block
        past it."""
        if self.path == MEMORY or self.server:
            return
        row = db.execute(
            "SELECT block_size, total_blocks FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchone()
        if row is None or not row[0]:
            return
        block, expected = int(row[0]), _HEADER_BYTES + int(row[0]) * int(row[1])
        size = Path(self.path).stat().st_size
        if size < expected and (size < _HEADER_BYTES or (size - _HEADER_BYTES) % block):
            raise StoreError(
                f"store {self.path} is truncated ({size:,} bytes of the {expected:,} its header "
                "counts, cut inside a block); restore a copy, or move it away and let the "
                "next session start a new store"
            )

    def _pending_migrations(self, db: duckdb.DuckDBPyConnection) -> list[str]:
        """Known migrations not applied yet; refuse a store written by a newer version."""
        tables = {r[0] for r in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()"
        ).fetchall()}
        applied: set[str] = set()
        if "_stedge_migrations" in tables:
            applied = {r[0] for r in db.execute("SELECT name FROM _stedge_migrations").fetchall()}
        unknown = sorted(applied - {m.name for m in MIGRATIONS})
        if unknown:
            raise StoreVersionError(
                f"{self.path} was written by a newer pytest-stedge (unknown migrations: "
                f"{', '.join(unknown)}). Upgrade pytest-stedge to read it "
                f"(this is {__version__})."
            )
        return [m.name for m in MIGRATIONS if m.name not in applied]

    def applied_migrations(self) -> list[tuple[str, datetime]]:
        """Migrations applied to this store, in order."""
        rows = self._rows("SELECT name, applied_at FROM _stedge_migrations ORDER BY name")
        return [(str(r[0]), r[1]) for r in rows]
    # -- helpers ---------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.attached() as db:
            return db.execute(sql, list(params)).fetchall()

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self.attached() as db:
            cursor = db.execute(sql, list(params))
            names = [d[0] for d in cursor.description or []]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read-only query as dicts (for the query modules of this package)."""
        return self._dicts(sql, params)


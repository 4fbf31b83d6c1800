"""The store's connection: a :class:`StoreConnection` holds an in-memory DuckDB and
attaches the store's file for the statements of one call or one hold (see :mod:`.files`
for how a file is attached and every failure named), runs the migrations and reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import duckdb

from pytest_stedge import __version__
from pytest_stedge.errors import StoreError, StoreVersionError

from .files import (
    CATALOG,
    DEFAULT_WAIT_S,
    HEADER_BYTES,
    MEMORY,
    SAFE_CONFIG,
    StoreFullError,
    attach,
    check_location,
    connect_memory,
    detach,
    quote_literal,
    translate,
    waiting_flag,
)
from .location import display, is_server
from .migrations import MIGRATIONS

__all__ = ["CATALOG", "DEFAULT_WAIT_S", "MEMORY", "SAFE_CONFIG", "StoreConnection",
           "StoreFullError", "quote_literal"]


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
        import os

        tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
        for leftover in (tmp, Path(f"{tmp}.wal")):
            leftover.unlink(missing_ok=True)
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
            tmp.unlink(missing_ok=True)

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

    def someone_waiting(self, *, since: float) -> bool:
        """Whether someone (a reader, an ingest, another session) has waited for the file
        since ``since`` (wall clock)."""
        if self.path == MEMORY or self.server:
            return False
        try:
            return waiting_flag(self.location).stat().st_mtime >= since
        except OSError:
            return False

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
        block, expected = int(row[0]), HEADER_BYTES + int(row[0]) * int(row[1])
        size = Path(self.path).stat().st_size
        if size < expected and (size < HEADER_BYTES or (size - HEADER_BYTES) % block):
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


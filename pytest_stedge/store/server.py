"""A store on a shared PostgreSQL server, reached through DuckDB's postgres extension.

The same SQL as the file store runs on it: DuckDB attaches the PostgreSQL database as
the catalog ``stedge`` and plans every statement itself, so the schema, the named
migrations and every query are one code path. PostgreSQL brings what a team store
needs and a DuckDB file does not have: many writers at once (row locks, MVCC), readers
never blocked by writers, primary keys enforced by the server.

The extension comes from PyPI (``pip install 'pytest-stedge[team]'``, the wheel
``duckdb-extension-postgres-scanner``) and is loaded from its file: DuckDB never
downloads anything (autoinstall and autoload stay off).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb

from pytest_stedge.errors import StoreError

from .location import display, libpq_dsn

EXTENSION_PACKAGE = "duckdb_extension_postgres_scanner"
EXTENSION_FILE = "postgres_scanner.duckdb_extension"
# Every statement of one session holds the advisory lock with this key while it migrates.
MIGRATION_LOCK_KEY = 0x57ED6E


def extension_path() -> Path:
    """The postgres extension file matching the installed DuckDB.

    :raises StoreError: when the wheel is missing, or built for another DuckDB.
    """
    spec = importlib.util.find_spec(EXTENSION_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(
            "a PostgreSQL store needs DuckDB's postgres extension: "
            "pip install 'pytest-stedge[team]'"
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    wanted = root / f"v{duckdb.__version__}" / EXTENSION_FILE
    if wanted.is_file():
        return wanted
    built = sorted(p.parent.name for p in root.glob(f"*/{EXTENSION_FILE}"))
    raise StoreError(
        f"DuckDB's postgres extension here is built for DuckDB {', '.join(built) or '?'}, "
        f"but DuckDB {duckdb.__version__} is installed: pip install 'pytest-stedge[team]' "
        "installs matching versions"
    )


def attach_server(
    db: duckdb.DuckDBPyConnection, location: str, catalog: str, *, read_only: bool
) -> None:
    """Load the extension and ATTACH the server's database as ``catalog`` (default)."""
    db.execute("SET enable_progress_bar = false")  # a slow query must not draw on stderr
    # One thread, so one server connection per store: parallel scans each take a pooled
    # connection into the transaction, and under load one of those joins failed (BEGIN).
    db.execute("SET threads = 1")
    try:
        db.execute(f"LOAD '{_literal(str(extension_path()))}'")
    except duckdb.Error as exc:
        raise StoreError(f"cannot load DuckDB's postgres extension: {_first_line(exc)}") from None
    mode = "TYPE postgres, READ_ONLY" if read_only else "TYPE postgres"
    try:
        db.execute(f"ATTACH '{_literal(libpq_dsn(location))}' AS {catalog} ({mode})")
    except duckdb.Error as exc:
        raise server_error(exc, location) from None
    db.execute(f"USE {catalog}")


def lock_migrations(db: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """Hold the migration lock until the current transaction ends: sessions starting on
    a new server store at once migrate it one after the other."""
    db.execute(
        f"CALL postgres_execute('{catalog}', "
        f"'SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})')"
    )


RUN_ID_SEQUENCE = "stedge_run_ids"


def next_run_id(db: duckdb.DuckDBPyConnection, catalog: str) -> int:
    """A run id no other session gets: PostgreSQL's sequence (atomic, outside any
    transaction), moved past ids that reached the store without it (imported bundles)."""
    db.execute(
        f"CALL postgres_execute('{catalog}', "
        f"'CREATE SEQUENCE IF NOT EXISTS {RUN_ID_SEQUENCE}')"
    )
    while True:
        row = db.execute(
            f"SELECT id FROM postgres_query('{catalog}', "
            f"'SELECT nextval(''{RUN_ID_SEQUENCE}'') AS id')"
        ).fetchone()
        top = db.execute("SELECT coalesce(max(run_id), 0) FROM runs").fetchone()
        assert row is not None and top is not None
        if int(row[0]) > int(top[0]):
            return int(row[0])
        db.execute(
            f"CALL postgres_execute('{catalog}', "
            f"'SELECT setval(''{RUN_ID_SEQUENCE}'', {int(top[0])})')"
        )


def server_error(exc: BaseException, location: str) -> StoreError:
    """One line naming the server (password masked) for an error met on it."""
    first = display(_first_line(exc))  # DuckDB repeats the connection string, password too
    lower = str(exc).lower()
    where = display(location)
    if "connection refused" in lower or "could not connect" in lower or "timeout" in lower:
        return StoreError(f"cannot reach the PostgreSQL store {where}: {first}")
    if "does not exist" in lower and "database" in lower:
        return StoreError(
            f"PostgreSQL store {where}: {first}; create it first (createdb), the schema is "
            "created by the first session"
        )
    if "authentication" in lower or "password" in lower:
        return StoreError(f"PostgreSQL store {where} refused the login: {first}")
    return StoreError(f"PostgreSQL store {where}: {first}")


def raced(exc: BaseException) -> bool:
    """Whether ``exc`` is a schema change another session made first (tried again)."""
    text = str(exc).lower()
    return "already exists" in text or is_unique_violation(exc)


def is_unique_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL refusing a duplicate key (another writer won)."""
    text = str(exc).lower()
    return "duplicate key" in text or "unique constraint" in text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _literal(text: str) -> str:
    return text.replace("'", "''")

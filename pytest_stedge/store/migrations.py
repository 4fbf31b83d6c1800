"""Named, ordered schema migrations of the DuckDB store.

The schema changes only through this list. Each migration runs once, in a
transaction, and is recorded in ``_stedge_migrations``; a store holding a
migration this version does not know was written by a newer pytest-stedge and
is refused (see :mod:`pytest_stedge.store.database`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

MigrationFn = Callable[[duckdb.DuckDBPyConnection], None]


@dataclass(frozen=True)
class Migration:
    """One schema change, identified by its name (``0001_initial``)."""

    name: str
    apply: MigrationFn


MIGRATIONS: list[Migration] = []


def add_column(db: duckdb.DuckDBPyConnection, table: str, column: str, *, default: str) -> None:
    """``ALTER TABLE table ADD COLUMN column DEFAULT default`` on a file or a server store.

    DuckDB cannot ALTER a PostgreSQL table's default, so there the default is set by
    PostgreSQL itself and the existing rows are filled in. ``table``, ``column`` and
    ``default`` are ours, never user input.
    """
    row = db.execute(
        "SELECT type FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    if row is None or row[0] != "postgres":
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} DEFAULT {default}")
        return
    name = column.split()[0]
    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    sql = f"ALTER TABLE {table} ALTER COLUMN {name} SET DEFAULT {default}"
    db.execute("CALL postgres_execute(current_database(), ?)", [sql])
    db.execute(f"UPDATE {table} SET {name} = {default}")


def migration(name: str) -> Callable[[MigrationFn], MigrationFn]:
    """Register ``fn`` as the migration ``name``; names are unique and ordered."""

    def register(fn: MigrationFn) -> MigrationFn:
        if any(m.name == name for m in MIGRATIONS):
            raise ValueError(f"duplicate migration name {name!r}")
        if MIGRATIONS and name <= MIGRATIONS[-1].name:
            raise ValueError(f"migration {name!r} must sort after {MIGRATIONS[-1].name!r}")
        MIGRATIONS.append(Migration(name, fn))
        return fn

    return register


@migration("0001_initial")
def _initial(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        """
        CREATE TABLE runs (
            run_id        INTEGER PRIMARY KEY,
            run_uuid      VARCHAR NOT NULL UNIQUE,
            started_at    TIMESTAMP NOT NULL,
            finished_at   TIMESTAMP,
            status        VARCHAR NOT NULL,      -- running | passed | failed | interrupted | error
            exitstatus    INTEGER,
            host          VARCHAR,
            argv          VARCHAR,               -- JSON list
            versions      VARCHAR,               -- JSON list of toolchain versions run
            baseline      VARCHAR,
            plugin_version VARCHAR
        )
        """
    )
    db.execute(
        """
        CREATE TABLE cases (
            case_name     VARCHAR NOT NULL,
            model_sha256  VARCHAR NOT NULL,
            options_hash  VARCHAR NOT NULL,
            case_path     VARCHAR,
            model_path    VARCHAR,
            target        VARCHAR,
            description   VARCHAR,
            PRIMARY KEY (case_name, model_sha256, options_hash)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE items (
            run_id        INTEGER NOT NULL,
            nodeid        VARCHAR NOT NULL,
            case_name     VARCHAR NOT NULL,
            stage         VARCHAR NOT NULL,
            version       VARCHAR,               -- NULL for the oracle stage
            model_sha256  VARCHAR,
            options_hash  VARCHAR,
            outcome       VARCHAR NOT NULL,      -- passed | failed | skipped | xfailed | xpassed | error
            recorded      BOOLEAN NOT NULL DEFAULT FALSE,
            duration_s    DOUBLE,
            tool_seconds  DOUBLE,
            message       VARCHAR,
            result        VARCHAR,               -- the Result JSON
            finished_at   TIMESTAMP,
            PRIMARY KEY (run_id, nodeid)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE metrics (
            run_id        INTEGER NOT NULL,
            nodeid        VARCHAR NOT NULL,
            case_name     VARCHAR NOT NULL,
            stage         VARCHAR NOT NULL,
            version       VARCHAR,
            metric        VARCHAR NOT NULL,
            value         DOUBLE,
            unit          VARCHAR,
            PRIMARY KEY (run_id, nodeid, metric)
        )
        """
    )


@migration("0002_recordings")
def _recordings(db: duckdb.DuckDBPyConnection) -> None:
    # Results that stedgeai produced elsewhere (a Windows PC with the board, the
    # Developer Cloud), replayed as that version on machines without the install.
    db.execute(
        """
        CREATE TABLE recordings (
            version       VARCHAR NOT NULL,
            case_name     VARCHAR NOT NULL,
            stage         VARCHAR NOT NULL,
            model_sha256  VARCHAR,
            options_hash  VARCHAR,
            source        VARCHAR,
            result        VARCHAR NOT NULL,
            ingested_at   TIMESTAMP NOT NULL,
            PRIMARY KEY (version, case_name, stage)
        )
        """
    )


@migration("0003_findings")
def _findings(db: duckdb.DuckDBPyConnection) -> None:
    # After each item, every known bug whose signature was evaluated is a finding:
    # reproduced (the signature matched) or not reproduced, with the evidence.
    db.execute(
        """
        CREATE TABLE findings (
            run_id        INTEGER NOT NULL,
            nodeid        VARCHAR NOT NULL,
            case_name     VARCHAR NOT NULL,
            stage         VARCHAR NOT NULL,
            version       VARCHAR,
            bug_id        VARCHAR NOT NULL,
            status        VARCHAR NOT NULL,      -- reproduced | not-reproduced | unknown
            evidence      VARCHAR,               -- JSON: the metric values the signature read
            PRIMARY KEY (run_id, nodeid, bug_id)
        )
        """
    )


@migration("0004_recording_history")
def _recording_history(db: duckdb.DuckDBPyConnection) -> None:
    # `stedge ingest` records a run of its own (the history of every ingest) and checks
    # the outputs against the case; a mismatch stored with --force is not comparable.
    db.execute("ALTER TABLE recordings ADD COLUMN run_id INTEGER")
    add_column(db, "recordings", "comparable BOOLEAN", default="TRUE")
    db.execute("ALTER TABLE recordings ADD COLUMN note VARCHAR")


@migration("0005_run_groups")
def _run_groups(db: duckdb.DuckDBPyConnection) -> None:
    # Shards of one CI pipeline (--stedge-shard K/N) are one logical run: they share a
    # run group (--stedge-run-group, e.g. $CI_PIPELINE_ID), which diff, gate and dashboard
    # read as one run. NULL: the run is a group of its own.
    db.execute("ALTER TABLE runs ADD COLUMN run_group VARCHAR")
    db.execute("ALTER TABLE runs ADD COLUMN shard VARCHAR")  # 'K/N', NULL when unsharded

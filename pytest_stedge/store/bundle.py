"""Parquet bundles: results that travel between machines (``stedge export``/``stedge import``).

A bundle is a folder: ``manifest.json`` (format, the schema migrations it was written
with) and one Parquet file per table. Importing gives each run a new local id, skips
runs the store already has (by ``run_uuid``), and never half-writes: one transaction.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_stedge import __version__
from pytest_stedge.errors import StoreError, StoreVersionError

from .connection import quote_literal
from .database import Store
from .migrations import MIGRATIONS

BUNDLE_FORMAT = "stedge.bundle/1"
# Tables keyed by run, in the order they are written and read.
RUN_TABLES = ("runs", "items", "metrics", "findings")


def export_bundle(store: Store, out: Path, run_ids: Sequence[int] | None = None) -> dict[str, Any]:
    """Write the runs ``run_ids`` (default: every run) and the cases they used to ``out``.

    :returns: the manifest written.
    """
    with store.attached():
        return _export(store, out, run_ids)


def _export(store: Store, out: Path, run_ids: Sequence[int] | None) -> dict[str, Any]:
    known = [int(r[0]) for r in store.db.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    wanted = sorted(set(run_ids)) if run_ids else known
    missing = [r for r in wanted if r not in known]
    if missing:
        raise StoreError(
            f"no run {', '.join(map(str, missing))} in {store.path}; stored runs: "
            f"{', '.join(map(str, known)) or 'none'}"
        )
    out.mkdir(parents=True, exist_ok=True)
    store.db.execute("CREATE OR REPLACE TEMP TABLE _export_runs (run_id INTEGER)")
    if wanted:
        values = ", ".join("(?)" for _ in wanted)
        store.db.execute(f"INSERT INTO _export_runs VALUES {values}", wanted)
    counts: dict[str, int] = {}
    for table in RUN_TABLES:
        sql = f"SELECT * FROM {table} WHERE run_id IN (SELECT run_id FROM _export_runs)"
        counts[table] = _copy_out(store, sql, out / f"{table}.parquet")
    counts["cases"] = _copy_out(
        store,
        "SELECT DISTINCT c.* FROM cases c JOIN items i "
        "ON c.case_name = i.case_name AND c.model_sha256 = i.model_sha256 "
        "AND c.options_hash = i.options_hash "
        "WHERE i.run_id IN (SELECT run_id FROM _export_runs)",
        out / "cases.parquet",
    )
    manifest = {
        "format": BUNDLE_FORMAT,
        "migrations": [name for name, _ in store.applied_migrations()],
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "plugin_version": __version__,
        "runs": wanted,
        "rows": counts,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _copy_out(store: Store, sql: str, path: Path) -> int:
    store.db.execute(f"COPY ({sql}) TO '{_quote(path)}' (FORMAT PARQUET)")
    row = store.db.execute(f"SELECT count(*) FROM read_parquet('{_quote(path)}')").fetchone()
    return int(row[0]) if row else 0


def _quote(path: Path) -> str:
    # COPY takes a literal file name, not a parameter: escape the quote character.
    return quote_literal(str(path))[1:-1]


def read_manifest(folder: Path) -> dict[str, Any]:
    """The bundle's manifest; refuse anything that is not a bundle this version can read."""
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{folder} is not a pytest-stedge bundle: no manifest.json") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise StoreError(f"{path}: format must be {BUNDLE_FORMAT!r}")
    unknown = sorted(set(manifest.get("migrations") or []) - {m.name for m in MIGRATIONS})
    if unknown:
        raise StoreVersionError(
            f"{folder} was exported by a newer pytest-stedge (unknown migrations: "
            f"{', '.join(unknown)}). Upgrade pytest-stedge to import it."
        )
    for table in (*RUN_TABLES, "cases"):
        if not (folder / f"{table}.parquet").is_file():
            raise StoreError(f"{folder}: {table}.parquet is missing")
    return manifest


def import_bundle(store: Store, folder: Path) -> dict[str, int]:
    """Add a bundle's runs to ``store`` under new run ids; runs already present are skipped.

    :returns: ``{"imported": n, "skipped": m}`` runs.
    """
    read_manifest(folder)
    src = {t: _quote(folder / f"{t}.parquet") for t in (*RUN_TABLES, "cases")}
    with store.transaction():
        store.db.execute(
            f"CREATE OR REPLACE TEMP TABLE _bundle_runs AS SELECT * FROM read_parquet('{src['runs']}')"
        )
        store.db.execute(
            "CREATE OR REPLACE TEMP TABLE _run_map AS "
            "SELECT b.run_id AS old_id, "
            "(SELECT coalesce(max(run_id), 0) FROM runs) "
            "+ row_number() OVER (ORDER BY b.started_at, b.run_id) AS new_id "
            "FROM _bundle_runs b WHERE b.run_uuid NOT IN (SELECT run_uuid FROM runs)"
        )
        store.db.execute(
            "INSERT INTO runs BY NAME SELECT * EXCLUDE (run_id, old_id, new_id), "
            "new_id AS run_id FROM _bundle_runs JOIN _run_map ON run_id = old_id"
        )
        for table in RUN_TABLES[1:]:
            store.db.execute(
                f"INSERT INTO {table} BY NAME SELECT * EXCLUDE (run_id, old_id, new_id), "
                f"new_id AS run_id FROM read_parquet('{src[table]}') "
                "JOIN _run_map ON run_id = old_id"
            )
        store.db.execute(
            f"INSERT OR IGNORE INTO cases BY NAME SELECT * FROM read_parquet('{src['cases']}')"
        )
        row = store.db.execute("SELECT count(*) FROM _run_map").fetchone()
        imported = int(row[0]) if row else 0
        row = store.db.execute("SELECT count(*) FROM _bundle_runs").fetchone()
        total = int(row[0]) if row else 0
    return {"imported": imported, "skipped": total - imported}

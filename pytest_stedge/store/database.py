"""The DuckDB results store: every SQL statement of pytest-stedge outside migrations.

One process writes a store at a time (DuckDB's rule): under pytest-xdist only the
controller opens it, and a second session on the same file waits briefly, then
fails with a message that says who holds it.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from pytest_stedge import __version__
from pytest_stedge.errors import StoreBusyError, StoreError, StoreVersionError
from pytest_stedge.result import METRICS

from .migrations import MIGRATIONS
from .rows import ItemRow

__all__ = ["DEFAULT_PATH", "ItemRow", "Store"]

DEFAULT_PATH = Path(".stedge") / "results.duckdb"
DEFAULT_WAIT_S = 5.0
_CHUNK_ROWS = 2000


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    """A results store opened for reading and writing."""

    def __init__(self, db: duckdb.DuckDBPyConnection, path: str) -> None:
        self.db = db
        self.path = path

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(
        cls, path: Path | str, *, create: bool = True, wait_s: float = DEFAULT_WAIT_S
    ) -> Store:
        """Open (and migrate) the store at ``path``; ``":memory:"`` is a valid store.

        :param create: create the file when it does not exist (else :class:`StoreError`).
        :param wait_s: how long to wait for another process to release the file.
        """
        name = str(path)
        if name != ":memory:":
            file = Path(name)
            if not file.exists():
                if not create:
                    raise StoreError(
                        f"no store at {file}: run `pytest corpus` first, or pass --db PATH"
                    )
                file.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                db = duckdb.connect(name)
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise StoreError(f"cannot open store {name}: {exc}") from None
                if time.monotonic() >= deadline:
                    raise StoreBusyError(
                        f"store {name} is in use by another pytest-stedge session "
                        f"(waited {wait_s:g} s): {_lock_holder(exc)}. Wait for it to finish, "
                        "or give this session its own store with --stedge-db PATH."
                    ) from None
                time.sleep(0.1)
            except duckdb.Error as exc:
                raise StoreError(f"cannot open store {name}: {exc}") from None
        store = cls(db, name)
        try:
            store._migrate()
        except BaseException:
            db.close()
            raise
        return store

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self.db.close()
        except duckdb.Error:  # pragma: no cover
            pass

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS _stedge_migrations "
            "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
        )
        applied = {row[0] for row in self.db.execute("SELECT name FROM _stedge_migrations").fetchall()}
        known = {m.name for m in MIGRATIONS}
        unknown = sorted(applied - known)
        if unknown:
            raise StoreVersionError(
                f"{self.path} was written by a newer pytest-stedge (unknown migrations: "
                f"{', '.join(unknown)}). Upgrade pytest-stedge to read it "
                f"(this is {__version__})."
            )
        for step in MIGRATIONS:
            if step.name in applied:
                continue
            with self.transaction():
                step.apply(self.db)
                self.db.execute(
                    "INSERT INTO _stedge_migrations VALUES (?, ?)", [step.name, _now()]
                )

    def applied_migrations(self) -> list[tuple[str, datetime]]:
        """Migrations applied to this store, in order."""
        rows = self.db.execute(
            "SELECT name, applied_at FROM _stedge_migrations ORDER BY name"
        ).fetchall()
        return [(str(r[0]), r[1]) for r in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block in one transaction, rolled back on error."""
        self.db.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- runs ----------------------------------------------------------------------

    def begin_run(
        self,
        *,
        argv: Sequence[str],
        versions: Sequence[str] = (),
        baseline: str | None = None,
        host: str | None = None,
    ) -> int:
        """Record a new run as ``running`` and return its id."""
        with self.transaction():
            row = self.db.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()
            run_id = int(row[0]) if row else 1
            self.db.execute(
                "INSERT INTO runs (run_id, run_uuid, started_at, status, host, argv, versions,"
                " baseline, plugin_version) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                [
                    run_id,
                    uuid.uuid4().hex,
                    _now(),
                    host or socket.gethostname(),
                    json.dumps(list(argv)),
                    json.dumps(list(versions)),
                    baseline,
                    __version__,
                ],
            )
        return run_id

    def finish_run(self, run_id: int, *, status: str, exitstatus: int | None) -> None:
        """Mark a run finished with ``status`` (passed, failed, interrupted, error)."""
        self.db.execute(
            "UPDATE runs SET finished_at = ?, status = ?, exitstatus = ? WHERE run_id = ?",
            [_now(), status, exitstatus, run_id],
        )

    def set_run_versions(self, run_id: int, versions: Sequence[str]) -> None:
        """Record which toolchain versions the run used."""
        self.db.execute(
            "UPDATE runs SET versions = ? WHERE run_id = ?", [json.dumps(list(versions)), run_id]
        )

    def add_items(self, run_id: int, rows: Iterable[ItemRow]) -> None:
        """Store finished items with their Result, long-form metrics and findings.

        One transaction, and one multi-row statement per table: DuckDB is built for bulk
        writes, and a statement per row costs milliseconds.
        """
        rows = list(rows)
        if not rows:
            return
        now = _now()
        cases = {
            (r.case_name, r.model_sha256, r.options_hash): [
                r.case_name,
                r.model_sha256,
                r.options_hash,
                r.case.get("case_path"),
                r.case.get("model_path"),
                r.case.get("target"),
                r.case.get("description"),
            ]
            for r in rows
            if r.case and r.model_sha256 and r.options_hash
        }
        items = [
            [
                run_id,
                r.nodeid,
                r.case_name,
                r.stage,
                r.version,
                r.model_sha256,
                r.options_hash,
                r.outcome,
                r.recorded,
                r.duration_s,
                r.tool_seconds,
                r.message,
                None if r.result is None else json.dumps(r.result, default=str),
                now,
            ]
            for r in rows
        ]
        findings = [
            [
                run_id,
                r.nodeid,
                r.case_name,
                r.stage,
                r.version,
                f["bug_id"],
                f["status"],
                json.dumps(f.get("evidence"), default=str),
            ]
            for r in rows
            for f in r.findings
        ]
        metrics = [
            [
                run_id,
                r.nodeid,
                r.case_name,
                r.stage,
                r.version,
                name,
                value,
                METRICS[name].unit if name in METRICS else None,
            ]
            for r in rows
            for name, value in sorted(r.metrics.items())
        ]
        with self.transaction():
            if cases:
                self._insert_many("cases", list(cases.values()), conflict="DO NOTHING")
            self._insert_many("items", items)
            if findings:
                self._insert_many("findings", findings)
            if metrics:
                self._insert_many("metrics", metrics)

    def _insert_many(
        self, table: str, rows: list[list[Any]], *, conflict: str = "DO UPDATE"
    ) -> None:
        """Insert ``rows`` in chunks of multi-row statements (executemany costs a round trip
        per row). ``table`` is one of ours, never user input."""
        width = len(rows[0])
        verb = "INSERT OR REPLACE INTO" if conflict == "DO UPDATE" else "INSERT OR IGNORE INTO"
        for start in range(0, len(rows), _CHUNK_ROWS):
            chunk = rows[start : start + _CHUNK_ROWS]
            values = ", ".join(["(" + ", ".join("?" * width) + ")"] * len(chunk))
            params = [value for row in chunk for value in row]
            self.db.execute(f"{verb} {table} VALUES {values}", params)

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first, with their item counts by outcome."""
        sql = (
            "SELECT r.run_id, r.started_at, r.finished_at, r.status, r.exitstatus, r.host, "
            "r.versions, r.baseline, r.argv, "
            "count(i.nodeid) AS items, "
            "count(*) FILTER (WHERE i.outcome = 'passed') AS passed, "
            "count(*) FILTER (WHERE i.outcome IN ('failed', 'error')) AS failed, "
            "count(*) FILTER (WHERE i.outcome = 'skipped') AS skipped "
            "FROM runs r LEFT JOIN items i USING (run_id) GROUP BY ALL ORDER BY r.run_id DESC"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [self._run_dict(row) for row in self._dicts(sql)]

    def get_run(self, run_id: int) -> dict[str, Any]:
        """One run with its items (Result JSON parsed) and their metrics."""
        runs = self._dicts("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not runs:
            known = [r["run_id"] for r in self._dicts("SELECT run_id FROM runs ORDER BY run_id")]
            raise StoreError(
                f"no run {run_id} in {self.path}; stored runs: "
                f"{', '.join(map(str, known)) or 'none'}"
            )
        run = self._run_dict(runs[0])
        items = self._dicts(
            "SELECT * FROM items WHERE run_id = ? ORDER BY case_name, stage, version, nodeid",
            [run_id],
        )
        metrics = self._dicts(
            "SELECT nodeid, metric, value, unit FROM metrics WHERE run_id = ? ORDER BY metric",
            [run_id],
        )
        by_node: dict[str, dict[str, float]] = {}
        for m in metrics:
            by_node.setdefault(m["nodeid"], {})[m["metric"]] = m["value"]
        for item in items:
            item["result"] = json.loads(item["result"]) if item["result"] else None
            item["metrics"] = by_node.get(item["nodeid"], {})
            item.pop("run_id", None)
        run["items"] = items
        return run

    def latest_run_id(self) -> int | None:
        """Id of the newest run, if any."""
        row = self.db.execute("SELECT max(run_id) FROM runs").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def versions(self) -> list[str]:
        """Toolchain versions that have stored results."""
        rows = self.db.execute(
            "SELECT DISTINCT version FROM items WHERE version IS NOT NULL ORDER BY version"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def metric_rows(
        self, *, versions: Sequence[str] | None = None, latest_only: bool = True
    ) -> list[dict[str, Any]]:
        """Long-form metrics (run_id, case_name, stage, version, metric, value, unit, outcome,
        model_sha256, options_hash, started_at).

        With ``latest_only``, each (case, stage, version) keeps only its newest run, which is
        what a diff between versions and the dashboard compare.
        """
        params: list[Any] = []
        where = "i.version IS NOT NULL"
        if versions:
            where += f" AND i.version IN ({', '.join('?' for _ in versions)})"
            params += list(versions)
        sql = f"""
            WITH latest AS (
                SELECT i.run_id, i.nodeid, i.case_name, i.stage, i.version, i.outcome,
                       i.model_sha256, i.options_hash, i.recorded, r.started_at,
                       row_number() OVER (PARTITION BY i.case_name, i.stage, i.version
                                          ORDER BY i.run_id DESC) AS rank
                FROM items i JOIN runs r USING (run_id)
                WHERE {where} AND i.outcome NOT IN ('skipped')
            )
            SELECT l.run_id, l.nodeid, l.case_name, l.stage, l.version, l.outcome,
                   l.model_sha256, l.options_hash, l.recorded, l.started_at,
                   m.metric, m.value, m.unit
            FROM latest l LEFT JOIN metrics m USING (run_id, nodeid)
            {"WHERE l.rank = 1" if latest_only else ""}
            ORDER BY l.case_name, l.stage, l.version, l.run_id, m.metric
        """
        return self._dicts(sql, params)

    def latest_item(self, case_name: str, stage: str, version: str) -> dict[str, Any] | None:
        """The newest stored item (Result parsed, metrics attached) of a case/stage/version."""
        rows = self._dicts(
            "SELECT * FROM items WHERE case_name = ? AND stage = ? AND version = ? "
            "AND outcome NOT IN ('skipped') ORDER BY run_id DESC LIMIT 1",
            [case_name, stage, version],
        )
        if not rows:
            return None
        item = rows[0]
        item["result"] = json.loads(item["result"]) if item["result"] else None
        item["metrics"] = {
            r["metric"]: r["value"]
            for r in self._dicts(
                "SELECT metric, value FROM metrics WHERE run_id = ? AND nodeid = ?",
                [item["run_id"], item["nodeid"]],
            )
        }
        return item

    def findings(self, *, bug_id: str | None = None) -> list[dict[str, Any]]:
        """Stored findings (newest run first), with the run's start time."""
        sql = (
            "SELECT f.*, r.started_at FROM findings f JOIN runs r USING (run_id)"
            + (" WHERE f.bug_id = ?" if bug_id else "")
            + " ORDER BY f.run_id DESC, f.case_name, f.version"
        )
        rows = self._dicts(sql, [bug_id] if bug_id else [])
        for row in rows:
            row["evidence"] = json.loads(row["evidence"]) if row["evidence"] else None
        return rows

    # -- recordings ----------------------------------------------------------------

    def add_recording(
        self,
        *,
        version: str,
        case_name: str,
        stage: str,
        result: dict[str, Any],
        source: str,
        model_sha256: str | None = None,
        options_hash: str | None = None,
    ) -> None:
        """Store (or replace) the recorded Result of ``case_name``/``stage`` for ``version``."""
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO recordings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    version,
                    case_name,
                    stage,
                    model_sha256,
                    options_hash,
                    source,
                    json.dumps(result, default=str),
                    _now(),
                ],
            )

    def recordings(self, version: str | None = None) -> list[dict[str, Any]]:
        """Recorded Results, optionally of one version (Result JSON parsed)."""
        sql = "SELECT * FROM recordings"
        params: list[Any] = []
        if version is not None:
            sql += " WHERE version = ?"
            params.append(version)
        rows = self._dicts(sql + " ORDER BY version, case_name, stage", params)
        for row in rows:
            row["result"] = json.loads(row["result"])
        return rows

    # -- helpers ---------------------------------------------------------------------

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    @staticmethod
    def _run_dict(row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        for key in ("argv", "versions"):
            if isinstance(out.get(key), str):
                out[key] = json.loads(out[key])
        for key in ("started_at", "finished_at"):
            if isinstance(out.get(key), datetime):
                out[key] = out[key].isoformat(sep=" ", timespec="seconds")
        return out


def _lock_holder(exc: Exception) -> str:
    text = str(exc)
    marker = "Conflicting lock is held in"
    if marker in text:
        return text[text.index(marker) :].split("\n")[0].rstrip(".")
    return text.split("\n")[0]

"""The results store: every SQL statement of pytest-stedge outside migrations.

A :class:`Store` holds the file only for the statements of one call (see
:mod:`.connection`): a session writing its rows and readers of the same file take
turns, and a store opened read-only (``Store.open(path, read_only=True)``, what every
command that only reads uses) can be read from a read-only file or disk. Rows go in
column-wise (:mod:`.bulk`): one statement per table whatever the number of rows.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_stedge import __version__
from pytest_stedge.errors import StoreError

from .connection import CATALOG, DEFAULT_WAIT_S, MEMORY, StoreConnection
from .item_writes import (
    CASE_COLUMNS,
    FINDING_COLUMNS,
    ITEM_COLUMNS,
    METRIC_COLUMNS,
    write_items,
)
from .rows import ItemRow

__all__ = [
    "CASE_COLUMNS",
    "COLLECTION_ERROR",
    "DEFAULT_PATH",
    "DEFAULT_WAIT_S",
    "FINDING_COLUMNS",
    "ITEM_COLUMNS",
    "MEMORY",
    "METRIC_COLUMNS",
    "ItemRow",
    "Store",
]

DEFAULT_PATH = Path(".stedge") / "results.duckdb"
# the status of a session stopped by collection errors before any item ran: kept (the
# journal and the argv say what happened) but not a result; `stedge runs --all` shows it
COLLECTION_ERROR = "collection-error"



def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Store(StoreConnection):
    """A results store: a DuckDB file (or ``":memory:"``), opened with :meth:`open` for
    writing or, with ``read_only=True``, for reading."""

    # -- runs ----------------------------------------------------------------------

    def begin_run(
        self,
        *,
        argv: Sequence[str],
        versions: Sequence[str] = (),
        baseline: str | None = None,
        host: str | None = None,
        run_uuid: str | None = None,
        status: str = "running",
        started_at: datetime | None = None,
        run_group: str | None = None,
        shard: str | None = None,
    ) -> int:
        """Record a new run (``running`` unless told) and return its id.

        :param run_uuid: the run's identity across stores (default: a new one); a journal
            merged later finds its run by it.
        :param run_group: the logical run this one is part of (the shards of one CI
            pipeline); diff, gate and dashboard read a group as one run.
        :param shard: ``K/N`` when the session ran one shard of the corpus.
        """
        with self.transaction():
            if self.server:  # many sessions begin at once: the server hands out the ids
                from .server import next_run_id

                run_id = next_run_id(self.db, CATALOG)
            else:
                row = self.db.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()
                run_id = int(row[0]) if row else 1
            self.db.execute(
                "INSERT INTO runs (run_id, run_uuid, started_at, status, host, argv, versions,"
                " baseline, plugin_version, run_group, shard) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    run_uuid or uuid.uuid4().hex,
                    started_at or _now(),
                    status,
                    host or socket.gethostname(),
                    json.dumps(list(argv)),
                    json.dumps(list(versions)),
                    baseline,
                    __version__,
                    run_group,
                    shard,
                ],
            )
        return run_id

    def run_id_of(self, run_uuid: str) -> int | None:
        """The local id of the run ``run_uuid``, if this store has it."""
        rows = self._rows("SELECT run_id FROM runs WHERE run_uuid = ?", [run_uuid])
        return int(rows[0][0]) if rows else None

    def run_uuid_of(self, run_id: int) -> str:
        """The uuid of run ``run_id`` (raises StoreError if there is no such run)."""
        rows = self._rows("SELECT run_uuid FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise self._no_run(run_id)
        return str(rows[0][0])

    def _no_run(self, run_id: int) -> StoreError:
        known = [str(r[0]) for r in self._rows("SELECT run_id FROM runs ORDER BY run_id")]
        return StoreError(
            f"no run {run_id} in {self.path}; stored runs: {', '.join(known) or 'none'}"
        )

    def finish_run(self, run_id: int, *, status: str, exitstatus: int | None) -> None:
        """Mark a run finished with ``status`` (passed, failed, interrupted, killed, error)."""
        with self.attached(write=True) as db:
            db.execute(
                "UPDATE runs SET finished_at = ?, status = ?, exitstatus = ? WHERE run_id = ?",
                [_now(), status, exitstatus, run_id],
            )

    def set_run_versions(self, run_id: int, versions: Sequence[str]) -> None:
        """Record which toolchain versions the run used."""
        with self.attached(write=True) as db:
            db.execute(
                "UPDATE runs SET versions = ? WHERE run_id = ?",
                [json.dumps(list(versions)), run_id],
            )

    def add_items(self, run_id: int, rows: Iterable[ItemRow], *, replace: bool = True) -> None:
        """Store finished items with their Result, long-form metrics and findings.

        One transaction, one column-wise insert per table (see :mod:`.bulk`).

        :param replace: an item already stored under the same (run, node id) is replaced;
            with False it is kept and the new row dropped (merging a journal twice).
        """
        rows = list(rows)
        if not rows:
            return
        for attempt in range(5 if self.server else 1):
            try:
                write_items(self, run_id, rows, replace)
                return
            except StoreError as exc:
                from .server import is_unique_violation

                # Two sessions stored the same new case at once: the server refused the
                # second; its next attempt sees the first one's row and skips it.
                if attempt == 4 or not (self.server and is_unique_violation(exc)):
                    raise

    def item_nodeids(self, run_id: int) -> set[str]:
        """Node ids of the items stored for ``run_id``."""
        return {str(r[0]) for r in self._rows("SELECT nodeid FROM items WHERE run_id = ?", [run_id])}

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first, with their item counts by outcome."""
        sql = (
            "SELECT r.run_id, r.started_at, r.finished_at, r.status, r.exitstatus, r.host, "
            "r.versions, r.baseline, r.argv, r.run_group, r.shard, "
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
        with self.attached():
            runs = self._dicts("SELECT * FROM runs WHERE run_id = ?", [run_id])
            if not runs:
                raise self._no_run(run_id)
            items = self._dicts(
                "SELECT * FROM items WHERE run_id = ? ORDER BY case_name, stage, version, nodeid",
                [run_id],
            )
            metrics = self._dicts(
                "SELECT nodeid, metric, value, unit FROM metrics WHERE run_id = ? ORDER BY metric",
                [run_id],
            )
        run = self._run_dict(runs[0])
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
        """Id of the newest run that ran something (a collection error's run is none)."""
        rows = self._rows("SELECT max(run_id) FROM runs WHERE status <> ?", [COLLECTION_ERROR])
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def versions(self) -> list[str]:
        """Toolchain versions that have stored results (skipped items are no result)."""
        rows = self._rows(
            "SELECT DISTINCT version FROM items WHERE version IS NOT NULL "
            "AND outcome <> 'skipped' ORDER BY version"
        )
        return [str(r[0]) for r in rows]

    def metric_rows(
        self, *, versions: Sequence[str] | None = None, latest_only: bool = True,
        run_groups: Sequence[str] | None = None,
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
        if run_groups:  # only the runs of these logical runs (the shards of a pipeline)
            where += f" AND r.run_group IN ({', '.join('?' for _ in run_groups)})"
            params += list(run_groups)
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
        with self.attached():
            rows = self._dicts(
                "SELECT * FROM items WHERE case_name = ? AND stage = ? AND version = ? "
                "AND outcome NOT IN ('skipped') ORDER BY run_id DESC LIMIT 1",
                [case_name, stage, version],
            )
            if not rows:
                return None
            item = rows[0]
            metrics = self._dicts(
                "SELECT metric, value FROM metrics WHERE run_id = ? AND nodeid = ?",
                [item["run_id"], item["nodeid"]],
            )
        item["result"] = json.loads(item["result"]) if item["result"] else None
        item["metrics"] = {r["metric"]: r["value"] for r in metrics}
        return item

    def run_groups(self, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Logical runs (``--stedge-run-group``), newest first: ``run_group``, ``run_ids``,
        ``shards`` (``K/N`` each), ``items``, ``failed``, ``statuses``, ``started_at``, and
        ``complete`` (every shard 1..N of the group is stored, or it was not sharded).

        :param names: only these groups (default: all).
        """
        where = "r.run_group IS NOT NULL"
        params: list[Any] = []
        if names:
            where += f" AND r.run_group IN ({', '.join('?' for _ in names)})"
            params += list(names)
        rows = self._dicts(
            "SELECT r.run_group, list(DISTINCT r.run_id ORDER BY r.run_id) AS run_ids, "
            "list(DISTINCT r.shard ORDER BY r.shard) FILTER (WHERE r.shard IS NOT NULL) AS shards, "
            "list(DISTINCT r.status ORDER BY r.status) AS statuses, "
            "min(r.started_at) AS started_at, count(i.nodeid) AS items, "
            "count(i.nodeid) FILTER (WHERE i.outcome IN ('failed', 'error')) AS failed "
            f"FROM runs r LEFT JOIN items i USING (run_id) WHERE {where} "
            "GROUP BY r.run_group ORDER BY max(r.run_id) DESC",
            params,
        )
        for row in rows:
            row["shards"] = list(row["shards"] or [])
            row["missing"] = missing_shards(row["shards"])
            row["complete"] = not row["missing"]
        return rows

    def findings(self, *, bug_id: str | None = None) -> list[dict[str, Any]]:
        """Stored findings (newest run first), with the run's start time and
        ``group_run``: the newest run of its run group (its own id when not grouped), so
        the shards of one pipeline count as one run."""
        sql = (
            "SELECT f.*, r.started_at, max(r.run_id) OVER (PARTITION BY "
            "coalesce(r.run_group, 'run ' || CAST(r.run_id AS VARCHAR))) AS group_run "
            "FROM findings f JOIN runs r USING (run_id)"
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
        run_id: int | None = None,
        comparable: bool = True,
        note: str | None = None,
        replace: bool = False,
    ) -> None:
        """Store the recorded Result of ``case_name``/``stage`` for ``version``.

        :param run_id: the run that records the ingest (its history).
        :param comparable: False when it was stored with ``--force`` over a mismatch
            (``note`` says which); such a recording never compares with other versions.
        :param replace: replace a recording already stored for the same key (else
            :class:`StoreError` naming when and from where the stored one came).
        """
        with self.transaction():
            if not replace:
                old = self.db.execute(
                    "SELECT source, ingested_at FROM recordings "
                    "WHERE version = ? AND case_name = ? AND stage = ?",
                    [version, case_name, stage],
                ).fetchone()
                if old is not None:
                    raise StoreError(
                        f"{self.path} already holds a recording of {case_name} {stage} for "
                        f"{version} (from {old[0]}, ingested {old[1]:%Y-%m-%d %H:%M}); pass "
                        "--replace to replace it (the earlier ingest stays in `stedge runs`)"
                    )
            self.db.execute(
                "INSERT OR REPLACE INTO recordings (version, case_name, stage, model_sha256, "
                "options_hash, source, result, ingested_at, run_id, comparable, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [version, case_name, stage, model_sha256, options_hash, source,
                 json.dumps(result, default=str), _now(), run_id, comparable, note],
            )

    def recordings(self, version: str | None = None) -> list[dict[str, Any]]:
        """Recorded Results, optionally of one version (Result JSON parsed).

        Keys: version, case_name, stage, model_sha256, options_hash, source, result,
        ingested_at, run_id, comparable, note.
        """
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


def writable(path: Path | str) -> bool:
    """Whether the store file (or its folder, for a new store) can be written by us."""
    file = Path(path)
    return os.access(file if file.exists() else file.parent, os.W_OK)


def missing_shards(shards: Sequence[str]) -> list[str]:
    """Shards ``K/N`` a group of ``shards`` lacks (none when it was not sharded)."""
    counts = {int(s.split("/")[1]) for s in shards}
    if not counts:
        return []
    have = {s for s in shards}
    want = {f"{k}/{n}" for n in counts for k in range(1, n + 1)}
    return sorted(want - have, key=lambda s: tuple(int(x) for x in s.split("/")))

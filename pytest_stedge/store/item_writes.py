"""How finished items are written: one transaction, one column-wise insert per table.

Metrics are most of the rows; they go as numbers (item index, metric index, value) joined
in SQL with the items' keys and the metric names (see :mod:`.bulk`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pytest_stedge.result import METRICS

from .bulk import frames, insert_rows
from .rows import ItemRow

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .connection import StoreConnection

CASE_COLUMNS = ("case_name", "model_sha256", "options_hash", "case_path", "model_path",
                "target", "description")
ITEM_COLUMNS = ("run_id", "nodeid", "case_name", "stage", "version", "model_sha256",
                "options_hash", "outcome", "recorded", "duration_s", "tool_seconds", "message",
                "result", "finished_at")
FINDING_COLUMNS = ("run_id", "nodeid", "case_name", "stage", "version", "bug_id", "status",
                   "evidence")
METRIC_COLUMNS = ("run_id", "nodeid", "case_name", "stage", "version", "metric", "value", "unit")


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def write_items(store: StoreConnection, run_id: int, rows: list[ItemRow], replace: bool) -> None:
    """One attempt of :meth:`~pytest_stedge.store.database.Store.add_items`: every row in one transaction."""
    now = _now()
    cases = {
        (r.case_name, r.model_sha256, r.options_hash): (
            r.case_name, r.model_sha256, r.options_hash, r.case.get("case_path"),
            r.case.get("model_path"), r.case.get("target"), r.case.get("description"),
        )
        for r in rows
        if r.case and r.model_sha256 and r.options_hash
    }
    items = [
        (
            run_id, r.nodeid, r.case_name, r.stage, r.version, r.model_sha256,
            r.options_hash, r.outcome, r.recorded, r.duration_s, r.tool_seconds, r.message,
            None if r.result is None else json.dumps(r.result, default=str), now,
        )
        for r in rows
    ]
    findings = [
        (
            run_id, r.nodeid, r.case_name, r.stage, r.version, f["bug_id"], f["status"],
            json.dumps(f.get("evidence"), default=str),
        )
        for r in rows
        for f in r.findings
    ]
    # Metrics are most of the rows: sent as numbers (item index, metric index, value)
    # and joined in SQL with the items' keys and the metric names, so DuckDB never
    # converts the same strings a hundred thousand times.
    names: dict[str, int] = {}
    metric_item: list[int] = []
    metric_name: list[int] = []
    metric_value: list[float] = []
    for index, r in enumerate(rows):
        for name, value in r.metrics.items():
            metric_item.append(index)
            metric_name.append(names.setdefault(name, len(names)))
            metric_value.append(float(value))
    conflict = "replace" if replace else "ignore"
    with store.transaction():
        if store.server:
            # DuckDB's INSERT OR REPLACE/IGNORE on a PostgreSQL table checks conflicts
            # row by row over the wire (100 items: 20 s); plain INSERTs go as one COPY.
            cases = _unstored_cases(store, cases)
            if replace:
                _delete_items(store, run_id, [r.nodeid for r in rows])
        insert_rows(store.db, "cases", CASE_COLUMNS, list(cases.values()),
                    on_conflict="error" if store.server else "ignore")
        if not replace:  # keep what is stored: drop the new rows of stored items
            sql = "SELECT nodeid FROM items WHERE run_id = ?"
            stored = {str(r[0]) for r in store.db.execute(sql, [run_id]).fetchall()}
            keep = [i for i, r in enumerate(rows) if r.nodeid not in stored]
            items = [items[i] for i in keep]
            findings = [f for f in findings if f[1] not in stored]
            kept = set(keep)
            triples = [t for t in zip(metric_item, metric_name, metric_value) if t[0] in kept]
            metric_item = [t[0] for t in triples]
            metric_name = [t[1] for t in triples]
            metric_value = [t[2] for t in triples]
        if store.server:
            conflict = "error"  # nothing left to conflict with: stored items are gone
        insert_rows(store.db, "items", ITEM_COLUMNS, items, on_conflict=conflict)
        insert_rows(store.db, "findings", FINDING_COLUMNS, findings, on_conflict=conflict)
        if metric_item:
            _insert_metrics(store, run_id, rows, names, metric_item, metric_name, metric_value,
                                 conflict)

def _insert_metrics(
    store: StoreConnection, run_id: int, rows: list[ItemRow], names: dict[str, int], item: list[int],
    name: list[int], value: list[float], conflict: str,
) -> None:
    keys: dict[str, Sequence[Any]] = {
        "item": list(range(len(rows))),
        "nodeid": [r.nodeid for r in rows],
        "case_name": [r.case_name for r in rows],
        "stage": [r.stage for r in rows],
        "version": [r.version for r in rows],
    }
    ordered = sorted(names, key=names.__getitem__)
    metric_names: dict[str, Sequence[Any]] = {
        "id": list(range(len(ordered))),
        "metric": ordered,
        "unit": [METRICS[n].unit if n in METRICS else None for n in ordered],
    }
    verb = {"replace": "INSERT OR REPLACE INTO", "ignore": "INSERT OR IGNORE INTO",
            "error": "INSERT INTO"}[conflict]
    with frames(store.db, _stedge_keys=keys, _stedge_names=metric_names,
                _stedge_values={"item": item, "name": name, "value": value}):
        store.db.execute(
            f"{verb} metrics (run_id, nodeid, case_name, stage, version, metric, value, unit) "
            "SELECT ?, k.nodeid, k.case_name, k.stage, k.version, n.metric, v.value, n.unit "
            "FROM _stedge_values v JOIN _stedge_keys k ON v.item = k.item "
            "JOIN _stedge_names n ON v.name = n.id",
            [run_id],
        )

def _unstored_cases(store: StoreConnection, cases: dict[Any, tuple[Any, ...]]) -> dict[Any, tuple[Any, ...]]:
    """The ``cases`` rows the store does not hold yet (inside the write transaction)."""
    if not cases:
        return cases
    names = sorted({key[0] for key in cases})
    stored = {
        tuple(row) for row in store.db.execute(
            "SELECT case_name, model_sha256, options_hash FROM cases WHERE case_name IN "
            f"({', '.join('?' for _ in names)})", names,
        ).fetchall()
    }
    return {key: row for key, row in cases.items() if key not in stored}

def _delete_items(store: StoreConnection, run_id: int, nodeids: list[str]) -> None:
    """Delete the stored rows of these items of ``run_id`` (to replace them)."""
    marks = ", ".join("?" for _ in nodeids)
    for table in ("metrics", "findings", "items"):
        store.db.execute(
            f"DELETE FROM {table} WHERE run_id = ? AND nodeid IN ({marks})",
            [run_id, *nodeids],
        )

"""Read-only store queries that the HTML reports need beyond :class:`~pytest_stedge.store.database.Store`.

Plain functions taking a Store, so every SQL statement stays in the store modules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .database import Store


def _dicts(store: Store, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    return store.dicts(sql, params)


def run_case_paths(store: Store, run_id: int) -> dict[str, str]:
    """``case_name -> case.toml path`` of the cases a run executed (as they were stored)."""
    rows = _dicts(
        store,
        "SELECT DISTINCT i.case_name, c.case_path FROM items i "
        "JOIN cases c USING (case_name, model_sha256, options_hash) "
        "WHERE i.run_id = ? AND c.case_path IS NOT NULL ORDER BY i.case_name",
        [run_id],
    )
    return {r["case_name"]: r["case_path"] for r in rows}


def run_findings(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The findings of one run (evidence JSON parsed), by case, stage and version."""
    rows = _dicts(
        store,
        "SELECT * FROM findings WHERE run_id = ? ORDER BY case_name, stage, version, bug_id",
        [run_id],
    )
    for row in rows:
        row["evidence"] = json.loads(row["evidence"]) if row["evidence"] else None
    return rows


def latest_metrics(
    store: Store, metrics: Sequence[str], versions: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """``metrics`` of the newest non-skipped item of every (case, stage, version).

    Keys: case_name, stage, version, metric, value. Much smaller than
    :meth:`Store.metric_rows` when a page needs a few metrics of every case.

    :param versions: only these toolchain versions (default: all).
    """
    if not metrics:
        return []
    marks = ", ".join("?" for _ in metrics)
    where = "version IS NOT NULL AND outcome <> 'skipped'"
    params: list[Any] = []
    if versions:
        where += f" AND version IN ({', '.join('?' for _ in versions)})"
        params += list(versions)
    return _dicts(
        store,
        f"""
        WITH latest AS (
            SELECT run_id, nodeid,
                   row_number() OVER (PARTITION BY case_name, stage, version
                                      ORDER BY run_id DESC) AS rank
            FROM items WHERE {where}
        )
        SELECT m.case_name, m.stage, m.version, m.metric, m.value
        FROM latest l JOIN metrics m USING (run_id, nodeid)
        WHERE l.rank = 1 AND m.metric IN ({marks})
        ORDER BY m.case_name, m.stage, m.version, m.metric
        """,
        params + list(metrics),
    )


def version_runs(store: Store, versions: Sequence[str]) -> dict[str, list[int]]:
    """``version -> run ids`` (newest first) holding items of each of ``versions``."""
    if not versions:
        return {}
    marks = ", ".join("?" for _ in versions)
    rows = _dicts(
        store,
        f"SELECT DISTINCT version, run_id FROM items WHERE version IN ({marks}) "
        "ORDER BY version, run_id DESC",
        list(versions),
    )
    out: dict[str, list[int]] = {v: [] for v in versions}
    for row in rows:
        out[row["version"]].append(int(row["run_id"]))
    return out

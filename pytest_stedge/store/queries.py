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


def stated_options(
    store: Store, versions: Sequence[str], cases: Sequence[str] | None = None
) -> dict[tuple[str, str, str], list[str]]:
    """``(case, stage, version) -> options`` the newest non-skipped item of each states
    (the Result's ``options``), for the items that state them; only ``cases`` when given.
    What a page says when two versions of a case do not compare."""
    if not versions:
        return {}
    params: list[Any] = list(versions)
    where = f"version IN ({', '.join('?' for _ in versions)}) AND outcome <> 'skipped'"
    if cases is not None:
        if not cases:
            return {}
        where += f" AND case_name IN ({', '.join('?' for _ in cases)})"
        params += list(cases)
    rows = _dicts(
        store,
        f"""SELECT case_name, stage, version, options FROM (
                SELECT case_name, stage, version,
                       json_extract_string(result, '$.options') AS options,
                       row_number() OVER (PARTITION BY case_name, stage, version
                                          ORDER BY run_id DESC) AS rank
                FROM items WHERE {where}
            ) WHERE rank = 1 AND options IS NOT NULL""",
        params,
    )
    out: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        words = json.loads(row["options"])
        if isinstance(words, list):
            out[(row["case_name"], row["stage"], row["version"])] = [str(w) for w in words]
    return out


def item_identities(
    store: Store, keys: Sequence[tuple[str, str, str]]
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``(case, stage, version) -> {model_sha256, options_hash, options}`` of the newest
    non-skipped item of each key (``options``: the Result's stated options, or None)."""
    if not keys:
        return {}
    versions = sorted({v for _c, _s, v in keys})
    cases = sorted({c for c, _s, _v in keys})
    rows = _dicts(
        store,
        f"""SELECT case_name, stage, version, model_sha256, options_hash, options FROM (
                SELECT case_name, stage, version, model_sha256, options_hash,
                       json_extract_string(result, '$.options') AS options,
                       row_number() OVER (PARTITION BY case_name, stage, version
                                          ORDER BY run_id DESC) AS rank
                FROM items WHERE outcome <> 'skipped'
                  AND version IN ({', '.join('?' for _ in versions)})
                  AND case_name IN ({', '.join('?' for _ in cases)})
            ) WHERE rank = 1""",
        [*versions, *cases],
    )
    wanted = set(keys)
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["case_name"], row["stage"], row["version"])
        if key in wanted:
            words = json.loads(row["options"]) if row["options"] else None
            out[key] = {"model_sha256": row["model_sha256"], "options_hash": row["options_hash"],
                        "options": words if isinstance(words, list) else None}
    return out


def case_items(store: Store, case_names: Sequence[str]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``(case, stage, version) -> {run_id, model_sha256, options_hash, options, metrics}``:
    the newest non-skipped item of every version of these cases (what ``stedge diff``
    compares), with its flat metrics."""
    if not case_names:
        return {}
    names = sorted(set(case_names))
    rows = _dicts(
        store,
        f"""WITH latest AS (
                SELECT run_id, nodeid, case_name, stage, version, model_sha256, options_hash,
                       json_extract_string(result, '$.options') AS options,
                       row_number() OVER (PARTITION BY case_name, stage, version
                                          ORDER BY run_id DESC) AS rank
                FROM items WHERE version IS NOT NULL AND outcome <> 'skipped'
                  AND case_name IN ({', '.join('?' for _ in names)})
            )
            SELECT l.run_id, l.case_name, l.stage, l.version, l.model_sha256, l.options_hash,
                   l.options, m.metric, m.value
            FROM latest l LEFT JOIN metrics m USING (run_id, nodeid)
            WHERE l.rank = 1 ORDER BY l.case_name, l.stage, l.version, m.metric""",
        names,
    )
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["case_name"], row["stage"], row["version"])
        item = out.get(key)
        if item is None:
            words = json.loads(row["options"]) if row["options"] else None
            item = out[key] = {
                "run_id": row["run_id"], "model_sha256": row["model_sha256"],
                "options_hash": row["options_hash"], "metrics": {},
                "options": words if isinstance(words, list) else None,
            }
        if row["metric"] is not None and row["value"] is not None:
            item["metrics"][row["metric"]] = float(row["value"])
    return out

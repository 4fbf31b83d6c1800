"""Column-wise reads of a whole store's history, for the dashboard.

A dashboard over millions of metric rows cannot afford a Python object per row: these
queries do the per-row work in DuckDB (the newest non-skipped item of every (case, stage,
version), its metric rows pivoted into one row) and return numpy columns
(``fetchnumpy``) with names encoded as small integers, plus the name tables.

Every statement is one plain SELECT over the store's tables (no temporary tables, no
writes), so a store attached through DuckDB's postgres scanner or DuckLake runs it too.
While they run, DuckDB's memory is bounded (:func:`bounded_memory`): the join and the
aggregation over millions of metric rows spill instead of growing the process.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

from .database import Store

_LATEST = """
    SELECT run_id, nodeid, case_name, stage, version, outcome, recorded, model_sha256,
           options_hash
    FROM (
        SELECT i.*, row_number() OVER (PARTITION BY case_name, stage, version
                                       ORDER BY run_id DESC) AS rank
        FROM items i WHERE version IS NOT NULL AND outcome <> 'skipped'
    ) WHERE rank = 1
"""
# The latest items with their names as integers: cases, stages and outcomes by name
# (the order of :func:`_names`), versions in the caller's release order ($versions).
_RANKED = f"""
    SELECT *, dense_rank() OVER (ORDER BY case_name) - 1 AS case_id,
              dense_rank() OVER (ORDER BY stage) - 1 AS stage_id,
              dense_rank() OVER (ORDER BY outcome) - 1 AS outcome_id,
              list_position($versions, version) - 1 AS version_id,
              dense_rank() OVER (ORDER BY model_sha256, options_hash) AS identity,
              model_sha256 IS NOT NULL AND options_hash IS NOT NULL AS known_identity
    FROM ({_LATEST})
"""
QUERY_MEMORY = "160MB"  # DuckDB's budget while these queries run (it spills past it)


@dataclass
class Columns:
    """Rows as numpy columns; the ``case``, ``stage``, ``outcome``, ``version`` and ``bug``
    columns index into the name lists (``versions`` in the caller's release order)."""

    cases: list[str]
    stages: list[str]
    versions: list[str]
    metrics: list[str]
    columns: dict[str, Any]  # name -> numpy array
    outcomes: list[str] = field(default_factory=list)
    stored: dict[str, Any] = field(default_factory=dict)  # metric -> bool array: a value is stored
    bugs: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        first = next(iter(self.columns.values()), ())
        return len(first)


@contextmanager
def bounded_memory(store: Store, limit: str = QUERY_MEMORY) -> Iterator[None]:
    """Run the enclosed queries with DuckDB's memory limited to ``limit``, when the
    session's own limit is higher (DuckDB's default is 80% of the machine's memory).

    The session's limit is restored after: DuckDB's default exactly, a limit the session
    set to the precision DuckDB reports it (``953.6 MiB``)."""
    previous = _memory_limit(store)
    current = _bytes(previous)
    if current is not None and current <= (_bytes(limit) or 0):
        yield
        return
    store.db.execute(f"SET memory_limit = '{limit}'")
    try:
        yield
    finally:
        store.db.execute("RESET memory_limit")
        if _memory_limit(store) != previous:  # the session had its own limit
            store.db.execute(f"SET memory_limit = '{previous}'")


def _memory_limit(store: Store) -> str:
    row = store.db.execute("SELECT current_setting('memory_limit')").fetchone()
    return str(row[0]) if row else ""


_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def _bytes(text: str) -> float | None:
    """``"953.6 MiB"`` (as DuckDB shows a limit) in bytes; None when not a size."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    return float(match.group(1)) * unit if match and unit else None


def _fetch(store: Store, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    """``fetchnumpy`` under :func:`bounded_memory`; once more unbounded if DuckDB cannot
    spill (a store in memory, a read-only temp folder)."""
    try:
        with bounded_memory(store):
            return dict(store.db.execute(sql, params).fetchnumpy())
    except duckdb.OutOfMemoryException:
        return dict(store.db.execute(sql, params).fetchnumpy())


def _names(store: Store) -> tuple[list[str], list[str], list[str]]:
    """The latest items' case, stage and outcome names, each sorted (the order of the
    ``case_id``, ``stage_id`` and ``outcome_id`` of :data:`_RANKED`)."""
    row = store.db.execute(
        "SELECT list(DISTINCT case_name ORDER BY case_name), list(DISTINCT stage ORDER BY stage), "
        f"list(DISTINCT outcome ORDER BY outcome) FROM ({_LATEST})"
    ).fetchone()
    cases, stages, outcomes = row if row else ([], [], [])
    return [str(x) for x in cases or []], [str(x) for x in stages or []], [str(x) for x in outcomes or []]


def stored_versions(store: Store) -> list[str]:
    """The toolchain versions of non-skipped items and of findings (in no order)."""
    with store.attached() as db:
        rows = db.execute(
            "SELECT DISTINCT version FROM items WHERE version IS NOT NULL AND outcome <> 'skipped' "
            "UNION SELECT DISTINCT version FROM findings WHERE version IS NOT NULL AND version <> ''"
        ).fetchall()
    return [str(r[0]) for r in rows]


def item_columns(store: Store, metrics: Sequence[str], versions: Sequence[str]) -> Columns:
    """The newest item of every (case, stage, version) with its ``metrics``, one row
    each, sorted by case, version (release order) and stage.

    Columns: ``case``, ``version``, ``stage``, ``outcome`` (indices), ``run_id``,
    ``recorded``, ``identity`` (equal for equal model sha256 and options hash) and
    ``known_identity`` (both are stored), then one float column per metric named after
    it (NaN when not stored; ``stored`` tells a stored NaN from a missing value).

    :param versions: every stored toolchain version, in release order.
    """
    import numpy as np

    wanted = list(metrics)
    values = ",\n".join(
        f"max(m.value) FILTER (WHERE m.metric = $metrics[{k + 1}]) AS m{k}"
        for k in range(len(wanted))
    )
    # one integer per item to group its metric rows by (cheaper than run id + node id)
    sql = f"""
        WITH ranked AS (SELECT *, row_number() OVER () AS item FROM ({_RANKED})),
        wide AS (
            SELECT l.item, {values}
            FROM ranked l JOIN metrics m USING (run_id, nodeid)
            WHERE list_contains($metrics, m.metric)
            GROUP BY l.item
        )
        SELECT l.case_id AS "case", l.version_id AS version, l.stage_id AS stage,
               l.outcome_id AS outcome, l.run_id, l.recorded, l.identity, l.known_identity,
               w.* EXCLUDE (item)
        FROM ranked l LEFT JOIN wide w USING (item)
        ORDER BY l.case_id, l.version_id, l.stage_id
    """
    with store.snapshot():  # the ids and the names from one view of the store
        raw = _fetch(store, sql, {"versions": list(versions), "metrics": wanted})
        cases, stages, outcomes = _names(store)
    keys = ("case", "version", "stage", "outcome", "run_id", "recorded", "identity",
            "known_identity")
    columns = {k: np.ma.getdata(raw[k]) for k in keys}
    stored = {}
    for k, name in enumerate(wanted):
        column = raw[f"m{k}"]
        stored[name] = ~np.ma.getmaskarray(column)
        columns[name] = np.where(stored[name], np.ma.getdata(column), np.nan).astype(float)
    return Columns(
        cases=cases, stages=stages, versions=list(versions), metrics=wanted, columns=columns,
        outcomes=outcomes, stored=stored,
    )


def finding_columns(store: Store) -> Columns:
    """Every stored finding with its run's start, by bug id, then newest run first, case
    and version: columns ``bug``, ``case``, ``stage``, ``version`` (indices; version -1
    when not stored), ``run_id``, ``group_run`` (the newest run of its run group), and as text ``status``, ``evidence`` (JSON, empty when
    none) and ``started_at`` (``YYYY-MM-DD HH:MM:SS``); ``versions`` by name."""
    sql = """
        SELECT dense_rank() OVER (ORDER BY f.bug_id) - 1 AS bug,
               dense_rank() OVER (ORDER BY f.case_name) - 1 AS "case",
               dense_rank() OVER (ORDER BY f.stage) - 1 AS stage,
               CASE WHEN f.version IS NULL THEN -1
                    ELSE dense_rank() OVER (ORDER BY f.version) - 1 END AS version,
               f.run_id,
               -- the shards of one pipeline are one run: its run group's newest run
               max(r.run_id) OVER (PARTITION BY coalesce(r.run_group,
                   'run ' || CAST(r.run_id AS VARCHAR))) AS group_run,
               f.status, coalesce(f.evidence, '') AS evidence,
               coalesce(strftime(r.started_at, '%Y-%m-%d %H:%M:%S'), '') AS started_at
        FROM findings f JOIN runs r USING (run_id)
        ORDER BY f.bug_id, f.run_id DESC, f.case_name, f.version
    """
    def names(column: str) -> list[str]:
        rows = store.db.execute(
            f"SELECT DISTINCT {column} FROM findings WHERE {column} IS NOT NULL ORDER BY 1"
        ).fetchall()
        return [str(r[0]) for r in rows]

    with store.snapshot() as db:  # the ids and the names from one view of the store
        columns = dict(db.execute(sql).fetchnumpy())
        return Columns(cases=names("case_name"), stages=names("stage"),
                       versions=names("version"), metrics=[], columns=columns,
                       bugs=names("bug_id"))


def case_paths(store: Store) -> dict[str, str]:
    """``case_name -> case.toml path`` as last stored (for the cases' bands)."""
    with store.attached() as db:
        rows = db.execute(
            "SELECT case_name, max(case_path) FROM cases WHERE case_path IS NOT NULL GROUP BY 1"
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}

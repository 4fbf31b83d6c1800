"""Column-wise reads of a whole store's history, for the dashboard.

A dashboard over millions of metric rows cannot afford a Python object per row: these
queries do the per-row work in DuckDB and return numpy columns (``fetchnumpy``) with
names encoded as small integers, plus the name tables. Rows are the newest non-skipped
item of every (case, stage, version).

Every statement is one plain SELECT over the store's tables (no temporary tables, no
writes), so a store attached through DuckDB's postgres scanner or DuckLake runs it too.
While they run, DuckDB's memory is bounded (:func:`bounded_memory`): the joins and
windows over millions of rows spill instead of growing the process.
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
    """Rows as numpy columns; ``case``, ``stage``, ``outcome``, ``version`` and ``metric``
    columns index into the name lists (``versions`` in the caller's release order)."""

    cases: list[str]
    stages: list[str]
    versions: list[str]
    metrics: list[str]
    columns: dict[str, Any]  # name -> numpy array
    outcomes: list[str] = field(default_factory=list)

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


def _names(store: Store, column: str) -> list[str]:
    rows = store.db.execute(
        f"SELECT DISTINCT {column} FROM ({_LATEST}) ORDER BY {column}"
    ).fetchall()
    return [str(r[0]) for r in rows]


def stored_versions(store: Store) -> list[str]:
    """The toolchain versions of non-skipped items and of findings (in no order)."""
    rows = store.db.execute(
        "SELECT DISTINCT version FROM items WHERE version IS NOT NULL AND outcome <> 'skipped' "
        "UNION SELECT DISTINCT version FROM findings WHERE version IS NOT NULL AND version <> ''"
    ).fetchall()
    return [str(r[0]) for r in rows]


def case_columns(store: Store, metrics: Sequence[str], versions: Sequence[str]) -> Columns:
    """The newest item of every (case, stage, version), sorted by case, version (release
    order) and stage: columns ``case``, ``version``, ``stage``, ``outcome`` (indices),
    ``run_id``, ``recorded``, and one column per metric of ``metrics`` named after it.

    A metric's value is that of the case's generate stage at that version when it has
    one, else of its first stage by name that measured it; every stage row of a
    version carries the same values (NaN when no stage measured it, or a NaN was stored).

    :param versions: every stored toolchain version, in release order.
    """
    wanted = list(metrics)
    picks = ",\n".join(
        f"arg_min(m.value, l.pick) FILTER (WHERE m.metric = $metrics[{k + 1}]) AS m{k}"
        for k in range(len(wanted))
    )
    values = ", ".join(f"coalesce(w.m{k}, 'nan'::DOUBLE) AS m{k}" for k in range(len(wanted)))
    sql = f"""
        WITH ranked AS (
            SELECT *, CASE WHEN stage = 'generate' THEN -1 ELSE stage_id END AS pick
            FROM ({_RANKED})
        ),
        wide AS (
            SELECT l.case_id, l.version_id, {picks}
            FROM ranked l JOIN metrics m USING (run_id, nodeid)
            WHERE list_contains($metrics, m.metric) AND NOT isnan(m.value)
            GROUP BY l.case_id, l.version_id
        )
        SELECT l.case_id AS "case", l.version_id AS version, l.stage_id AS stage,
               l.outcome_id AS outcome, l.run_id, l.recorded, {values}
        FROM ranked l LEFT JOIN wide w USING (case_id, version_id)
        ORDER BY l.case_id, l.version_id, l.stage_id
    """
    raw = _fetch(store, sql, {"versions": list(versions), "metrics": wanted})
    columns = {k: raw[k] for k in ("case", "version", "stage", "outcome", "run_id", "recorded")}
    columns.update({name: raw[f"m{k}"] for k, name in enumerate(wanted)})
    return Columns(
        cases=_names(store, "case_name"), stages=_names(store, "stage"),
        versions=list(versions), metrics=wanted, columns=columns,
        outcomes=_names(store, "outcome"),
    )


@dataclass(frozen=True)
class Band:
    """A case's band for one metric (``pytest_stedge.diff.Band`` as SQL parameters)."""

    case_name: str
    metric: str
    value: float
    relative: bool
    text: str


def release_moves(
    store: Store,
    metrics: Sequence[str],
    versions: Sequence[str],
    *,
    lower: Sequence[str],
    bands: Sequence[Band],
    default: Band,
    keep: int,
) -> tuple[list[str], list[str], list[tuple[int, int, int, int, list[dict[str, Any]]]]]:
    """Regressions (kind 0), improvements (1) and not-comparable moves (2) of ``metrics``
    between every (case, stage)'s consecutive stored versions, classified in DuckDB.

    A value moved when ``|new - old|`` exceeds its band (the case's, else ``default``;
    relative bands in percent of the old value); ``lower`` metrics regress upwards, the
    others downwards. Two versions compare when the model sha256 and options hash are
    both known and the same; otherwise any move or identity change is not comparable.

    :returns: ``(cases, stages, groups)``, each group ``(base, head, kind, count, top)``
        with versions as indices into ``versions`` and ``top`` the ``keep`` largest moves
        (relative size, a move from 0 first; then by case, stage, metric), each a dict of
        ``case_id, stage_id, metric_id, old, new, band, base_run, head_run``; groups by
        head, base and kind.
    """
    sql = f"""
        WITH ranked AS ({_RANKED}),
        joined AS (
            SELECT l.case_id, l.stage_id, l.version_id, l.run_id, l.identity,
                   l.known_identity, list_position($metrics, m.metric) - 1 AS metric_id,
                   m.value
            FROM ranked l JOIN metrics m USING (run_id, nodeid)
            WHERE list_contains($metrics, m.metric)
        ),
        paired AS (
            SELECT *, lag(version_id) OVER w AS base_id, lag(value) OVER w AS old,
                   lag(run_id) OVER w AS base_run, lag(identity) OVER w AS base_identity
            FROM joined
            WINDOW w AS (PARTITION BY case_id, stage_id, metric_id ORDER BY version_id)
        ),
        bands AS (
            SELECT DISTINCT r.case_id, list_position($metrics, b.metric) - 1 AS metric_id,
                   b.band_value, b.band_relative, b.band
            FROM (SELECT unnest($band_cases::VARCHAR[]) AS case_name,
                         unnest($band_metrics::VARCHAR[]) AS metric,
                         unnest($band_values::DOUBLE[]) AS band_value,
                         unnest($band_relative::BOOLEAN[]) AS band_relative,
                         unnest($band_texts::VARCHAR[]) AS band) b
            JOIN ranked r USING (case_name)
        ),
        moves AS (
            SELECT p.*, p.identity = p.base_identity AND p.known_identity AS comparable,
                   coalesce(b.band, $default_text) AS band,
                   CASE WHEN coalesce(b.band_relative, $default_relative)
                        THEN abs(p.old) * coalesce(b.band_value, $default_value) / 100.0
                        ELSE coalesce(b.band_value, $default_value) END AS allowed,
                   list_contains($lower, p.metric_id) AS lower_better
            FROM paired p LEFT JOIN bands b USING (case_id, metric_id)
            WHERE p.base_id IS NOT NULL AND NOT isnan(p.old) AND NOT isnan(p.value)
              AND (p.old <> p.value OR p.identity <> p.base_identity)
        ),
        classified AS (
            SELECT *,
                CASE WHEN NOT comparable THEN 2
                     WHEN abs(value - old) <= allowed + 1e-12 * greatest(1.0, abs(old)) THEN -1
                     WHEN (lower_better AND value > old) OR (NOT lower_better AND value < old)
                          THEN 0
                     ELSE 1 END AS kind,
                CASE WHEN old = 0 THEN 'inf'::DOUBLE ELSE abs((value - old) / old) END AS size
            FROM moves
        )
        SELECT base_id, version_id, kind, count(*) AS n,
               min_by(struct_pack(case_id := case_id, stage_id := stage_id,
                                  metric_id := metric_id, old := old, new := value,
                                  band := band, base_run := base_run, head_run := run_id),
                      struct_pack(s := -size, c := case_id, t := stage_id, m := metric_id),
                      $keep) AS top
        FROM classified WHERE kind >= 0
        GROUP BY ALL ORDER BY version_id, base_id, kind
    """
    wanted = list(metrics)
    params = {
        "versions": list(versions),
        "metrics": wanted,
        "lower": [k for k, m in enumerate(wanted) if m in set(lower)],
        "band_cases": [b.case_name for b in bands],
        "band_metrics": [b.metric for b in bands],
        "band_values": [b.value for b in bands],
        "band_relative": [b.relative for b in bands],
        "band_texts": [b.text for b in bands],
        "default_text": default.text,
        "default_value": default.value,
        "default_relative": default.relative,
        "keep": max(1, int(keep)),
    }
    try:
        with bounded_memory(store):
            rows = store.db.execute(sql, params).fetchall()
    except duckdb.OutOfMemoryException:
        rows = store.db.execute(sql, params).fetchall()
    groups = [(int(b), int(h), int(k), int(n), list(top)) for b, h, k, n, top in rows]
    return _names(store, "case_name"), _names(store, "stage"), groups


def finding_columns(store: Store) -> Columns:
    """Every stored finding with its run's start, by bug id, then newest run first, case
    and version: columns ``bug``, ``case``, ``stage``, ``version`` (indices; version -1
    when not stored), ``run_id``, and as text ``status``, ``evidence`` (JSON, empty when
    none) and ``started_at`` (``YYYY-MM-DD HH:MM:SS``). ``metrics`` holds the bug ids; ``versions`` the stored versions
    by name."""
    sql = """
        SELECT dense_rank() OVER (ORDER BY f.bug_id) - 1 AS bug,
               dense_rank() OVER (ORDER BY f.case_name) - 1 AS "case",
               dense_rank() OVER (ORDER BY f.stage) - 1 AS stage,
               CASE WHEN f.version IS NULL THEN -1
                    ELSE dense_rank() OVER (ORDER BY f.version) - 1 END AS version,
               f.run_id, f.status, coalesce(f.evidence, '') AS evidence,
               coalesce(strftime(r.started_at, '%Y-%m-%d %H:%M:%S'), '') AS started_at
        FROM findings f JOIN runs r USING (run_id)
        ORDER BY f.bug_id, f.run_id DESC, f.case_name, f.version
    """
    columns = dict(store.db.execute(sql).fetchnumpy())

    def names(column: str) -> list[str]:
        rows = store.db.execute(
            f"SELECT DISTINCT {column} FROM findings WHERE {column} IS NOT NULL ORDER BY 1"
        ).fetchall()
        return [str(r[0]) for r in rows]

    return Columns(cases=names("case_name"), stages=names("stage"), versions=names("version"),
                   metrics=names("bug_id"), columns=columns)


def case_paths(store: Store) -> dict[str, str]:
    """``case_name -> case.toml path`` as last stored (for the cases' bands)."""
    rows = store.db.execute(
        "SELECT case_name, max(case_path) FROM cases WHERE case_path IS NOT NULL GROUP BY 1"
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}

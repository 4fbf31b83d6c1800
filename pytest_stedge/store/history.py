"""Column-wise reads of a whole store's history, for the dashboard.

A dashboard over millions of metric rows cannot afford a Python dict per row: these
queries return numpy columns (DuckDB's ``fetchnumpy``) with names encoded as small
integers, plus the name tables. Rows are the newest non-skipped item of every
(case, stage, version), the same choice as :func:`pytest_stedge.store.queries.latest_items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass
class Columns:
    """Metric rows as columns: ``case``, ``stage``, ``version`` and ``metric`` index into
    the name lists; ``version`` in release order (the caller's ``versions``)."""

    cases: list[str]
    stages: list[str]
    versions: list[str]
    metrics: list[str]
    columns: dict[str, Any]  # name -> numpy array

    def __len__(self) -> int:
        return len(self.columns["value"])


def _names(store: Store, sql: str) -> list[str]:
    with store.attached() as db:
        return [str(r[0]) for r in db.execute(sql).fetchall()]


def metric_columns(store: Store, metrics: Sequence[str], versions: Sequence[str]) -> Columns:
    """``metrics`` of the newest item of every (case, stage, version), sorted by case,
    stage, version (release order as given) and metric.

    :param versions: every stored toolchain version, in release order.
    """
    cases = _names(store, f"SELECT DISTINCT case_name FROM ({_LATEST}) ORDER BY case_name")
    stages = _names(store, f"SELECT DISTINCT stage FROM ({_LATEST}) ORDER BY stage")
    wanted = list(metrics)
    sql = f"""
        WITH latest AS ({_LATEST}),
             ranked AS (SELECT *, dense_rank() OVER (ORDER BY case_name) - 1 AS case_id,
                               dense_rank() OVER (ORDER BY stage) - 1 AS stage_id
                        FROM latest)
        SELECT l.case_id AS "case", l.stage_id AS stage,
               list_position(?, l.version) - 1 AS version,
               list_position(?, m.metric) - 1 AS metric,
               m.value AS value, l.run_id AS run_id
        FROM ranked l JOIN metrics m USING (run_id, nodeid)
        WHERE list_contains(?, m.metric)
        ORDER BY 1, 2, 3, 4
    """
    params: list[Any] = [list(versions), wanted, wanted]
    with store.attached() as db:
        columns = db.execute(sql, params).fetchnumpy()
    return Columns(cases=cases, stages=stages, versions=list(versions), metrics=wanted,
                   columns=dict(columns))


def consecutive_changes(store: Store, metrics: Sequence[str], versions: Sequence[str]) -> Columns:
    """Every metric of ``metrics`` whose value or identity moved between a (case, stage)'s
    consecutive stored versions: columns ``case``, ``stage``, ``metric``, ``base`` and
    ``version`` (indices), ``old``, ``value``, ``comparable`` (same model sha256 and
    options hash on both sides), ``base_run`` and ``run_id``."""
    cases = _names(store, f"SELECT DISTINCT case_name FROM ({_LATEST}) ORDER BY case_name")
    stages = _names(store, f"SELECT DISTINCT stage FROM ({_LATEST}) ORDER BY stage")
    wanted = list(metrics)
    sql = f"""
        WITH latest AS ({_LATEST}),
             ranked AS (SELECT *, dense_rank() OVER (ORDER BY case_name) - 1 AS case_id,
                               dense_rank() OVER (ORDER BY stage) - 1 AS stage_id,
                               list_position(?, version) - 1 AS version_id
                        FROM latest),
             joined AS (
                SELECT l.case_id, l.stage_id, l.version_id, l.run_id, l.model_sha256,
                       l.options_hash, list_position(?, m.metric) - 1 AS metric_id, m.value
                FROM ranked l JOIN metrics m USING (run_id, nodeid)
                WHERE list_contains(?, m.metric)
             ),
             paired AS (
                SELECT *,
                    lag(version_id) OVER w AS base_id,
                    lag(value) OVER w AS old,
                    lag(run_id) OVER w AS base_run,
                    lag(model_sha256) OVER w AS base_model,
                    lag(options_hash) OVER w AS base_options
                FROM joined
                WINDOW w AS (PARTITION BY case_id, stage_id, metric_id ORDER BY version_id)
             )
        SELECT case_id AS "case", stage_id AS stage, metric_id AS metric, base_id AS base,
               version_id AS version, old, value,
               coalesce(model_sha256 = base_model AND options_hash = base_options, false)
                   AS comparable,
               base_run, run_id
        FROM paired
        WHERE base_id IS NOT NULL
          AND (old IS DISTINCT FROM value OR model_sha256 IS DISTINCT FROM base_model
               OR options_hash IS DISTINCT FROM base_options)
        ORDER BY base_id, version_id, case_id, stage_id, metric_id
    """
    with store.attached() as db:
        columns = db.execute(sql, [list(versions), wanted, wanted]).fetchnumpy()
    return Columns(cases=cases, stages=stages, versions=list(versions), metrics=wanted,
                   columns=dict(columns))


def case_paths(store: Store) -> dict[str, str]:
    """``case_name -> case.toml path`` as last stored (for the cases' bands)."""
    with store.attached() as db:
        rows = db.execute(
            "SELECT case_name, max(case_path) FROM cases WHERE case_path IS NOT NULL GROUP BY 1"
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}

"""The stored epoch tables, read for the placement views: the dashboard's operator
atlas, its case and changes pages, and the baseline the gate compares an item against.

Like :mod:`.history`, plain SELECTs over the store's tables: the newest non-skipped item
of every (case, stage, version), and only the ``epochs`` (and, for a replayed public
run, ``provenance``) of its Result, extracted by DuckDB so a store of large Results
is not parsed whole in Python. Rows arrive in batches, one Python object at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .history import _LATEST

if TYPE_CHECKING:
    from .database import Store

_EPOCHS = f"""
    SELECT l.run_id, l.case_name, l.stage, l.version, l.model_sha256, l.options_hash,
           l.recorded, CAST(json_extract(i.result, '$.epochs') AS VARCHAR) AS epochs,
           CAST(json_extract(i.result, '$.provenance') AS VARCHAR) AS provenance
    FROM ({_LATEST}) l JOIN items i USING (run_id, nodeid)
    WHERE i.result IS NOT NULL AND json_extract(i.result, '$.epochs') IS NOT NULL
"""
_BATCH = 512


@dataclass
class EpochRow:
    """The epoch table of one stored item (the newest of its case, stage and version)."""

    run_id: int
    case_name: str
    stage: str
    version: str
    model_sha256: str | None
    options_hash: str | None
    recorded: bool
    epochs: dict[str, Any]
    sources: list[str] = field(default_factory=list)  # https URLs of a public run's files


def _sources(text: str | None) -> list[str]:
    """The https URLs of a replayed public run's files (others are never links)."""
    try:
        provenance = json.loads(text) if text else None
    except ValueError:
        return []
    if not isinstance(provenance, dict):
        return []
    urls = [f.get("url") for f in provenance.get("files") or [] if isinstance(f, dict)]
    return [u for u in urls if isinstance(u, str) and u.startswith("https://")]


def epoch_rows(store: Store, *, version: str | None = None) -> Iterator[EpochRow]:
    """Every stored item's epoch table (newest per case, stage and version), by case,
    stage and version name; only ``version``'s when given."""
    sql = _EPOCHS + (" AND l.version = $version" if version is not None else "")
    sql += " ORDER BY l.case_name, l.stage, l.version"
    params = {"version": version} if version is not None else {}
    with store.attached() as db:  # held while the caller reads the rows
        cursor = db.execute(sql, params)
        while True:
            batch = cursor.fetchmany(_BATCH)
            if not batch:
                return
            for run_id, case, stage, ver, sha, opts, recorded, epochs, provenance in batch:
                try:
                    table = json.loads(epochs) if epochs else None
                except ValueError:
                    table = None
                if not isinstance(table, dict):
                    continue
                yield EpochRow(int(run_id), str(case), str(stage), str(ver), sha, opts,
                               bool(recorded), table, _sources(provenance))


def version_placements(store: Store, version: str) -> dict[tuple[str, str], dict[str, dict[str, int]] | None]:
    """By (case, stage): the software/hybrid epochs per operator of ``version``'s newest
    item (:func:`pytest_stedge.parsers.epoch_kinds.op_counts`)."""
    from ..parsers.epoch_kinds import op_counts

    return {(r.case_name, r.stage): op_counts(r.epochs) for r in epoch_rows(store, version=version)}

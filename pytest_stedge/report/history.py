"""A store's history as the dashboard reads it: per case, its items and charted figures
by version (the changes between a case's consecutive versions: :mod:`.changes`).

Read from numpy columns (:mod:`pytest_stedge.store.history`, where DuckDB has already
picked the stage and pivoted the metrics), one case at a time, so a store of millions
of metric rows costs a few arrays, not a dict per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..result import PRECISION_PREFIX
from ..verdict.compare import classified_metrics
from .charts import EPOCH_KINDS

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.history import Columns

# every metric a diff lists (the changes page classifies them), and the rounding columns of
# the figures a report may print rounded
LISTED = tuple(classified_metrics())
PRECISE = ("weights_bytes", "activations_bytes", "activations_external_bytes", "activations_ratio")
PRECISION_COLUMNS = tuple(PRECISION_PREFIX + m for m in PRECISE)
CASE_METRICS = (
    "activations_bytes",
    "activations_lower_bound_bytes",
    "activations_ratio",
    "weights_bytes",
    "macc",
    "epochs_total",
    *(f"epochs_{k}" for k in EPOCH_KINDS),
    "val_cos",
    "val_snr",
    "duration_ms",
)


@dataclass
class CaseHistory:
    """One case's newest items by version and stage, as arrays (rows in release order,
    then by stage name), and its charted figures by version."""

    name: str
    versions: list[str]  # every stored version, release order (``version`` indexes it)
    version: Any  # numpy int array: the row's version
    stage: list[str]
    run_id: Any  # numpy int array
    outcome: list[str]
    recorded: Any  # numpy bool array
    values: dict[str, Any]  # metric -> numpy float array by row, NaN when not known
    charted: Any  # numpy bool array: the row is its version's first and a figure is known

    def by_version(self) -> tuple[list[int], dict[str, list[float | None]]]:
        """The versions (indices) where any charted figure is known, and each metric's
        values there (None when not known)."""
        import numpy as np

        rows = np.flatnonzero(self.charted)
        isnan = math.isnan
        out = {}
        for metric, column in self.values.items():
            out[metric] = [None if isnan(v) else v for v in column[rows].tolist()]
        return self.version[rows].tolist(), out

    def figures(self) -> dict[str, dict[str, float]]:
        """``version -> metric -> value`` of the known figures."""
        index, values = self.by_version()
        out: dict[str, dict[str, float]] = {}
        for k, v in enumerate(index):
            out[self.versions[v]] = {m: x for m, column in values.items() if (x := column[k]) is not None}
        return out


@dataclass
class HistoryTable:
    """The store's history as columns (:func:`pytest_stedge.store.history.item_columns`)
    plus, for each charted metric, the value a case page shows on each row: its generate
    stage's at that version when that is known, else its first stage's by name that
    measured it."""

    cols: Columns
    shown: dict[str, Any]  # metric -> numpy float array by row, NaN when not known
    charted: Any  # numpy bool array: first row of its (case, version), a figure known


def case_table(store: Store, versions: Sequence[str]) -> HistoryTable:
    """The newest item of every (case, stage, version) with the charted and the directed
    metrics: read once, then sliced case by case and compared version by version."""
    from pytest_stedge.store.history import item_columns

    metrics = [*CASE_METRICS, *(m for m in LISTED if m not in CASE_METRICS), *PRECISION_COLUMNS]
    import numpy as np

    cols = item_columns(store, metrics, versions)
    shown = {m: _shown(cols, m) for m in CASE_METRICS}
    case, version = cols.columns["case"], cols.columns["version"]
    charted = np.r_[True, (case[1:] != case[:-1]) | (version[1:] != version[:-1])][: len(case)]
    charted &= np.logical_or.reduce([~np.isnan(v) for v in shown.values()])
    return HistoryTable(cols, shown, charted)


def _shown(cols: Columns, metric: str) -> Any:
    """Per row, the value of ``metric`` its (case, version) shows (see :class:`HistoryTable`)."""
    import numpy as np

    c = cols.columns
    values = c[metric]
    rows = len(values)
    if not rows:
        return values
    case, version, stage = c["case"], c["version"], c["stage"]
    starts = np.flatnonzero(np.r_[True, (case[1:] != case[:-1]) | (version[1:] != version[:-1])])
    generate = cols.stages.index("generate") if "generate" in cols.stages else -1
    rank = np.where(stage == generate, 0, stage.astype(np.int64) + 1)  # generate, then by name
    unknown = len(cols.stages) + 1
    key = np.where(np.isnan(values), unknown, rank) * rows + np.arange(rows)
    best = np.minimum.reduceat(key, starts)
    picked = np.where(best // rows < unknown, values[best % rows], np.nan)
    return np.repeat(picked, np.diff(np.r_[starts, rows]))


def case_histories(table: HistoryTable) -> Iterator[CaseHistory]:
    """Every case of ``table`` in name order, one at a time."""
    import numpy as np

    if not len(table.cols):
        return
    case = table.cols.columns["case"]
    bounds = np.flatnonzero(np.diff(case)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    ends = np.concatenate((bounds, [len(case)])).tolist()
    for start, end in zip(starts, ends):
        yield _slice(table, start, end)


def case_history(table: HistoryTable, name: str) -> CaseHistory | None:
    """One case of ``table``, None when it has no stored item."""
    import numpy as np

    cols = table.cols
    if name not in cols.cases:
        return None
    k = cols.cases.index(name)
    start, end = (int(x) for x in np.searchsorted(cols.columns["case"], [k, k + 1]))
    return _slice(table, start, end) if end > start else None


def _slice(table: HistoryTable, start: int, end: int) -> CaseHistory:
    cols = table.cols
    c = cols.columns
    return CaseHistory(
        name=cols.cases[int(c["case"][start])],
        versions=cols.versions,
        version=c["version"][start:end],
        stage=[cols.stages[s] for s in c["stage"][start:end].tolist()],
        run_id=c["run_id"][start:end],
        outcome=[cols.outcomes[o] for o in c["outcome"][start:end].tolist()],
        recorded=c["recorded"][start:end],
        values={m: column[start:end] for m, column in table.shown.items()},
        charted=table.charted[start:end],
    )

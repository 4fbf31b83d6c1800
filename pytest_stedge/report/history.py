"""A store's history as the dashboard reads it: per case, its items and charted figures
by version, and every regression and improvement between a case's consecutive versions.

Read from numpy columns (:mod:`pytest_stedge.store.history`, where DuckDB has already
picked the stage and pivoted the metrics), one case at a time, so a store of millions
of metric rows costs a few arrays, not a dict per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.result import METRICS

from ..verdict.bands import Band, parse_band
from ..verdict.compare import ChangeKind
from .charts import EPOCH_KINDS

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.history import Columns

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
DIRECTED = tuple(name for name, spec in METRICS.items() if spec.direction != "none")


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

    metrics = [*CASE_METRICS, *(m for m in DIRECTED if m not in CASE_METRICS)]
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


@dataclass
class Change:
    """One metric of one (case, stage) between two consecutive versions."""

    base: str
    head: str
    case_name: str
    stage: str
    metric: str
    old: float
    new: float
    kind: ChangeKind
    band: str
    base_run: int
    head_run: int

    @property
    def delta(self) -> float:
        """new - old."""
        return self.new - self.old

    @property
    def delta_pct(self) -> float | None:
        """The change in percent of the old value (None from 0)."""
        return None if self.old == 0 else self.delta / abs(self.old) * 100.0

    @property
    def size(self) -> float:
        """How large the change is, to list the largest first (a move from 0 is infinite)."""
        pct = self.delta_pct
        return math.inf if pct is None else abs(pct)


KINDS = (ChangeKind.REGRESSED, ChangeKind.IMPROVED, ChangeKind.NOT_COMPARABLE)


def release_changes(
    store: Store, table: HistoryTable, default_band: str = "0", *, keep: int = 100
) -> tuple[list[Change], dict[tuple[str, str, str], int]]:
    """Regressions, improvements and not-comparable moves between each (case, stage)'s
    consecutive stored versions of a metric, with the case's ``[baseline]`` bands when
    its case.toml is still on disk: the ``keep`` largest of each (base, head, kind), and
    the count of each.

    A value moved when ``|new - old|`` exceeds its band (relative bands in percent of the
    old value). Two versions compare when the model sha256 and options hash are both
    known and the same; otherwise any move or change of identity is not comparable.
    Classified on numpy columns, one metric at a time (a store where every metric moves
    every release has millions of moves); only the kept ones become Python objects."""
    import numpy as np

    from pytest_stedge.store.history import case_paths

    cols = table.cols
    if not len(cols):
        return [], {}
    c = cols.columns
    case, stage, version = c["case"], c["stage"], c["version"]
    order = np.lexsort((version, stage, case))  # each (case, stage) by version
    bands = _bands(case_paths(store))
    default = parse_band(default_band)
    shape = (len(cols.versions), len(cols.versions), len(KINDS))
    counts = np.zeros(shape, dtype=np.int64)
    found = []  # per metric: (group, size, case, stage, metric, base row, head row) kept
    for metric_id, metric in enumerate(DIRECTED):
        if metric not in cols.stored:
            continue
        rows = order[cols.stored[metric][order]]
        base, head = rows[:-1], rows[1:]
        same = (case[base] == case[head]) & (stage[base] == stage[head])
        base, head = base[same], head[same]
        kind, size = _classify(cols, metric, base, head, bands, default)
        chosen = kind >= 0
        base, head, kind, size = base[chosen], head[chosen], kind[chosen], size[chosen]
        group = (version[base].astype(np.int64) * len(cols.versions) + version[head]) * len(KINDS) + kind
        counts += np.bincount(group, minlength=counts.size).reshape(shape)
        top = _largest(group, size, case[head], stage[head], keep)
        found.append((group[top], size[top], case[head][top], stage[head][top],
                      np.full(len(top), metric_id), base[top], head[top]))
    if not found:
        return [], {}
    group, size, case_of, stage_of, metric_of, base, head = (np.concatenate(x) for x in zip(*found))
    top = _largest(group, size, case_of, stage_of, keep, metric_of)
    bands_text = _band_texts(cols, bands)
    out = []
    for i in top.tolist():
        b, h = int(base[i]), int(head[i])
        metric = DIRECTED[int(metric_of[i])]
        out.append(Change(
            base=cols.versions[int(version[b])], head=cols.versions[int(version[h])],
            case_name=cols.cases[int(case[h])], stage=cols.stages[int(stage[h])], metric=metric,
            old=float(c[metric][b]), new=float(c[metric][h]),
            kind=KINDS[int(group[i]) % len(KINDS)],
            band=bands_text.get((int(case[h]), metric), default_band),
            base_run=int(c["run_id"][b]), head_run=int(c["run_id"][h]),
        ))
    totals = {
        (cols.versions[b], cols.versions[h], KINDS[k].value): int(counts[b, h, k])
        for b, h, k in zip(*np.nonzero(counts))
    }
    return out, totals


def _classify(
    cols: Columns, metric: str, base: Any, head: Any, bands: Mapping[str, Mapping[str, str]],
    default: Band,
) -> tuple[Any, Any]:
    """Per (base row, head row): kind (index into :data:`KINDS`, -1 when no change) and
    relative size (a move from 0 is infinite)."""
    import numpy as np

    c = cols.columns
    old, new = c[metric][base], c[metric][head]
    identity = c["identity"]
    same_identity = identity[base] == identity[head]
    comparable = same_identity & c["known_identity"][head]
    value = np.full(len(cols.cases), default.value)
    relative = np.full(len(cols.cases), default.relative)
    for k, name in enumerate(cols.cases):
        text = bands.get(name, {}).get(metric)
        if text is not None:
            band = parse_band(text)
            value[k], relative[k] = band.value, band.relative
    cases = c["case"][head]
    allowed = np.where(relative[cases], np.abs(old) * value[cases] / 100.0, value[cases])
    valid = ~(np.isnan(old) | np.isnan(new))
    moved = np.abs(new - old) > allowed + 1e-12 * np.maximum(1.0, np.abs(old))
    worse = new > old if METRICS[metric].direction == "lower" else new < old
    kind = np.full(len(old), -1)
    kind[valid & ~comparable & ((old != new) | ~same_identity)] = 2
    kind[valid & comparable & moved & worse] = 0
    kind[valid & comparable & moved & ~worse] = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.where(old == 0, np.inf, np.abs((new - old) / np.where(old == 0, 1, old)))
    return kind, size


def _largest(group: Any, size: Any, case: Any, stage: Any, keep: int, metric: Any = None) -> Any:
    """Indices of the ``keep`` largest of each group (groups in order, each largest first;
    ties by case, stage, then metric)."""
    import numpy as np

    ties = (stage, case) if metric is None else (metric, stage, case)
    order = np.lexsort((*ties, -size, group))  # the last key sorts first
    ordered = group[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return order[rank < keep]


def _band_texts(cols: Columns, bands: Mapping[str, Mapping[str, str]]) -> dict[tuple[int, str], str]:
    """``(case index, metric) -> band text`` of the cases' own bands."""
    index = {name: k for k, name in enumerate(cols.cases)}
    return {
        (index[name], metric): text
        for name, by_metric in bands.items() if name in index
        for metric, text in by_metric.items()
    }


def _bands(paths: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``case -> metric -> band`` from the case files still on disk (each read once)."""
    from pytest_stedge.errors import StedgeError

    from ..case.load import load_cases

    out: dict[str, dict[str, str]] = {}
    loaded: dict[str, Any] = {}
    for name, path in paths.items():
        if path not in loaded:
            try:
                loaded[path] = {c.name: c for c in load_cases(Path(path))} if Path(path).is_file() else {}
            except (StedgeError, OSError):
                loaded[path] = {}
        case = loaded[path].get(name)
        if case is not None and case.baseline:
            out[name] = dict(case.baseline)
    return out

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

from pytest_stedge.diff import ChangeKind, parse_band
from pytest_stedge.result import METRICS

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

    def by_version(self) -> tuple[list[int], dict[str, list[float | None]]]:
        """The versions (indices) where any charted figure is known, and each metric's
        values there (None when not known)."""
        import numpy as np

        first = np.flatnonzero(np.r_[True, self.version[1:] != self.version[:-1]])
        known = np.zeros(len(first), dtype=bool)
        for column in self.values.values():
            known |= ~np.isnan(column[first])
        rows = first[known]
        out = {}
        for metric, column in self.values.items():
            picked = column[rows]
            out[metric] = [None if math.isnan(v) else v for v in picked.tolist()]
        return self.version[rows].tolist(), out

    def figures(self) -> dict[str, dict[str, float]]:
        """``version -> metric -> value`` of the known figures."""
        index, values = self.by_version()
        out: dict[str, dict[str, float]] = {}
        for k, v in enumerate(index):
            out[self.versions[v]] = {m: x for m, column in values.items() if (x := column[k]) is not None}
        return out


def case_table(store: Store, versions: Sequence[str]) -> Columns:
    """The newest item of every (case, stage, version) with the charted metrics (the
    generate stage's when a case has several stages, else the first stage by name that
    measured the metric), as columns: read once, then sliced case by case."""
    from pytest_stedge.store.history import case_columns

    return case_columns(store, CASE_METRICS, versions)


def case_histories(cols: Columns) -> Iterator[CaseHistory]:
    """Every case of ``cols`` (:func:`case_table`) in name order, one at a time."""
    import numpy as np

    if not len(cols):
        return
    case = cols.columns["case"]
    bounds = np.flatnonzero(np.diff(case)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    ends = np.concatenate((bounds, [len(case)])).tolist()
    for start, end in zip(starts, ends):
        yield _slice(cols, start, end)


def case_history(cols: Columns, name: str) -> CaseHistory | None:
    """One case of ``cols``, None when it has no stored item."""
    import numpy as np

    if name not in cols.cases:
        return None
    case = cols.columns["case"]
    k = cols.cases.index(name)
    start, end = (int(x) for x in np.searchsorted(case, [k, k + 1]))
    return _slice(cols, start, end) if end > start else None


def _slice(cols: Columns, start: int, end: int) -> CaseHistory:
    c = cols.columns
    return CaseHistory(
        name=cols.cases[int(c["case"][start])],
        versions=cols.versions,
        version=c["version"][start:end],
        stage=[cols.stages[s] for s in c["stage"][start:end].tolist()],
        run_id=c["run_id"][start:end],
        outcome=[cols.outcomes[o] for o in c["outcome"][start:end].tolist()],
        recorded=c["recorded"][start:end],
        values={m: c[m][start:end] for m in CASE_METRICS},
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


def release_changes(
    store: Store, versions: Sequence[str], default_band: str = "0", *, keep: int = 100
) -> tuple[list[Change], dict[tuple[str, str, str], int]]:
    """Regressions, improvements and not-comparable moves between each (case, stage)'s
    consecutive stored versions, with the case's ``[baseline]`` bands when its case.toml
    is still on disk: the ``keep`` largest of each (base, head, kind), and the count of
    each. Classified in the store (a store where every metric moves every release has
    millions of moves); only the kept ones become Python objects."""
    from pytest_stedge.store.history import Band, case_paths, release_moves

    bands = [
        Band(name, metric, band.value, band.relative, text)
        for name, by_metric in _bands(case_paths(store)).items()
        for metric, text in by_metric.items()
        if metric in DIRECTED
        for band in [parse_band(text)]
    ]
    default = parse_band(default_band)
    cases, stages, groups = release_moves(
        store, DIRECTED, versions,
        lower=[m for m in DIRECTED if METRICS[m].direction == "lower"],
        bands=bands, default=Band("", "", default.value, default.relative, default_band),
        keep=keep,
    )
    kinds = (ChangeKind.REGRESSED, ChangeKind.IMPROVED, ChangeKind.NOT_COMPARABLE)
    counts: dict[tuple[str, str, str], int] = {}
    out: list[Change] = []
    for base, head, kind, count, top in groups:
        pair = (versions[base], versions[head])
        counts[(*pair, kinds[kind].value)] = count
        out.extend(
            Change(
                base=pair[0], head=pair[1], case_name=cases[m["case_id"]],
                stage=stages[m["stage_id"]], metric=DIRECTED[m["metric_id"]],
                old=float(m["old"]), new=float(m["new"]), kind=kinds[kind], band=str(m["band"]),
                base_run=int(m["base_run"]), head_run=int(m["head_run"]),
            )
            for m in top
        )
    return out, counts


def _bands(paths: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``case -> metric -> band`` from the case files still on disk (each read once)."""
    from pytest_stedge.corpus import load_cases
    from pytest_stedge.errors import StedgeError

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

"""The dashboard's changes between a case's consecutive stored versions, classified by the
rule ``stedge diff`` and the gate use (:func:`pytest_stedge.verdict.classify.classify_arrays`).

For every (case, stage), each stored version's newest item against the one of the version
before it: every metric either side measured, its band (the case's ``[baseline]``, then the
per-metric bands: ini ``stedge_metric_bands`` over the noisy metrics' built-in ones, then the
default band), its expectation in each (newly failing / fixed), the rounding of its figures,
and the identity of both sides (another model or other options: not comparable). So the
counts on ``changes.html`` are the counts ``stedge diff BASE HEAD`` gives for the same pairs.

Classified on numpy columns one metric at a time (a store where every metric moves every
release has millions of changes); only the kept ones become Python objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..result import METRICS, PRECISION_PREFIX
from ..verdict.bands import BandSettings, parse_band
from ..verdict.classify import (
    MET,
    MISSED,
    NO_EXPECTATION,
    UNCHANGED,
    classify_arrays,
    direction_code,
)
from ..verdict.compare import KIND_ORDER, ChangeKind
from .history import LISTED

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.history import Columns

    from ..case.model import Case
    from .history import HistoryTable

SHOWN_KINDS = tuple(k for k in KIND_ORDER if k is not ChangeKind.UNCHANGED)


@dataclass
class Change:
    """One metric of one (case, stage) between two consecutive versions."""

    base: str
    head: str
    case_name: str
    stage: str
    metric: str
    old: float | None
    new: float | None
    kind: ChangeKind
    band: str
    base_run: int
    head_run: int
    note: str = ""  # why not comparable, or which expectation flipped

    @property
    def delta(self) -> float | None:
        """new - old (None when either is not measured)."""
        return None if self.old is None or self.new is None else self.new - self.old

    @property
    def delta_pct(self) -> float | None:
        """The change in percent of the old value (None from 0 or unmeasured)."""
        delta = self.delta
        if delta is None or not self.old or not math.isfinite(delta / self.old):
            return None
        return delta / abs(self.old) * 100.0


def release_changes(
    store: Store, table: HistoryTable, *, bands: BandSettings | None = None,
    cases: Mapping[str, Case] | None = None, keep: int = 100,
) -> tuple[list[Change], dict[tuple[str, str, str], int]]:
    """Every change between each (case, stage)'s consecutive stored versions that is not
    unchanged: the ``keep`` largest of each (base, head, kind), and the count of each.

    :param cases: the corpus cases by name, for their ``[baseline]`` bands and ``[expect]``
        bounds; default: each case file still at the path the store recorded.
    """
    import numpy as np

    from pytest_stedge.store.history import case_paths

    settings = bands or BandSettings()
    cols = table.cols
    if not len(cols):
        return [], {}
    known = cases if cases is not None else _cases(case_paths(store))
    c = cols.columns
    case, stage, version = c["case"], c["stage"], c["version"]
    order = np.lexsort((version, stage, case))  # each (case, stage) by version
    base, head = order[:-1], order[1:]
    same = (case[base] == case[head]) & (stage[base] == stage[head])
    base, head = base[same], head[same]
    comparable = (c["known_identity"][base] & c["known_identity"][head]
                  & (c["identity"][base] == c["identity"][head]))
    nversions = len(cols.versions)
    shape = (nversions, nversions, len(KIND_ORDER))
    counts = np.zeros(shape, dtype=np.int64)
    found = []
    for metric_id, metric in enumerate(LISTED):
        if metric not in c:
            continue
        old, new = c[metric][base], c[metric][head]
        listed = ~(np.isnan(old) & np.isnan(new))  # either side measured it
        value, relative = _band_arrays(cols, metric, known, settings)
        cases_of = case[head]
        allowed = np.where(relative[cases_of], np.abs(old) * value[cases_of] / 100.0, value[cases_of])
        flags = _flags(cols, metric, known)
        slack = _slack(cols, metric, base) + _slack(cols, metric, head)
        kind, _rounded = classify_arrays(
            direction_code(METRICS[metric].direction), old, new, allowed=allowed,
            comparable=comparable, old_ok=flags[base], new_ok=flags[head], slack=slack,
        )
        chosen = listed & (kind != UNCHANGED)
        b, h, k = base[chosen], head[chosen], kind[chosen].astype(np.int64)
        group = (version[b].astype(np.int64) * nversions + version[h]) * len(KIND_ORDER) + k
        counts += np.bincount(group, minlength=counts.size).reshape(shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            size = np.abs((new[chosen] - old[chosen]) / np.where(old[chosen] == 0, 1, old[chosen]))
        size = np.where(old[chosen] == 0, np.inf, size)
        size = np.where(np.isnan(size), -1.0, size)  # unmeasured on a side: listed last
        top = _largest(group, size, case[h], stage[h], keep)
        found.append((group[top], size[top], case[h][top], stage[h][top],
                      np.full(len(top), metric_id), b[top], h[top]))
    if not found:
        return [], {}
    group, size, case_of, stage_of, metric_of, base, head = (np.concatenate(x) for x in zip(*found))
    top = _largest(group, size, case_of, stage_of, keep, metric_of)
    out = [_change(cols, known, settings, int(base[i]), int(head[i]), LISTED[int(metric_of[i])],
                   KIND_ORDER[int(group[i]) % len(KIND_ORDER)]) for i in top.tolist()]
    _say_why(store, out)
    totals = {
        (cols.versions[b], cols.versions[h], KIND_ORDER[k].value): int(counts[b, h, k])
        for b, h, k in zip(*np.nonzero(counts))
    }
    return out, totals


def _change(cols: Columns, cases: Mapping[str, Case], settings: BandSettings, b: int, h: int,
            metric: str, kind: ChangeKind) -> Change:
    c = cols.columns
    name = cols.cases[int(c["case"][h])]
    case = cases.get(name)
    old, new = float(c[metric][b]), float(c[metric][h])
    note = ""
    if kind is ChangeKind.NEWLY_FAILING:
        note = "met its expectation in base, misses it in head"
    elif kind is ChangeKind.FIXED:
        note = "missed its expectation in base, meets it in head"
    elif kind is ChangeKind.NOT_COMPARABLE and (math.isnan(old) or math.isnan(new)):
        note = f"not measured in {'base' if math.isnan(old) else 'head'}"
    return Change(
        base=cols.versions[int(c["version"][b])], head=cols.versions[int(c["version"][h])],
        case_name=name, stage=cols.stages[int(c["stage"][h])], metric=metric,
        old=None if math.isnan(old) else old, new=None if math.isnan(new) else new, kind=kind,
        band=settings.band(metric, case.baseline if case is not None else {}),
        base_run=int(c["run_id"][b]), head_run=int(c["run_id"][h]), note=note,
    )


def _say_why(store: Store, changes: Sequence[Change]) -> None:
    """The words of each kept not-comparable change whose identities differ: the model's
    two hashes or the options that differ, old -> new."""
    from pytest_stedge.store.queries import item_identities

    from ..verdict.identity import comparable, not_comparable_reason

    untold = [ch for ch in changes if ch.kind is ChangeKind.NOT_COMPARABLE and not ch.note]
    if not untold:
        return
    keys = {(ch.case_name, ch.stage, v) for ch in untold for v in (ch.base, ch.head)}
    identities = item_identities(store, sorted(keys))
    for ch in untold:
        sides = [{**identities.get((ch.case_name, ch.stage, v), {}), "version": v}
                 for v in (ch.base, ch.head)]
        if not comparable(sides[0], sides[1]):
            ch.note = not_comparable_reason(sides[0], sides[1])


def _band_arrays(
    cols: Columns, metric: str, cases: Mapping[str, Case], settings: BandSettings
) -> tuple[Any, Any]:
    """Per case index: the band's value and whether it is relative."""
    import numpy as np

    default = parse_band(settings.band(metric, {}))
    value = np.full(len(cols.cases), default.value)
    relative = np.full(len(cols.cases), default.relative)
    for k, name in enumerate(cols.cases):
        case = cases.get(name)
        if case is not None and metric in case.baseline:
            band = parse_band(case.baseline[metric])
            value[k], relative[k] = band.value, band.relative
    return value, relative


def _flags(cols: Columns, metric: str, cases: Mapping[str, Case]) -> Any:
    """Per row: whether the item met the case's expectations on ``metric`` (MET, MISSED), or
    NO_EXPECTATION; a bound is checked where its stage measured the metric, as the gate does."""
    import numpy as np

    from ..verdict.expect import check

    c = cols.columns
    flags = np.full(len(cols), NO_EXPECTATION, dtype=np.int8)
    values = c[metric]
    for name_id, name in enumerate(cols.cases):
        case = cases.get(name)
        if case is None or not case.expect:
            continue
        for stage_id, stage in enumerate(cols.stages):
            bounds = [b for b in case.bounds_for(stage, {metric: 0.0}) if b.metric == metric]
            if not bounds:
                continue
            rows = np.flatnonzero((c["case"] == name_id) & (c["stage"] == stage_id) & ~np.isnan(values))
            for row in rows.tolist():
                missed = check(bounds, {metric: float(values[row])})
                flags[row] = MISSED if missed else MET
    return flags


def _slack(cols: Columns, metric: str, rows: Any) -> Any:
    import numpy as np

    column = cols.columns.get(PRECISION_PREFIX + metric)
    if column is None:
        return np.zeros(len(rows))
    return np.nan_to_num(column[rows], nan=0.0)


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


def _cases(paths: Mapping[str, str]) -> dict[str, Case]:
    """``case -> Case`` from the case files still on disk (each file read once)."""
    from pytest_stedge.errors import StedgeError

    from ..case.load import load_cases

    out: dict[str, Case] = {}
    loaded: dict[str, dict[str, Case]] = {}
    for name, path in paths.items():
        if path not in loaded:
            try:
                loaded[path] = {c.name: c for c in load_cases(Path(path))} if Path(path).is_file() else {}
            except (StedgeError, OSError):
                loaded[path] = {}
        case = loaded[path].get(name)
        if case is not None:
            out[name] = case
    return out


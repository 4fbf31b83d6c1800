"""A store's history as the dashboard reads it: per case, its charted figures by version,
and every regression and improvement between a case's consecutive versions.

Built from numpy columns (:mod:`pytest_stedge.store.history`), one case at a time, so a
store of millions of metric rows costs arrays, not a dict per row.
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


def case_values(
    store: Store, versions: Sequence[str]
) -> Iterator[tuple[str, dict[str, dict[str, float]]]]:
    """``(case, version -> metric -> value)`` for every case in name order: the charted
    metrics of the generate stage when a case has several stages (else the first stage
    by name that measured the metric)."""
    from pytest_stedge.store.history import metric_columns

    cols = metric_columns(store, CASE_METRICS, versions)
    if not len(cols):
        return
    import numpy as np

    case = cols.columns["case"]
    stage = cols.columns["stage"]
    version = cols.columns["version"]
    metric = cols.columns["metric"]
    value = cols.columns["value"]
    generate = cols.stages.index("generate") if "generate" in cols.stages else -1
    bounds = np.flatnonzero(np.diff(case)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(case)]))
    for start, end in zip(starts.tolist(), ends.tolist()):
        out: dict[str, dict[str, float]] = {}
        chosen: dict[tuple[int, int], int] = {}  # (version, metric) -> stage kept
        for i in range(start, end):
            v = float(value[i])
            if math.isnan(v):
                continue
            key = (int(version[i]), int(metric[i]))
            s = int(stage[i])
            kept = chosen.get(key)
            if kept is not None and (kept == generate or s != generate):
                continue  # rows come stage by stage: the first stage wins unless generate
            chosen[key] = s
            out.setdefault(cols.versions[key[0]], {})[cols.metrics[key[1]]] = v
        yield cols.cases[int(case[start])], out


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
    each. Classified on numpy columns: a store where every metric moves every release
    has millions of them."""
    import numpy as np

    from pytest_stedge.store.history import case_paths, consecutive_changes

    cols = consecutive_changes(store, DIRECTED, versions)
    if not len(cols):
        return [], {}
    c = cols.columns
    old = np.asarray(c["old"], dtype=float)
    new = np.asarray(c["value"], dtype=float)
    metric = np.asarray(c["metric"], dtype=np.int64)
    case = np.asarray(c["case"], dtype=np.int64)
    comparable = np.asarray(c["comparable"], dtype=bool)
    default = parse_band(default_band)
    allowed = np.abs(old) * default.value / 100.0 if default.relative else np.full(len(old), default.value)
    band_text = np.full(len(old), default_band, dtype=object)
    for name, bands in _bands(case_paths(store)).items():
        if name not in cols.cases:
            continue
        mine = case == cols.cases.index(name)
        for metric_name, text in bands.items():
            if metric_name not in cols.metrics:
                continue
            mask = mine & (metric == cols.metrics.index(metric_name))
            band = parse_band(text)
            allowed[mask] = np.abs(old[mask]) * band.value / 100.0 if band.relative else band.value
            band_text[mask] = text
    valid = ~(np.isnan(old) | np.isnan(new))
    moved = np.abs(new - old) > allowed + 1e-12 * np.maximum(1.0, np.abs(old))
    lower = np.array([METRICS[m].direction == "lower" for m in cols.metrics])[metric]
    worse = np.where(lower, new > old, new < old)
    kinds = (ChangeKind.REGRESSED, ChangeKind.IMPROVED, ChangeKind.NOT_COMPARABLE)
    kind = np.full(len(old), -1)
    kind[valid & ~comparable] = 2
    kind[valid & comparable & moved & worse] = 0
    kind[valid & comparable & moved & ~worse] = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.where(old == 0, np.inf, np.abs((new - old) / np.where(old == 0, 1, old)))
    base = np.asarray(c["base"], dtype=np.int64)
    head = np.asarray(c["version"], dtype=np.int64)
    group = (base * len(cols.versions) + head) * 3 + kind
    chosen = np.flatnonzero(kind >= 0)
    order = chosen[np.lexsort((-size[chosen], group[chosen]))]
    counts: dict[tuple[str, str, str], int] = {}
    out: list[Change] = []
    if not len(order):
        return out, counts
    keys, starts, lengths = np.unique(group[order], return_index=True, return_counts=True)
    for key, start, length in zip(keys.tolist(), starts.tolist(), lengths.tolist()):
        first = order[start]
        pair = (cols.versions[int(base[first])], cols.versions[int(head[first])])
        counts[(*pair, kinds[int(kind[first])].value)] = length
        for i in order[start : start + min(length, keep)].tolist():
            out.append(
                Change(
                    base=pair[0], head=pair[1], case_name=cols.cases[int(case[i])],
                    stage=cols.stages[int(c["stage"][i])], metric=cols.metrics[int(metric[i])],
                    old=float(old[i]), new=float(new[i]), kind=kinds[int(kind[i])],
                    band=str(band_text[i]), base_run=int(c["base_run"][i]),
                    head_run=int(c["run_id"][i]),
                )
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

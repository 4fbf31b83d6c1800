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


def release_changes(store: Store, versions: Sequence[str], default_band: str = "0") -> list[Change]:
    """Every regression, improvement and not-comparable move between each (case, stage)'s
    consecutive stored versions, with the case's ``[baseline]`` bands when its case.toml
    is still on disk."""
    from pytest_stedge.store.history import case_paths, consecutive_changes

    cols = consecutive_changes(store, DIRECTED, versions)
    if not len(cols):
        return []
    bands = _bands(case_paths(store))
    default = parse_band(default_band)
    c = cols.columns
    out: list[Change] = []
    for i in range(len(cols)):
        old, new = c["old"][i], c["value"][i]
        if old is None or new is None:
            continue
        old, new = float(old), float(new)
        if math.isnan(old) or math.isnan(new):
            continue
        case_name = cols.cases[int(c["case"][i])]
        metric = cols.metrics[int(c["metric"][i])]
        band_text = bands.get(case_name, {}).get(metric, default_band)
        band = default if band_text == default_band else parse_band(band_text)
        if not bool(c["comparable"][i]):
            kind = ChangeKind.NOT_COMPARABLE
        elif abs(new - old) <= band.allowed(old) + 1e-12 * max(1.0, abs(old)):
            continue
        else:
            worse = new > old if METRICS[metric].direction == "lower" else new < old
            kind = ChangeKind.REGRESSED if worse else ChangeKind.IMPROVED
        out.append(
            Change(
                base=cols.versions[int(c["base"][i])],
                head=cols.versions[int(c["version"][i])],
                case_name=case_name,
                stage=cols.stages[int(c["stage"][i])],
                metric=metric,
                old=old,
                new=new,
                kind=kind,
                band=band_text,
                base_run=int(c["base_run"][i]),
                head_run=int(c["run_id"][i]),
            )
        )
    return out


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

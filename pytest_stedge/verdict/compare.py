"""Compare the metrics of two toolchain versions: one change kind per metric.

A pair of results is comparable only when the model sha256 and the options hash
match (DESIGN.md §9); otherwise every change is "not comparable", never a
regression. A metric whose case expectation held in the base and misses in the
head is "newly failing" (the reverse: "fixed"); otherwise a change in the worse
direction beyond the case's band is "regressed", one in the better direction
beyond the band "improved" (two-sided), anything within the band "unchanged".


Bands (how far a metric may move) are :mod:`.bands`; the comparison of two stored runs is
:mod:`.store_diff`.

Metrics without a better direction (``epochs_hw`` / ``epochs_ec``: how the hardware
epochs split between CPU-driven and epoch-controller ones) are listed too, as
"changed" when they moved; they never gate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..errors import StedgeError
from ..result import METRICS, PRECISION_PREFIX
from .bands import band_for, beyond_band, parse_band
from .classify import MET, MISSED, NO_EXPECTATION, classify_arrays, direction_code

if TYPE_CHECKING:
    from ..case.model import Bound
    from .bands import Band


class ChangeKind(str, Enum):
    """The one kind each metric change gets."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    NEWLY_FAILING = "newly failing"
    FIXED = "fixed"
    CHANGED = "changed"  # moved; the metric has no better direction
    NOT_COMPARABLE = "not comparable"
    UNCHANGED = "unchanged"


# Listing order: what a reviewer must read first comes first.
KIND_ORDER = (
    ChangeKind.REGRESSED,
    ChangeKind.NEWLY_FAILING,
    ChangeKind.IMPROVED,
    ChangeKind.FIXED,
    ChangeKind.CHANGED,
    ChangeKind.NOT_COMPARABLE,
    ChangeKind.UNCHANGED,
)
KIND_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}


@dataclass
class MetricChange:
    """One metric of one (case, stage) compared between two versions."""

    case_name: str
    stage: str
    metric: str
    old: float | None
    new: float | None
    delta: float | None
    delta_pct: float | None
    kind: ChangeKind
    band: str
    beyond_band: bool
    unit: str
    direction: str
    note: str = ""  # why not comparable, or which expectation flipped

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form (``kind`` as its string)."""
        data = asdict(self)
        data["kind"] = self.kind.value
        return data


def _usable(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))



def classify(
    metric: str,
    old: float | None,
    new: float | None,
    *,
    band: Band,
    comparable: bool,
    old_ok: bool | None = None,
    new_ok: bool | None = None,
) -> ChangeKind:
    """The one kind of the change of ``metric`` from ``old`` (base) to ``new`` (head), by
    :func:`.classify.classify_arrays` (the rule every page and the gate use).

    :param comparable: model sha256 and options hash are equal in both versions.
    :param old_ok: whether the metric met the case's expectation in the base (None: none).
    :param new_ok: the same in the head.
    :raises StedgeError: for a metric the diff does not list (unknown, or no direction
        and not in :data:`UNDIRECTED`).
    """
    _check_listed(metric)
    kind, _rounded = classify_arrays(
        direction_code(_direction(metric)),
        _value(old),
        _value(new),
        allowed=band.allowed(old) if old is not None and _usable(old) else 0.0,
        comparable=comparable,
        old_ok=_ok_code(old_ok),
        new_ok=_ok_code(new_ok),
    )
    return KIND_ORDER[int(kind)]


def _check_listed(metric: str) -> None:
    if _direction(metric) == "none" and metric not in UNDIRECTED:
        raise StedgeError(
            f"metric {metric!r} is not classified (classified metrics: "
            f"{', '.join(classified_metrics())})"
        )


def _value(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _ok_code(ok: bool | None) -> int:
    return NO_EXPECTATION if ok is None else MET if ok else MISSED


# Listed although neither direction is better: a change in the HW/EC split of the epochs is
# what a reviewer of an N6 upgrade reads first after the totals.
UNDIRECTED = ("epochs_hw", "epochs_ec")


def within_rounding(
    kind: ChangeKind,
    metric: str,
    old: float | None,
    new: float | None,
    base_metrics: Mapping[str, float],
    head_metrics: Mapping[str, float],
) -> ChangeKind:
    """``kind``, or UNCHANGED when a regression/improvement is no larger than the rounding of
    the figures: a report that prints ``1.262 MB`` knows the bytes only to ±524, so a move
    of 300 B between two such reports (``precision:<metric>`` on either side) is no change.
    (:func:`.classify.classify_arrays` applies the same rule; this is its scalar form.)
    """
    if kind not in (ChangeKind.REGRESSED, ChangeKind.IMPROVED) or old is None or new is None:
        return kind
    slack = _slack(metric, base_metrics, head_metrics)
    return ChangeKind.UNCHANGED if slack > 0 and abs(new - old) <= slack else kind


def _slack(metric: str, base: Mapping[str, float], head: Mapping[str, float]) -> float:
    """The rounding of both sides' figure of ``metric`` (0 when both are exact)."""
    return base.get(PRECISION_PREFIX + metric, 0.0) + head.get(PRECISION_PREFIX + metric, 0.0)


def _direction(metric: str) -> str:
    spec = METRICS.get(metric)
    return "none" if spec is None else spec.direction


def classified_metrics() -> list[str]:
    """Metric names a diff lists: those with a better direction, and :data:`UNDIRECTED`."""
    return [n for n, s in METRICS.items() if s.direction != "none" or n in UNDIRECTED]


def compare_results(
    case_name: str,
    stage: str,
    base_metrics: Mapping[str, float],
    head_metrics: Mapping[str, float],
    *,
    comparable: bool,
    bands: Mapping[str, str],
    default_band: str,
    base_ok: Mapping[str, bool] | None = None,
    head_ok: Mapping[str, bool] | None = None,
    note: str = "",
    metric_bands: Mapping[str, str] | None = None,
) -> list[MetricChange]:
    """Classify every listed metric either side has, sorted by metric name.

    :param bands: the case's ``[baseline]`` bands by metric; others use ``metric_bands``
        (None: :data:`NOISY_BANDS`), then ``default_band``.
    :param base_ok: by metric, whether the base met the case's expectation (absent: none).
    :param note: why the pair is not comparable, carried into each change.
    """
    base_ok = base_ok or {}
    head_ok = head_ok or {}
    listed = set(classified_metrics())
    names = [m for m in sorted(set(base_metrics) | set(head_metrics)) if m in listed]
    if not names:
        return []
    band_texts = [band_for(m, bands, default_band, metric_bands) for m in names]
    parsed = [parse_band(text) for text in band_texts]
    olds = [base_metrics.get(m) for m in names]
    news = [head_metrics.get(m) for m in names]
    kinds, rounded = classify_arrays(
        [direction_code(_direction(m)) for m in names],
        [_value(v) for v in olds],
        [_value(v) for v in news],
        allowed=[b.allowed(v) if v is not None and _usable(v) else 0.0 for b, v in zip(parsed, olds)],
        comparable=comparable,
        old_ok=[_ok_code(base_ok.get(m)) for m in names],
        new_ok=[_ok_code(head_ok.get(m)) for m in names],
        slack=[_slack(m, base_metrics, head_metrics) for m in names],
    )
    changes = []
    for i, metric in enumerate(names):
        old, new, band = olds[i], news[i], parsed[i]
        kind = KIND_ORDER[int(kinds[i])]
        delta = delta_pct = None
        outside = False
        if _usable(old) and _usable(new):
            assert old is not None and new is not None
            delta = new - old
            # no percentage of zero, nor of an infinity (snr=inf for identical outputs)
            delta_pct = None if old == 0 or not math.isfinite(delta / old) else delta / abs(old) * 100.0
            outside = beyond_band(old, new, band) and kind is not ChangeKind.UNCHANGED
        why = ""
        if kind is ChangeKind.NOT_COMPARABLE:
            if not comparable:
                why = note or "model or options differ"
            else:
                why = f"not measured in {'base' if not _usable(old) else 'head'}"
        elif kind is ChangeKind.NEWLY_FAILING:
            why = "met its expectation in base, misses it in head"
        elif kind is ChangeKind.FIXED:
            why = "missed its expectation in base, meets it in head"
        elif rounded[i]:
            why = "within the rounding of the figures the reports print"
        spec = METRICS[metric]
        changes.append(
            MetricChange(
                case_name=case_name,
                stage=stage,
                metric=metric,
                old=old,
                new=new,
                delta=delta,
                delta_pct=delta_pct,
                kind=kind,
                band=str(band_texts[i]),
                beyond_band=outside,
                unit=spec.unit,
                direction=spec.direction,
                note=why,
            )
        )
    return changes


@dataclass
class DiffReport:
    """Every metric change between a base and a head version."""

    base: str
    head: str
    changes: list[MetricChange] = field(default_factory=list)
    only_base: list[tuple[str, str]] = field(default_factory=list)  # (case, stage) not in head
    only_head: list[tuple[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Number of changes of each kind (every kind present, zeros included)."""
        out = {kind.value: 0 for kind in KIND_ORDER}
        for change in self.changes:
            out[change.kind.value] += 1
        return out

    def regressed(self) -> bool:
        """Whether anything got worse: a regression beyond its band or a newly failing metric."""
        return any(c.kind in (ChangeKind.REGRESSED, ChangeKind.NEWLY_FAILING) for c in self.changes)

    def ordered(self) -> list[MetricChange]:
        """Changes by kind (regressions first), then case, stage and metric."""
        return sorted(self.changes, key=lambda c: (KIND_RANK[c.kind], c.case_name, c.stage, c.metric))

    def to_json(self) -> dict[str, Any]:
        """The ``stedge diff --json`` document."""
        return {
            "base": self.base,
            "head": self.head,
            "regressed": self.regressed(),
            "counts": self.counts(),
            "changes": [c.to_json() for c in self.ordered()],
            "only_base": [{"case_name": c, "stage": s} for c, s in self.only_base],
            "only_head": [{"case_name": c, "stage": s} for c, s in self.only_head],
        }


def expectation_flags(bounds: Sequence[Bound], metrics: Mapping[str, float]) -> dict[str, bool]:
    """By metric with an expectation: whether every bound on it held."""
    from .expect import check

    flags: dict[str, bool] = {}
    missed = {m.metric for m in check(bounds, metrics)}
    for bound in bounds:
        if bound.metric in metrics:
            flags[bound.metric] = bound.metric not in missed
    return flags



def changes_for(report: DiffReport, kinds: Iterable[ChangeKind]) -> list[MetricChange]:
    """The changes of the given kinds, in listing order."""
    wanted = set(kinds)
    return [c for c in report.ordered() if c.kind in wanted]

"""Compare the metrics of two toolchain versions: one change kind per metric.

A pair of results is comparable only when the model sha256 and the options hash
match (DESIGN.md §9); otherwise every change is "not comparable", never a
regression. A metric whose case expectation held in the base and misses in the
head is "newly failing" (the reverse: "fixed"); otherwise a change in the worse
direction beyond the case's band is "regressed", one in the better direction
beyond the band "improved" (two-sided), anything within the band "unchanged".

Bands follow pytest-benchmark's compare-fail syntax without the field name:
``"+3%"`` (relative), ``"+1024"`` (absolute, in the metric's unit), ``"0"``
(exact: any worsening counts). A metric's band is, first found: the case's
``[baseline]`` entry, the user's per-metric default (ini ``stedge_metric_bands``),
:data:`NOISY_BANDS` for the validation metrics, else the session's default band.

Metrics without a better direction (``epochs_hw`` / ``epochs_ec``: how the hardware
epochs split between CPU-driven and epoch-controller ones) are listed too, as
"changed" when they moved; they never gate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from .errors import StedgeError
from .result import METRICS, PRECISION_PREFIX

if TYPE_CHECKING:
    from .corpus import Bound, Case
    from .store.database import Store


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
_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}

BAND_HELP = "a band such as '+3%' (relative), '+1024' (absolute) or '0' (exact)"
_BAND_RE = re.compile(r"^\s*[+±]?\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*(%?)\s*$")
# Float noise (e.g. a cos printed with more digits by another version) is not a change.
_EPSILON = 1e-12

# Default bands of the metrics that move a little between versions on the tool's fixed
# stimulus (seed 42): real MobileNetV2-224 int8 on the N6, 2.2.0 -> 4.0.1 (real-cases
# n6-mobilenetv2-224-onnx-irv) moved cos 0.997552 -> 0.997453 (-0.0001), nse 0.994966 ->
# 0.994808 (-0.00016), rmse +1.5 %, l2r +1.7 %, mae -0.2 %. Each band is ~10x that move, so
# an accuracy collapse (cos 0.091 on a 4.0.1 TCN) stands out and rounding does not.
# Byte, MACC and epoch counts have none: any change counts.
NOISY_BANDS: dict[str, str] = {
    "val_cos": "+0.001",  # cosine is in (0, 1]: an absolute band
    "val_nse": "+0.002",  # <= 1, scale-free
    "val_snr": "+1",  # dB; 1 dB is a 12 % move of the error's RMS
    "val_l2r": "+15%",
    "val_rmse": "+15%",  # in the output's unit: relative
    "val_mae": "+15%",
    "val_acc": "+10",  # percentage points: one sample of the tool's default 10
    "duration_ms": "+5%",  # one board repeats within 0.1 %; printed to 1 us
}


class BandError(StedgeError):
    """A baseline band string is malformed."""


@dataclass(frozen=True)
class Band:
    """How far a metric may move from its baseline before the change counts.

    :param value: the allowed magnitude, percent when ``relative``.
    :param relative: a percentage of the baseline value, else an absolute amount.
    """

    value: float
    relative: bool
    text: str = ""

    def allowed(self, old: float) -> float:
        """The absolute amount a change from ``old`` may reach without counting."""
        if self.relative:
            return abs(old) * self.value / 100.0
        return self.value

    def __str__(self) -> str:
        return self.text or (f"+{self.value:g}%" if self.relative else f"+{self.value:g}")


def parse_band(text: str | float) -> Band:
    """Parse ``"+3%"``, ``"5%"``, ``"+1024"`` or ``"0"`` into a :class:`Band`.

    :raises BandError: naming the value and what is accepted.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise BandError(f"band {text!r}: expected {BAND_HELP}")
    match = _BAND_RE.match(text)
    if not match:
        hint = (
            " (a band is a magnitude: both directions are checked)"
            if text.strip().startswith("-")
            else ""
        )
        raise BandError(f"band {text!r}: expected {BAND_HELP}{hint}")
    number = text.strip().lstrip("+±").strip().rstrip("%").strip()
    value = float(number)
    if not math.isfinite(value):
        raise BandError(f"band {text!r}: expected {BAND_HELP}")
    return Band(value=value, relative=bool(match.group(2)), text=text.strip())


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


def beyond_band(old: float, new: float, band: Band) -> bool:
    """Whether ``new`` moved from ``old`` by more than ``band`` allows (either direction)."""
    if not (math.isfinite(old) and math.isfinite(new)):
        # snr=inf (identical outputs) to a finite figure is a move whatever the band
        return old != new
    allowed = band.allowed(old)
    return abs(new - old) > allowed + _EPSILON * max(1.0, abs(old))


def band_for(
    metric: str,
    bands: Mapping[str, str],
    default_band: str,
    metric_bands: Mapping[str, str] | None = None,
) -> str:
    """The band text of ``metric``: the case's, else the per-metric default (``metric_bands``,
    :data:`NOISY_BANDS` when None), else ``default_band``."""
    if metric in bands:
        return bands[metric]
    defaults = NOISY_BANDS if metric_bands is None else metric_bands
    return defaults.get(metric, default_band)


def parse_metric_bands(lines: Iterable[str]) -> dict[str, str]:
    """``["val_cos=+0.005", ...]`` (ini ``stedge_metric_bands``) over :data:`NOISY_BANDS`.

    :raises BandError: naming the entry and what is accepted.
    """
    out = dict(NOISY_BANDS)
    for raw in lines:
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        metric, sep, band = entry.partition("=")
        metric, band = metric.strip(), band.strip()
        if not sep or metric not in METRICS:
            raise BandError(
                f"metric band {entry!r}: expected METRIC=BAND with METRIC one of "
                f"{', '.join(sorted(METRICS))}"
            )
        parse_band(band)
        out[metric] = band
    return out


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
    """The one kind of the change of ``metric`` from ``old`` (base) to ``new`` (head).

    :param comparable: model sha256 and options hash are equal in both versions.
    :param old_ok: whether the metric met the case's expectation in the base (None: none).
    :param new_ok: the same in the head.
    :raises StedgeError: for a metric the diff does not list (unknown, or no direction
        and not in :data:`UNDIRECTED`).
    """
    direction = _direction(metric)
    if direction == "none" and metric not in UNDIRECTED:
        raise StedgeError(
            f"metric {metric!r} is not classified (classified metrics: "
            f"{', '.join(classified_metrics())})"
        )
    if not comparable or not _usable(old) or not _usable(new):
        return ChangeKind.NOT_COMPARABLE
    assert old is not None and new is not None
    if direction == "none":
        return ChangeKind.CHANGED if beyond_band(old, new, band) else ChangeKind.UNCHANGED
    if old_ok is True and new_ok is False:
        return ChangeKind.NEWLY_FAILING
    if old_ok is False and new_ok is True:
        return ChangeKind.FIXED
    if not beyond_band(old, new, band):
        return ChangeKind.UNCHANGED
    worse = new > old if direction == "lower" else new < old
    return ChangeKind.REGRESSED if worse else ChangeKind.IMPROVED


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
    """
    if kind not in (ChangeKind.REGRESSED, ChangeKind.IMPROVED) or old is None or new is None:
        return kind
    slack = base_metrics.get(PRECISION_PREFIX + metric, 0.0) + head_metrics.get(
        PRECISION_PREFIX + metric, 0.0
    )
    return ChangeKind.UNCHANGED if slack > 0 and abs(new - old) <= slack else kind


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
    changes = []
    listed = set(classified_metrics())
    for metric in sorted(set(base_metrics) | set(head_metrics)):
        if metric not in listed:
            continue
        band_text = band_for(metric, bands, default_band, metric_bands)
        band = parse_band(band_text)
        old = base_metrics.get(metric)
        new = head_metrics.get(metric)
        raw = classify(
            metric,
            old,
            new,
            band=band,
            comparable=comparable,
            old_ok=base_ok.get(metric),
            new_ok=head_ok.get(metric),
        )
        kind = within_rounding(raw, metric, old, new, base_metrics, head_metrics)
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
        elif kind is not raw:
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
                band=str(band_text),
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
        return sorted(self.changes, key=lambda c: (_RANK[c.kind], c.case_name, c.stage, c.metric))

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


def _check_groups(store: Store, names: Sequence[str]) -> None:
    """Refuse a group that is not stored, or lacks a shard (its cases would be missing)."""
    from .errors import StoreError

    found = {g["run_group"]: g for g in store.run_groups(names)}
    for name in names:
        group = found.get(name)
        if group is None:
            known = [g["run_group"] for g in store.run_groups()][:10]
            raise StoreError(f"no run group {name} in {store.path}; stored groups: "
                             f"{', '.join(known) or 'none'}")
        if group["missing"]:
            total = group["missing"][0].split("/")[1]
            raise StoreError(
                f"run group {name} is incomplete: it holds shard {', '.join(group['shards'])} "
                f"of {total}; missing {', '.join(group['missing'])} (a shard's job failed "
                "or has not finished)"
            )


def diff_store(
    store: Store,
    base: str,
    head: str,
    *,
    bands_by_case: Mapping[str, Mapping[str, str]] | None = None,
    default_band: str = "0",
    cases: Mapping[str, Case] | None = None,
    run_groups: Sequence[str] | None = None,
    metric_bands: Mapping[str, str] | None = None,
) -> DiffReport:
    """Compare the newest stored results of ``base`` and ``head``, case by case.

    :param run_groups: only the runs of these run groups (each the shards of one CI
        pipeline, read as one run); a group that lacks a shard is refused.
    :param metric_bands: per-metric default bands (None: :data:`NOISY_BANDS`).
    :param bands_by_case: ``[baseline]`` bands by case name (else taken from ``cases``).
    :param cases: corpus cases by name; their ``[expect]`` bounds decide newly failing / fixed.
    :raises StedgeError: when either version has no stored results (listing those stored).
    """
    from .errors import StoreError

    if run_groups:
        _check_groups(store, run_groups)
    stored = store.versions()
    missing = [v for v in (base, head) if v not in stored]
    if missing:
        raise StoreError(
            f"no stored results for version {', '.join(missing)} in {store.path}; "
            f"versions with results: {', '.join(stored) or 'none'}"
        )
    parse_band(default_band)  # fail early, naming the value
    items: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in store.metric_rows(versions=[base, head], run_groups=run_groups):
        key = (row["case_name"], row["stage"], row["version"])
        item = items.setdefault(
            key,
            {
                "model_sha256": row["model_sha256"],
                "options_hash": row["options_hash"],
                "metrics": {},
            },
        )
        if row["metric"] is not None and row["value"] is not None:
            item["metrics"][row["metric"]] = float(row["value"])
    pairs = sorted({(c, s) for c, s, _ in items})
    report = DiffReport(base=base, head=head)
    for case_name, stage in pairs:
        old = items.get((case_name, stage, base))
        new = items.get((case_name, stage, head))
        if old is None:
            report.only_head.append((case_name, stage))
            continue
        if new is None:
            report.only_base.append((case_name, stage))
            continue
        comparable, note = _comparable(old, new)
        case = (cases or {}).get(case_name)
        bands: Mapping[str, str] = {}
        if bands_by_case and case_name in bands_by_case:
            bands = bands_by_case[case_name]
        elif case is not None:
            bands = case.baseline
        base_ok = head_ok = None
        if case is not None:
            bounds = case.bounds_for(stage)
            base_ok = expectation_flags(bounds, old["metrics"])
            head_ok = expectation_flags(bounds, new["metrics"])
        report.changes += compare_results(
            case_name,
            stage,
            old["metrics"],
            new["metrics"],
            comparable=comparable,
            bands=bands,
            default_band=default_band,
            base_ok=base_ok,
            head_ok=head_ok,
            note=note,
            metric_bands=metric_bands,
        )
    return report


def _comparable(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[bool, str]:
    """Same model and options on both sides; an unknown identity is not assumed equal."""
    reasons = []
    for key, label in (("model_sha256", "model sha256"), ("options_hash", "options hash")):
        a, b = old.get(key), new.get(key)
        if not a or not b:
            reasons.append(f"{label} unknown")
        elif a != b:
            reasons.append(f"{label} differs")
    return (not reasons, ", ".join(reasons))


def changes_for(report: DiffReport, kinds: Iterable[ChangeKind]) -> list[MetricChange]:
    """The changes of the given kinds, in listing order."""
    wanted = set(kinds)
    return [c for c in report.ordered() if c.kind in wanted]

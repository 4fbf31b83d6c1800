"""Page context of the diff between two toolchain versions (diff.html.j2)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from markupsafe import Markup

from . import charts
from .charts import EPOCH_KINDS, Series
from .data import CHART_ROWS, _h, chart_values, chunks, epochs_chart, slug
from .placement_views import DiffPlacement, diff_placement

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

    from ..verdict.compare import DiffReport, MetricChange


@dataclass
class DiffRow:
    """One metric of one (case, stage) in the diff."""

    metric: str = field(metadata=_h("flat metric name"))
    unit: str = field(default="", metadata=_h("unit (B, epochs, dB ...)"))
    old: float | None = field(default=None, metadata=_h("value in the base version"))
    new: float | None = field(default=None, metadata=_h("value in the head version"))
    delta: float | None = field(default=None, metadata=_h("new - old, in the metric's unit"))
    delta_pct: float | None = field(default=None, metadata=_h("delta as a percentage of old"))
    kind: str = field(default="", metadata=_h("regressed, improved, newly failing, fixed, changed (no better direction), not comparable or unchanged"))
    band: str = field(default="", metadata=_h("the band the change was judged against"))
    beyond_band: bool = field(default=False, metadata=_h("the change exceeds the band"))
    note: str = field(default="", metadata=_h("why not comparable, or which expectation flipped"))


@dataclass
class DiffTable:
    """The changes of one case and stage."""

    case_name: str = field(metadata=_h("case name (untrusted text)"))
    stage: str = field(metadata=_h("stage compared"))
    anchor: str = field(metadata=_h("HTML id of the table"))
    worst: str = field(metadata=_h("the most severe change kind in the table"))
    counts: list[tuple[str, int]] = field(default_factory=list, metadata=_h("changes by kind (non-zero only)"))
    rows: list[DiffRow] = field(default_factory=list, metadata=_h("one row per metric"))


@dataclass
class DiffPage:
    """Context of diff.html.j2: every metric change from base to head."""

    base: str = field(metadata=_h("base toolchain version"))
    head: str = field(metadata=_h("head toolchain version"))
    regressed: bool = field(default=False, metadata=_h("anything regressed or newly fails"))
    counts: list[tuple[str, int]] = field(default_factory=list, metadata=_h("changes by kind, every kind listed"))
    tables: list[DiffTable] = field(default_factory=list, metadata=_h("a table per case and stage, most severe first"))
    only_base: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(case, stage) stored only for base"))
    only_head: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(case, stage) stored only for head"))
    base_runs: list[int] = field(default_factory=list, metadata=_h("runs holding base results, newest first"))
    head_runs: list[int] = field(default_factory=list, metadata=_h("runs holding head results, newest first"))
    charts: list[Markup] = field(default_factory=list, metadata=_h("memory and epoch charts of both versions"))
    placement: DiffPlacement | None = field(default=None, metadata=_h("software and hybrid (??) epochs of both versions, and the operators moved between the NPU and the Cortex-M55"))


def build_diff_page(report: DiffReport, store: Store) -> DiffPage:
    """Group a :class:`~pytest_stedge.verdict.compare.DiffReport` into tables and draw its charts."""
    from pytest_stedge.store.queries import version_runs

    from ..verdict.compare import KIND_ORDER

    rank = {k.value: i for i, k in enumerate(KIND_ORDER)}
    groups: dict[tuple[str, str], list[MetricChange]] = {}
    for change in report.changes:
        groups.setdefault((change.case_name, change.stage), []).append(change)
    tables = []
    for (case_name, stage), changes in groups.items():
        rows = [_diff_row(c) for c in sorted(changes, key=lambda c: (rank[_kind(c)], c.metric))]
        kinds = Counter(r.kind for r in rows)
        tables.append(
            DiffTable(
                case_name=case_name,
                stage=stage,
                anchor=slug(f"{case_name}\0{stage}", "d-"),
                worst=rows[0].kind,
                counts=sorted(kinds.items(), key=lambda kv: rank[kv[0]]),
                rows=rows,
            )
        )
    tables.sort(key=lambda t: (rank[t.worst], t.case_name, t.stage))
    runs = version_runs(store, [report.base, report.head])
    return DiffPage(
        base=report.base,
        head=report.head,
        regressed=report.regressed(),
        counts=list(report.counts().items()),
        tables=tables,
        only_base=list(report.only_base),
        only_head=list(report.only_head),
        base_runs=runs.get(report.base, []),
        head_runs=runs.get(report.head, []),
        charts=_diff_charts(store, report.base, report.head),
        placement=diff_placement(store, report.base, report.head, groups,
                                 {(t.case_name, t.stage): t.anchor for t in tables}),
    )


def _kind(change: MetricChange) -> str:
    return str(getattr(change.kind, "value", change.kind))


def _diff_row(change: MetricChange) -> DiffRow:
    return DiffRow(
        metric=change.metric,
        unit=change.unit,
        old=change.old,
        new=change.new,
        delta=change.delta,
        delta_pct=change.delta_pct,
        kind=_kind(change),
        band=str(change.band),
        beyond_band=bool(change.beyond_band),
        note=str(getattr(change, "note", "") or ""),
    )


def _diff_charts(store: Store, base: str, head: str) -> list[Markup]:
    values = chart_values(store, [base, head])
    names = sorted(values)
    out: list[Markup] = []
    for metric, label in (("activations_bytes", "Activation RAM"), ("weights_bytes", "Weights")):
        shown = [n for n in names if any(metric in values[n].get(v, {}) for v in (base, head))]
        for part in chunks(shown):
            if not part:
                continue
            out.append(
                charts.bar_chart(
                    f"{label} per case: {base} and {head}",
                    part,
                    [
                        Series(base, [values[n].get(base, {}).get(metric) for n in part], "base"),
                        Series(head, [values[n].get(head, {}).get(metric) for n in part], "head"),
                    ],
                    unit="B",
                    quantity="activation RAM" if metric == "activations_bytes" else "weights",
                )
            )
    rows = [
        (n, v)
        for n in names
        for v in (base, head)
        if any(f"epochs_{k}" in values[n].get(v, {}) for k in EPOCH_KINDS)
    ]
    for part in chunks(rows, CHART_ROWS * 2):
        if part:
            out.append(
                epochs_chart(
                    f"Epochs by kind per case: {base} and {head}",
                    part,
                    [{k: values[n][v].get(f"epochs_{k}") for k in EPOCH_KINDS} for n, v in part],
                )
            )
    return out

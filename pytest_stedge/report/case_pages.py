"""The dashboard's case pages: one case across toolchain versions, written one at a time.

A store of thousands of cases makes thousands of these pages, so the per-row work is
plain string building from the case's arrays (:class:`~pytest_stedge.report.history.CaseHistory`):
the table body is built here with every untrusted value escaped (``markupsafe.escape``,
as Jinja's autoescape does), the charts by :mod:`pytest_stedge.report.charts` (whose
axes over the same versions are built once), and ``case.html.j2`` lays out the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from . import charts
from .charts import EPOCH_KINDS, HYBRID_NOTE, Series
from .data import _h, epochs_chart, slug
from .placement_views import EpochKinds

if TYPE_CHECKING:
    from .history import CaseHistory

# the table's figures after version, stage, run and outcome: (metric, how it is shown)
TABLE = (
    ("activations_bytes", "B"),
    ("activations_lower_bound_bytes", "B"),
    ("activations_ratio", "ratio"),
    ("weights_bytes", "B"),
    *((f"epochs_{k}", "") for k in EPOCH_KINDS),
)
RELATIVE = (  # figures of unlike units, charted relative to the case's first version
    ("activations_ratio", "activations / lower bound", "ratio"),
    ("macc", "MACC", "head"),
    ("val_cos", "cos", "improved"),
    ("duration_ms", "time per inference", "board"),
)


@dataclass
class CasePage:
    """Context of case.html.j2: one case across toolchain versions."""

    name: str = field(metadata=_h("case name (untrusted text)"))
    page: str = field(metadata=_h("file name under cases/"))
    table: Markup = field(default_factory=Markup, metadata=_h("rows of the values table, one per (version, stage), in release order then by stage; every cell escaped"))
    charts: list[Markup] = field(default_factory=list, metadata=_h("history charts (memory, ratio, epochs)"))
    findings: list[tuple[str, str, str]] = field(default_factory=list, metadata=_h("(bug id, bug page, status) seen on it"))
    sources: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(title, https URL) of its public sources: the model, each recorded run's files"))
    hybrid_note: str = field(default=HYBRID_NOTE, metadata=_h("what the tool's '??' (hybrid epochs) means"))
    epochs: list[EpochKinds] = field(default_factory=list, metadata=_h("per (version, stage) with software or hybrid epochs: which operators, which hybrid epochs"))


def case_page(
    history: CaseHistory, file: str, findings: Sequence[tuple[str, str, str]],
    sources: Sequence[tuple[str, str]] = (), epochs: Sequence[EpochKinds] = (),
) -> CasePage:
    """The context of one case's page."""
    return CasePage(
        name=history.name, page=file, table=table_rows(history), charts=case_charts(history),
        findings=list(findings), sources=list(sources), epochs=list(epochs),
    )


def write_case(
    out: Path, history: CaseHistory, file: str, bugs_seen: Mapping[str, str],
    bug_pages: Mapping[str, str], sources: Sequence[tuple[str, str]] = (),
    epochs: Sequence[EpochKinds] = (),
) -> None:
    """cases/<file>: the case's charts and values table, with the known bugs its
    reproducer findings saw (``bugs_seen``: bug id -> status), its public sources and its
    software and hybrid epochs (``epochs``)."""
    from .render import render

    findings = [
        (bug_id, f"../bugs/{bug_pages[bug_id]}", status)
        for bug_id, status in sorted(bugs_seen.items())
        if bug_id in bug_pages
    ]
    page = case_page(history, file, findings, sources, epochs)
    render("case.html.j2", out / "cases" / file, page=page, title=history.name, root="../")


def row_anchor(version: str, stage: str) -> str:
    """The HTML id of a (version, stage) row of the values table (the atlas links it)."""
    return slug(f"{version}\0{stage}", "v-")


def table_rows(history: CaseHistory) -> Markup:
    """The values table's rows: version, stage, run, outcome, then :data:`TABLE`."""
    versions = [_text(v) for v in history.versions]
    columns = [_formatted(history.values[metric].tolist(), how) for metric, how in TABLE]
    figures = ['<td class="n">' + '</td><td class="n">'.join(cells) + "</td>" for cells in zip(*columns)]
    out = []
    for version, stage, run_id, outcome, recorded, cells in zip(
        history.version.tolist(), history.stage, history.run_id.tolist(), history.outcome,
        history.recorded.tolist(), figures,
    ):
        status = _text(outcome)
        anchor = row_anchor(history.versions[version], stage)
        out.append(
            f'<tr id="{anchor}"><td>{versions[version]}</td><td>{_text(stage)}</td><td class="n">{run_id}</td>'
            f'<td class="o-{status}">{status}{" (recorded)" if recorded else ""}</td>{cells}</tr>\n'
        )
    return Markup("".join(out))


def _formatted(values: list[float], how: str) -> list[str]:
    """One column's cells (numbers only: nothing to escape); NaN is not known."""
    isnan = math.isnan
    if how == "ratio":
        return ["—" if isnan(v) else f"{v:.3f}×" for v in values]
    if how:
        return ["—" if isnan(v) else f"{_number(v)} {how}" for v in values]
    return ["—" if isnan(v) else _number(v) for v in values]


def _number(value: float) -> str:
    """:func:`pytest_stedge.report.render.fmt_num` of a known float (inlined for speed)."""
    return f"{int(value):,}" if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


@lru_cache(maxsize=4096)
def _text(value: str) -> str:
    """Escaped text, cached: versions, stages and outcomes recur on every page."""
    return str(escape(value))


def case_charts(history: CaseHistory) -> list[Markup]:
    """Activations with the oracle's bound, weights, the other figures relative to the
    first version, and epochs by kind, over the versions where the case has figures."""
    index, values = history.by_version()
    if not index:
        return []
    shown = [history.versions[i] for i in index]

    def has(metric: str) -> bool:
        return any(v is not None for v in values[metric])

    out: list[Markup] = []
    if has("activations_bytes") or has("activations_lower_bound_bytes"):
        out.append(charts.line_chart(
            "Activation RAM across versions", shown,
            [Series("reported activations", values["activations_bytes"], "activations"),
             Series("oracle lower bound", values["activations_lower_bound_bytes"], "lower_bound", True)],
            unit="B", quantity="activation memory",
        ))
    if has("weights_bytes"):
        out.append(charts.line_chart(
            "Weights across versions", shown, [Series("weights", values["weights_bytes"], "weights")],
            unit="B", quantity="weights",
        ))
    # figures of unlike units on one chart, each divided by its value in the case's first
    # version that has it: a per-case normalisation, so no metric dwarfs the others
    relative = []
    for metric, label, color in RELATIVE:
        raw = values[metric]
        first = next((x for x in raw if x), None)
        if first:
            relative.append(Series(label, [None if x is None else x / first for x in raw], color))
    if relative:
        out.append(charts.line_chart(
            "Other figures across versions, relative to the first version", shown, relative,
            unit="x", quantity="value / first version's value", zero_based=False,
        ))
    epochs = {k: values[f"epochs_{k}"] for k in EPOCH_KINDS}
    with_epochs = [i for i in range(len(shown)) if any(epochs[k][i] is not None for k in EPOCH_KINDS)]
    if with_epochs:
        out.append(epochs_chart(
            "Epochs by kind across versions",
            [(history.name, shown[i]) for i in with_epochs],
            [{k: epochs[k][i] for k in EPOCH_KINDS} for i in with_epochs],
        ))
    return out

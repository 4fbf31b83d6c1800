"""The known-bug dashboard: a static site of plain HTML files with relative links.

Layout under the output folder (publishable as-is, e.g. on GitHub Pages)::

    index.html          overview: runs, bugs, cases
    matrix.html         bugs (rows) x toolchain versions (columns)
    changes.html        every regression and improvement between consecutive versions
    bugs/<slug>.html    one page per bug: registry entry, reproducers' figures, history
    cases/<slug>.html   one page per case: its metrics across versions, as charts

Pages are written one at a time as their data is read (case pages straight from the
store's columns), so the site's memory does not grow with the number of cases.

File names are slugs with a hash suffix, never the untrusted names themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from pytest_stedge.result import METRICS

from . import charts
from .charts import EPOCH_KINDS, HYBRID_NOTE, Series
from .data import FindingView, _finding_view, _h, epochs_chart, slug, sorted_versions
from .findings import STATUS_TEXT, by_bug_and_version, version_status
from .history import Change, case_values, release_changes

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

STATUSES = ("reproduced", "not-reproduced", "unknown", "not-run")
CHANGES_SHOWN = 100  # per kind and version pair; `stedge diff A B` lists every one
FIGURES = (  # a reproducer's figures on its bug page: (metric, column heading, unit)
    ("activations_bytes", "activations", "B"),
    ("weights_bytes", "weights", "B"),
    ("macc", "MACC", ""),
    ("epochs_total", "epochs", ""),
    ("epochs_sw", "SW", ""),
    ("epochs_hybrid", "hybrid (??)", ""),
    ("val_cos", "cos", ""),
    ("duration_ms", "ms", ""),
)


@dataclass
class BugInfo:
    """A known bug as the registry describes it (or only its id, from stored findings)."""

    id: str = field(metadata=_h("bug id (untrusted text)"))
    page: str = field(metadata=_h("file name of the bug's page under bugs/"))
    title: str = field(default="", metadata=_h("one-line title"))
    source: str = field(default="", metadata=_h("where the bug was reported (URL or text)"))
    source_href: str = field(default="", metadata=_h("the source when it is an http(s) URL, else empty"))
    links: list[tuple[str, str]] = field(default_factory=list, metadata=_h("public sources: (title, http(s) URL)"))
    kind: str = field(default="bug", metadata=_h("bug (reported by users) or finding (seen in recorded runs)"))
    notes: str = field(default="", metadata=_h("the registry's notes"))
    signature: str = field(default="", metadata=_h("the signature expression over metrics"))
    affected: str = field(default="", metadata=_h("affected versions (PEP 440 specifier)"))
    fixed_in: str = field(default="", metadata=_h("version that fixed it, empty when not fixed"))
    status: str = field(default="", metadata=_h("registry status (open, fixed ...)"))
    reproducers: list[str] = field(default_factory=list, metadata=_h("cases that reproduce it"))
    in_registry: bool = field(default=True, metadata=_h("the bug has a file in corpus/bugs"))


@dataclass
class Cell:
    """One bug x version cell of the matrix."""

    status: str = field(metadata=_h("reproduced, not-reproduced, unknown or not-run"))
    text: str = field(metadata=_h("the status as people read it"))
    href: str = field(default="", metadata=_h("link to the evidence on the bug page, empty when not run"))
    title: str = field(default="", metadata=_h("tooltip: run, case and metric values that decided the status"))


@dataclass
class MatrixRow:
    """A bug and its cells, one per version."""

    bug: BugInfo = field(metadata=_h("the bug"))
    cells: list[Cell] = field(default_factory=list, metadata=_h("one cell per version, in release order"))


@dataclass
class Evidence:
    """A finding on a bug page, with links to its case."""

    finding: FindingView = field(metadata=_h("the stored finding"))
    anchor: str = field(default="", metadata=_h("HTML id (the matrix links here)"))
    started_at: str = field(default="", metadata=_h("when its run started"))
    case_href: str = field(default="", metadata=_h("link to the case page, empty when the case has none"))


@dataclass
class BugPage:
    """Context of bug.html.j2."""

    bug: BugInfo = field(metadata=_h("the bug"))
    row: MatrixRow = field(metadata=_h("its matrix row (status by version)"))
    versions: list[str] = field(default_factory=list, metadata=_h("toolchain versions, release order"))
    reproducers: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(case, link or empty)"))
    history: list[Evidence] = field(default_factory=list, metadata=_h("findings, by version then newest run first"))
    figures: list[tuple[str, str, str, list[str]]] = field(default_factory=list, metadata=_h("(case, link, version, formatted figures) of each reproducer per version"))
    figure_heads: list[str] = field(default_factory=list, metadata=_h("column headings of the figures"))


@dataclass
class CaseRow:
    """One (version, stage) of a case: the newest stored item."""

    version: str = field(metadata=_h("toolchain version"))
    stage: str = field(metadata=_h("stage"))
    run_id: int = field(default=0, metadata=_h("run of the newest item"))
    outcome: str = field(default="", metadata=_h("its outcome"))
    recorded: bool = field(default=False, metadata=_h("replayed from a recorded run"))
    values: dict[str, float | None] = field(default_factory=dict, metadata=_h("charted metrics by name"))


@dataclass
class CasePage:
    """Context of case.html.j2: one case across toolchain versions."""

    name: str = field(metadata=_h("case name (untrusted text)"))
    page: str = field(metadata=_h("file name under cases/"))
    rows: list[CaseRow] = field(default_factory=list, metadata=_h("newest item per version and stage"))
    charts: list[Markup] = field(default_factory=list, metadata=_h("history charts (memory, ratio, epochs)"))
    findings: list[tuple[str, str, str]] = field(default_factory=list, metadata=_h("(bug id, bug page, status) seen on it"))
    hybrid_note: str = field(default=HYBRID_NOTE, metadata=_h("what the tool's '??' (hybrid epochs) means"))


@dataclass
class IndexPage:
    """Context of index.html.j2."""

    runs: list[dict[str, Any]] = field(default_factory=list, metadata=_h("newest runs (id, started, status, versions, counts)"))
    run_count: int = field(default=0, metadata=_h("runs stored"))
    versions: list[str] = field(default_factory=list, metadata=_h("toolchain versions with results"))
    bugs: list[MatrixRow] = field(default_factory=list, metadata=_h("bugs with their status per version"))
    cases: list[tuple[str, str, str, str]] = field(default_factory=list, metadata=_h("(case, page, latest version, outcome)"))
    changes: list[tuple[str, str, int, int, int]] = field(default_factory=list, metadata=_h("(base, head, regressions, improvements, not comparable) per version pair"))


@dataclass
class ChangeRow:
    """One regression or improvement on the changes page."""

    case_name: str = field(metadata=_h("case name (untrusted text)"))
    case_href: str = field(metadata=_h("link to the case page"))
    stage: str = field(metadata=_h("stage"))
    metric: str = field(metadata=_h("metric"))
    old: str = field(metadata=_h("base value, formatted with its unit"))
    new: str = field(metadata=_h("head value, formatted with its unit"))
    delta: str = field(metadata=_h("signed change with its unit and percent"))
    band: str = field(metadata=_h("the band it moved beyond"))
    runs: str = field(metadata=_h("base and head run ids"))


@dataclass
class ChangeGroup:
    """The changes of one kind between two versions."""

    base: str = field(metadata=_h("older version"))
    head: str = field(metadata=_h("newer version"))
    kind: str = field(metadata=_h("regressed, improved or not comparable"))
    anchor: str = field(metadata=_h("HTML id"))
    rows: list[ChangeRow] = field(default_factory=list, metadata=_h("largest first"))
    more: int = field(default=0, metadata=_h("changes not listed (past the page's limit)"))


def write_site(store: Store, out: Path, *, bugs_dir: Path | None) -> Path:
    """Render every page of the dashboard under ``out``; return index.html."""
    from pytest_stedge.store.queries import latest_items

    from .render import render

    out.mkdir(parents=True, exist_ok=True)
    items = latest_items(store)
    stored = store.findings()
    started = {int(r["run_id"]): _when(r.get("started_at")) for r in stored}
    findings = [_finding_view(r) for r in stored]
    del stored
    versions = sorted_versions([str(i["version"]) for i in items] + [f.version for f in findings if f.version])
    order = {v: k for k, v in enumerate(versions)}
    by_case: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_case.setdefault(str(item["case_name"]), []).append(item)
    del items
    case_pages = {name: f"{slug(name)}.html" for name in sorted(by_case)}
    bugs = _bugs(bugs_dir, findings)
    pages = {b.id: b.page for b in bugs}
    grouped = by_bug_and_version(findings)
    rows = [MatrixRow(bug=b, cells=_cells(b, grouped, versions)) for b in bugs]
    reproducing = {c for b in bugs for c in b.reproducers}
    seen: dict[str, dict[str, str]] = {}  # case -> bug -> status, from reproducers only
    reproducers = {b.id: set(b.reproducers) for b in bugs}
    for f in findings:
        if f.reproducer or f.case_name in reproducers.get(f.bug_id, ()):
            current = seen.setdefault(f.case_name, {})
            if current.get(f.bug_id) != "reproduced":
                current[f.bug_id] = f.status

    # case pages, one at a time from the store's columns
    figures: dict[str, dict[str, dict[str, float]]] = {}
    written: set[str] = set()
    for name, values in case_values(store, versions):
        if name not in case_pages:
            continue
        written.add(name)
        if name in reproducing:
            figures[name] = values
        _write_case(render, out, name, case_pages[name], by_case[name], values, versions, seen, pages)
    for name in case_pages.keys() - written:
        _write_case(render, out, name, case_pages[name], by_case[name], {}, versions, seen, pages)

    by_bug: dict[str, list[FindingView]] = {}
    for f in findings:
        by_bug.setdefault(f.bug_id, []).append(f)
    for row in rows:
        _write_bug(render, out, row, by_bug.get(row.bug.id, []), versions, order, started, case_pages, figures)

    changes, counts = release_changes(store, versions, keep=CHANGES_SHOWN)
    pairs = _write_changes(render, out, changes, counts, case_pages, order)
    render(
        "matrix.html.j2", out / "matrix.html", rows=rows, versions=versions,
        title="Known bugs by version", root="", statuses=STATUSES, status_text=STATUS_TEXT,
    )
    latest: dict[str, tuple[str, str]] = {}
    for name, case_items in by_case.items():
        for item in case_items:
            version = str(item["version"])
            if name not in latest or order[version] >= order[latest[name][0]]:
                latest[name] = (version, str(item["outcome"]))
    index = IndexPage(
        runs=store.list_runs(limit=20),
        run_count=len(store.list_runs()),
        versions=versions,
        bugs=rows,
        cases=[(n, f, *latest.get(n, ("", ""))) for n, f in case_pages.items()],
        changes=pairs,
    )
    return render("index.html.j2", out / "index.html", page=index, title="Dashboard", root="")


def _write_case(
    render: Any, out: Path, name: str, file: str, items: Sequence[Mapping[str, Any]],
    values: Mapping[str, Mapping[str, float]], versions: Sequence[str],
    seen: Mapping[str, Mapping[str, str]], pages: Mapping[str, str],
) -> None:
    case = _case_page(name, file, items, values, versions)
    case.findings = [
        (bug_id, f"../bugs/{pages[bug_id]}", status)
        for bug_id, status in sorted(seen.get(name, {}).items())
        if bug_id in pages
    ]
    render("case.html.j2", out / "cases" / file, page=case, title=name, root="../")


def _write_bug(
    render: Any, out: Path, row: MatrixRow, history_rows: Sequence[FindingView],
    versions: Sequence[str], order: Mapping[str, int], started: Mapping[int, str],
    case_pages: Mapping[str, str], figures: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> None:
    from .render import fmt_metric

    history = sorted(
        history_rows, key=lambda f: (order.get(f.version, -1), -f.run_id, f.case_name, f.stage)
    )
    evidence = []
    first: set[str] = set()
    for f in history:
        anchor = ""
        if f.version not in first:
            first.add(f.version)
            anchor = slug(f.version, "e-")
        href = case_pages.get(f.case_name)
        evidence.append(
            Evidence(
                anchor=anchor,
                finding=f,
                started_at=started.get(f.run_id, ""),
                case_href=f"../cases/{href}" if href else "",
            )
        )
    table = []
    for case_name in row.bug.reproducers:
        by_version = figures.get(case_name, {})
        link = f"../cases/{case_pages[case_name]}" if case_name in case_pages else ""
        for version in versions:
            if version in by_version:
                table.append((case_name, link, version, [
                    fmt_metric(by_version[version].get(m), unit) for m, _h_, unit in FIGURES
                ]))
    page = BugPage(
        bug=row.bug,
        row=row,
        versions=list(versions),
        reproducers=[(c, f"../cases/{case_pages[c]}" if c in case_pages else "") for c in row.bug.reproducers],
        history=evidence,
        figures=table,
        figure_heads=[head for _m, head, _u in FIGURES],
    )
    render("bug.html.j2", out / "bugs" / row.bug.page, page=page, title=row.bug.id, root="../")


def _write_changes(
    render: Any, out: Path, changes: Sequence[Change], counts: Mapping[tuple[str, str, str], int],
    case_pages: Mapping[str, str], order: Mapping[str, int],
) -> list[tuple[str, str, int, int, int]]:
    """changes.html: per pair of consecutive versions, regressions then improvements
    (largest first), then what moved but cannot be compared."""
    from pytest_stedge.diff import ChangeKind

    from .render import fmt_delta, fmt_metric, fmt_pct

    groups: dict[tuple[str, str, str], list[Change]] = {}
    for change in changes:
        groups.setdefault((change.base, change.head, change.kind.value), []).append(change)
    pairs = sorted({(b, h) for b, h, _k in counts}, key=lambda p: (order[p[1]], order[p[0]]))
    kinds = (ChangeKind.REGRESSED.value, ChangeKind.IMPROVED.value, ChangeKind.NOT_COMPARABLE.value)
    sections: list[ChangeGroup] = []
    summary = []
    for base, head in pairs:
        tally: list[int] = []
        for kind in kinds:
            members = groups.get((base, head, kind), [])  # the largest first, as kept
            total = counts.get((base, head, kind), 0)
            tally.append(total)
            if not members:
                continue
            rows = []
            for c in members[:CHANGES_SHOWN]:
                unit = METRICS[c.metric].unit
                page = case_pages.get(c.case_name)
                rows.append(ChangeRow(
                    case_name=c.case_name,
                    case_href=f"cases/{page}" if page else "",
                    stage=c.stage,
                    metric=c.metric,
                    old=fmt_metric(c.old, unit),
                    new=fmt_metric(c.new, unit),
                    delta=f"{fmt_delta(c.delta, unit)} ({fmt_pct(c.delta_pct)})",
                    band=c.band,
                    runs=f"{c.base_run} → {c.head_run}",
                ))
            sections.append(ChangeGroup(
                base=base, head=head, kind=kind, anchor=slug(f"{base}-{head}-{kind}", "ch-"),
                rows=rows, more=max(0, total - len(rows)),
            ))
        summary.append((base, head, *tally))
    render("changes.html.j2", out / "changes.html", groups=sections, pairs=summary,
           title="Changes between releases", root="")
    return summary  # type: ignore[return-value]


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value or "")


def _cells(
    bug: BugInfo, grouped: Mapping[tuple[str, str], Sequence[FindingView]], versions: Sequence[str]
) -> list[Cell]:
    """Per version: the bug's status there (pytest_stedge.report.findings decides)."""
    cells = []
    for version in versions:
        state = version_status(grouped.get((bug.id, version), []), bug.reproducers)
        if state.deciding is None:
            note = (
                f"no reproducer ran on {version}; the signature matched on "
                f"{state.elsewhere} other case(s) in run {state.run_id}"
                if state.elsewhere else ""
            )
            cells.append(Cell(status="not-run", text=state.text, title=note))
            continue
        deciding = state.deciding
        facts = "; ".join(f"{k} = {v}" for k, v in deciding.evidence)
        title = (
            f"{state.text} in run {state.run_id} on {deciding.case_name} "
            f"({deciding.stage})" + (f": {facts}" if facts else "")
        )
        cells.append(
            Cell(
                status=state.status,
                text=state.text,
                href=f"bugs/{bug.page}#{slug(version, 'e-')}",
                title=title,
            )
        )
    return cells


def _case_page(
    name: str,
    file: str,
    items: Sequence[Mapping[str, Any]],
    values: Mapping[str, Mapping[str, float]],
    versions: Sequence[str],
) -> CasePage:
    shown = [v for v in versions if v in values]
    rows = [
        CaseRow(
            version=str(i["version"]),
            stage=str(i["stage"]),
            run_id=int(i["run_id"]),
            outcome=str(i["outcome"]),
            recorded=bool(i["recorded"]),
            values=dict(values.get(str(i["version"]), {})),
        )
        for i in items
    ]
    order = {v: k for k, v in enumerate(versions)}
    rows.sort(key=lambda r: (order.get(r.version, -1), r.stage))

    def series(metric: str, label: str, color: str, dashed: bool = False) -> Series:
        return Series(label, [values[v].get(metric) for v in shown], color, dashed)

    def has(metric: str) -> bool:
        return any(metric in values[v] for v in shown)

    out: list[Markup] = []
    if shown and (has("activations_bytes") or has("activations_lower_bound_bytes")):
        out.append(charts.line_chart(
            "Activation RAM across versions", shown,
            [series("activations_bytes", "reported activations", "activations"),
             series("activations_lower_bound_bytes", "oracle lower bound", "lower_bound", True)],
            unit="B", quantity="activation memory",
        ))
    if shown and has("weights_bytes"):
        out.append(charts.line_chart(
            "Weights across versions", shown, [series("weights_bytes", "weights", "weights")],
            unit="B", quantity="weights",
        ))
    # figures of unlike units on one chart, each divided by its value in the case's first
    # version that has it: a per-case normalisation, so no metric dwarfs the others
    relative = []
    for metric, label, color in (
        ("activations_ratio", "activations / lower bound", "ratio"),
        ("macc", "MACC", "head"),
        ("val_cos", "cos", "improved"),
        ("duration_ms", "time per inference", "board"),
    ):
        raw = [values[v].get(metric) for v in shown]
        first = next((x for x in raw if x), None)
        if first:
            relative.append(Series(label, [None if x is None else x / first for x in raw], color))
    if relative:
        out.append(charts.line_chart(
            "Other figures across versions, relative to the first version", shown, relative,
            unit="x", quantity="value / first version's value", zero_based=False,
        ))
    with_epochs = [v for v in shown if any(f"epochs_{k}" in values[v] for k in EPOCH_KINDS)]
    if with_epochs:
        out.append(
            epochs_chart(
                "Epochs by kind across versions",
                [(name, v) for v in with_epochs],
                [{k: values[v].get(f"epochs_{k}") for k in EPOCH_KINDS} for v in with_epochs],
            )
        )
    return CasePage(name=name, page=file, rows=rows, charts=out)


# -- the registry ------------------------------------------------------------------------


def _bugs(bugs_dir: Path | None, findings: Iterable[FindingView]) -> list[BugInfo]:
    """Registry bugs (sorted by id), then ids only seen in stored findings."""
    bugs = [_bug_info(entry) for entry in _load_registry(bugs_dir)] if bugs_dir else []
    known = {b.id for b in bugs}
    for bug_id in sorted({f.bug_id for f in findings} - known):
        bugs.append(BugInfo(id=bug_id, page=f"{slug(bug_id)}.html", in_registry=False))
    return bugs


def _load_registry(bugs_dir: Path) -> list[Any]:
    """The registry's bugs, by id (a malformed file raises CaseError naming it)."""
    from pytest_stedge.bugs.registry import load_registry

    return list(load_registry(bugs_dir))


def _field(entry: Any, name: str) -> Any:
    if isinstance(entry, Mapping):
        return entry.get(name)
    return getattr(entry, name, None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _bug_info(entry: Any) -> BugInfo:
    bug_id = _text(_field(entry, "id"))
    source = _text(_field(entry, "source"))
    reproducers = _field(entry, "reproducers") or []
    signature = _field(entry, "signature")
    names = [
        _text(r if isinstance(r, str) else _field(r, "case") or _field(r, "name") or r)
        for r in reproducers
    ]
    links = [(str(t), str(u)) for t, u in (_field(entry, "links") or ())]
    href = source.split()[0] if source.startswith(("https://", "http://")) else ""
    return BugInfo(
        links=links,
        kind=_text(_field(entry, "kind")) or "bug",
        notes=_text(_field(entry, "notes")).strip(),
        id=bug_id,
        page=f"{slug(bug_id)}.html",
        title=_text(_field(entry, "title")),
        source=source,
        source_href=href,
        signature=_text(getattr(signature, "text", signature)),
        affected=_text(_field(entry, "affected")) or "unknown",
        fixed_in=_text(_field(entry, "fixed_in")),
        status=_text(_field(entry, "status")),
        reproducers=names,
    )

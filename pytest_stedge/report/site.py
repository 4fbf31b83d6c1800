"""The known-bug dashboard: a static site of plain HTML files with relative links.

Layout under the output folder (publishable as-is, e.g. on GitHub Pages)::

    index.html          overview: runs, bugs, cases
    matrix.html         bugs (rows) x toolchain versions (columns)
    bugs/<slug>.html    one page per bug: registry entry and history of findings
    cases/<slug>.html   one page per case: its metrics across versions, as charts

File names are slugs with a hash suffix, never the untrusted names themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from . import charts
from .charts import EPOCH_KINDS, Series
from .data import (
    FindingView,
    _finding_view,
    _h,
    chart_values,
    epochs_chart,
    slug,
    sorted_versions,
)

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

STATUSES = ("reproduced", "not-reproduced", "unknown", "not-run")
STATUS_TEXT = {
    "reproduced": "reproduced",
    "not-reproduced": "not reproduced",
    "unknown": "unknown",
    "not-run": "not run",
}


@dataclass
class BugInfo:
    """A known bug as the registry describes it (or only its id, from stored findings)."""

    id: str = field(metadata=_h("bug id (untrusted text)"))
    page: str = field(metadata=_h("file name of the bug's page under bugs/"))
    title: str = field(default="", metadata=_h("one-line title"))
    source: str = field(default="", metadata=_h("where the bug was reported (URL or text)"))
    source_href: str = field(default="", metadata=_h("the source when it is an http(s) URL, else empty"))
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


@dataclass
class IndexPage:
    """Context of index.html.j2."""

    runs: list[dict[str, Any]] = field(default_factory=list, metadata=_h("newest runs (id, started, status, versions, counts)"))
    run_count: int = field(default=0, metadata=_h("runs stored"))
    versions: list[str] = field(default_factory=list, metadata=_h("toolchain versions with results"))
    bugs: list[MatrixRow] = field(default_factory=list, metadata=_h("bugs with their status per version"))
    cases: list[tuple[str, str, str, str]] = field(default_factory=list, metadata=_h("(case, page, latest version, outcome)"))


def write_site(store: Store, out: Path, *, bugs_dir: Path | None) -> Path:
    """Render every page of the dashboard under ``out``; return index.html."""
    from pytest_stedge.store.queries import latest_items

    from .render import render

    out.mkdir(parents=True, exist_ok=True)
    items = latest_items(store)
    stored = store.findings()
    started = {int(r["run_id"]): _when(r.get("started_at")) for r in stored}
    findings = [_finding_view(r) for r in stored]
    versions = sorted_versions([str(i["version"]) for i in items] + [f.version for f in findings if f.version])
    case_pages = {name: f"{slug(name)}.html" for name in sorted({str(i["case_name"]) for i in items})}
    bugs = _bugs(bugs_dir, findings)
    by_bug: dict[str, list[FindingView]] = {}
    for f in findings:
        by_bug.setdefault(f.bug_id, []).append(f)
    rows = [MatrixRow(bug=b, cells=_cells(b, by_bug.get(b.id, []), versions)) for b in bugs]
    order = {v: k for k, v in enumerate(versions)}

    for row in rows:
        history = sorted(
            by_bug.get(row.bug.id, []),
            key=lambda f: (order.get(f.version, -1), -f.run_id, f.case_name, f.stage),
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
        page = BugPage(
            bug=row.bug,
            row=row,
            versions=versions,
            reproducers=[
                (c, f"../cases/{case_pages[c]}" if c in case_pages else "")
                for c in row.bug.reproducers
            ],
            history=evidence,
        )
        render("bug.html.j2", out / "bugs" / row.bug.page, page=page, title=row.bug.id, root="../")

    values = chart_values(store)
    by_case: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_case.setdefault(str(item["case_name"]), []).append(item)
    seen: dict[str, dict[str, str]] = {}
    for f in findings:
        current = seen.setdefault(f.case_name, {})
        if current.get(f.bug_id) != "reproduced":
            current[f.bug_id] = f.status
    pages = {b.id: b.page for b in bugs}
    for name, file in case_pages.items():
        case = _case_page(name, file, by_case[name], values.get(name, {}), versions)
        case.findings = [
            (bug_id, f"../bugs/{pages[bug_id]}", status)
            for bug_id, status in sorted(seen.get(name, {}).items())
            if bug_id in pages
        ]
        render("case.html.j2", out / "cases" / file, page=case, title=name, root="../")

    render(
        "matrix.html.j2", out / "matrix.html", rows=rows, versions=versions,
        title="Known bugs by version", root="", statuses=STATUSES, status_text=STATUS_TEXT,
    )
    latest: dict[str, tuple[str, str]] = {}
    for item in items:
        name, version = str(item["case_name"]), str(item["version"])
        if name not in latest or order[version] >= order[latest[name][0]]:
            latest[name] = (version, str(item["outcome"]))
    index = IndexPage(
        runs=store.list_runs(limit=20),
        run_count=len(store.list_runs()),
        versions=versions,
        bugs=rows,
        cases=[(n, f, *latest.get(n, ("", ""))) for n, f in case_pages.items()],
    )
    return render("index.html.j2", out / "index.html", page=index, title="Dashboard", root="")


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value or "")


def _cells(bug: BugInfo, findings: Sequence[FindingView], versions: Sequence[str]) -> list[Cell]:
    """Per version: the status in the newest run that evaluated the bug on that version."""
    cells = []
    for version in versions:
        mine = [f for f in findings if f.version == version]
        # The bug's reproducers decide; a match on another case (a PReLU left float on
        # purpose runs in software too) only counts when no reproducer ran.
        decisive = [f for f in mine if f.case_name in bug.reproducers]
        mine = decisive or mine
        if not mine:
            cells.append(Cell(status="not-run", text=STATUS_TEXT["not-run"]))
            continue
        newest = max(f.group_run for f in mine)  # a run group (CI shards) is one run
        current = [f for f in mine if f.group_run == newest]
        statuses = {f.status for f in current}
        status = next(
            (s for s in ("reproduced", "not-reproduced") if s in statuses), "unknown"
        )
        deciding = next(f for f in current if f.status == status or status == "unknown")
        facts = "; ".join(f"{k} = {v}" for k, v in deciding.evidence)
        title = (
            f"{STATUS_TEXT[status]} in run {newest} on {deciding.case_name} "
            f"({deciding.stage})" + (f": {facts}" if facts else "")
        )
        cells.append(
            Cell(
                status=status,
                text=STATUS_TEXT[status],
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

    out: list[Markup] = []
    if shown:
        out.append(
            charts.line_chart(
                "Activation RAM across versions",
                shown,
                [
                    series("activations_bytes", "reported activations", "activations"),
                    series("activations_lower_bound_bytes", "oracle lower bound", "lower_bound", True),
                ],
                unit="B",
                quantity="activation memory",
            )
        )
        out.append(
            charts.line_chart(
                "Weights across versions",
                shown,
                [series("weights_bytes", "weights", "weights")],
                unit="B",
                quantity="weights",
            )
        )
        if any("activations_ratio" in values[v] for v in shown):
            out.append(
                charts.line_chart(
                    "Activations / oracle lower bound across versions",
                    shown,
                    [series("activations_ratio", "ratio to lower bound", "ratio")],
                    unit="x",
                    quantity="ratio to lower bound",
                )
            )
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
    return BugInfo(
        id=bug_id,
        page=f"{slug(bug_id)}.html",
        title=_text(_field(entry, "title")),
        source=source,
        source_href=source if source.startswith(("https://", "http://")) else "",
        signature=_text(getattr(signature, "text", signature)),
        affected=_text(_field(entry, "affected")) or "unknown",
        fixed_in=_text(_field(entry, "fixed_in")),
        status=_text(_field(entry, "status")),
        reproducers=names,
    )

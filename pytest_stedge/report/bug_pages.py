"""The dashboard's bug pages and its bugs x versions matrix, one bug at a time.

A bug's findings are read from the store's columns (:func:`pytest_stedge.store.history.finding_columns`,
sorted by bug) and become :class:`FindingView` objects only while its page is written;
what the other pages need of them (its matrix row, the statuses its reproducers saw on
each case) is kept, the findings are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.bugs.verdict import (
    SIMILAR_TEXT,
    bug_verdict,
    by_bug_and_version,
    is_evidence,
    what_would_fill,
)

from .data import FindingView, _finding_view, _h, slug

if TYPE_CHECKING:
    from pytest_stedge.store.history import Columns

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
    title: str = field(default="", metadata=_h("tooltip: run, case and metric values that decided the status, or what would fill a cell not run"))
    similar: int = field(default=0, metadata=_h("other models whose signature matched in the deciding run (never in the status)"))


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
    history: list[Evidence] = field(default_factory=list, metadata=_h("the evidence: findings of its reproducers (and scope), by version then newest run first"))
    similar: list[Evidence] = field(default_factory=list, metadata=_h("similar signature on other models: matches outside the evidence, listed apart"))
    similar_cases: int = field(default=0, metadata=_h("how many other models those matches are on"))
    unfilled: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(versions, what would fill them) of the versions not run"))
    figures: list[tuple[str, str, str, list[str]]] = field(default_factory=list, metadata=_h("(case, link, version, formatted figures) of each reproducer per version"))
    figure_heads: list[str] = field(default_factory=list, metadata=_h("column headings of the figures"))


def bug_findings(cols: Columns) -> Iterator[tuple[str, list[FindingView], dict[int, str]]]:
    """``(bug id, its findings, run id -> start time)`` for every bug with stored findings,
    by id; findings newest run first, then by case and version (the store's order)."""
    import numpy as np

    c = cols.columns
    if not len(cols):
        return
    bug = c["bug"]
    bounds = np.flatnonzero(np.diff(bug)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    ends = np.concatenate((bounds, [len(bug)])).tolist()
    for start, end in zip(starts, ends):
        bug_id = cols.bugs[int(bug[start])]
        views = []
        started: dict[int, str] = {}
        for i in range(start, end):
            version = int(c["version"][i])
            run_id = int(c["run_id"][i])
            evidence = c["evidence"][i]
            views.append(_finding_view({
                "bug_id": bug_id,
                "status": str(c["status"][i]),
                "case_name": cols.cases[int(c["case"][i])],
                "stage": cols.stages[int(c["stage"][i])],
                "version": cols.versions[version] if version >= 0 else None,
                "run_id": run_id,
                "group_run": int(c["group_run"][i]),
                "evidence": json.loads(evidence) if evidence else None,
            }))
            started.setdefault(run_id, str(c["started_at"][i]))
        yield bug_id, views, started


def statuses_seen(bug: BugInfo, findings: Iterable[FindingView], seen: dict[str, dict[str, str]]) -> None:
    """Add to ``seen`` (case -> bug -> status) what ``bug``'s reproducers found: a case
    shows reproduced when any of its findings did."""
    reproducers = set(bug.reproducers)
    for f in findings:
        if f.reproducer or f.case_name in reproducers:
            current = seen.setdefault(f.case_name, {})
            if current.get(f.bug_id) != "reproduced":
                current[f.bug_id] = f.status


def matrix_row(bug: BugInfo, findings: Iterable[FindingView], versions: Sequence[str]) -> MatrixRow:
    """The bug's cells, one per version (pytest_stedge.bugs.verdict decides)."""
    return MatrixRow(bug=bug, cells=_cells(bug, by_bug_and_version(findings), versions))


def write_bug(
    render: Any, out: Path, row: MatrixRow, history_rows: Sequence[FindingView],
    versions: Sequence[str], order: Mapping[str, int], started: Mapping[int, str],
    case_pages: Mapping[str, str], figures: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> None:
    """bugs/<page>: the registry entry, status by version, the reproducers' figures per
    version and every finding (by version, newest run first)."""
    from .render import fmt_metric

    history = sorted(
        history_rows, key=lambda f: (order.get(f.version, -1), -f.run_id, f.case_name, f.stage)
    )
    evidence: list[Evidence] = []
    similar: list[Evidence] = []
    first: set[str] = set()
    for f in history:
        own = is_evidence(f, row.bug.reproducers)
        if not own and f.status != "reproduced":
            continue  # a non-match elsewhere says nothing about this bug
        anchor = ""
        if own and f.version not in first:
            first.add(f.version)
            anchor = slug(f.version, "e-")
        href = case_pages.get(f.case_name)
        (evidence if own else similar).append(
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
        similar=similar,
        similar_cases=len({e.finding.case_name for e in similar}),
        unfilled=_unfilled(row, versions),
        figures=table,
        figure_heads=[head for _m, head, _u in FIGURES],
    )
    render("bug.html.j2", out / "bugs" / row.bug.page, page=page, title=row.bug.id, root="../")


def _unfilled(row: MatrixRow, versions: Sequence[str]) -> list[tuple[str, str]]:
    """The versions not run, in one line (what would fill any of them), then each one where
    a similar signature matched (said apart)."""
    missing = [v for v, c in zip(versions, row.cells) if c.status == "not-run"]
    if not missing:
        return []
    out = [(", ".join(missing), what_would_fill(row.bug.reproducers, "V").replace("with V:", "with these versions:"))]
    out += [(v, f"{SIMILAR_TEXT}: {c.similar}, listed apart below")
            for v, c in zip(versions, row.cells) if c.status == "not-run" and c.similar]
    return out


def _cells(
    bug: BugInfo, grouped: Mapping[tuple[str, str], Sequence[FindingView]], versions: Sequence[str]
) -> list[Cell]:
    """Per version: the bug's status there (pytest_stedge.bugs.verdict decides)."""
    cells = []
    for version in versions:
        verdict = bug_verdict(grouped.get((bug.id, version), []), bug.reproducers)
        similar = len(verdict.similar_cases())
        aside = f" ({SIMILAR_TEXT}: {similar}, listed apart)" if similar else ""
        deciding = verdict.deciding
        if deciding is None:
            fill = what_would_fill(bug.reproducers, version)
            cells.append(Cell(status="not-run", text=verdict.text, title=fill + aside, similar=similar))
            continue
        facts = "; ".join(f"{k} = {v}" for k, v in deciding.evidence)
        title = (
            f"{verdict.text} in run {verdict.run_id} on {deciding.case_name} "
            f"({deciding.stage})" + (f": {facts}" if facts else "") + aside
        )
        cells.append(
            Cell(
                status=verdict.status,
                text=verdict.text,
                href=f"bugs/{bug.page}#{slug(version, 'e-')}",
                title=title,
                similar=similar,
            )
        )
    return cells


# -- the registry ------------------------------------------------------------------------


def known_bugs(bugs_dir: Path | None, found: Iterable[str]) -> list[BugInfo]:
    """Registry bugs (sorted by id), then ids only seen in stored findings (``found``)."""
    bugs = [_bug_info(entry) for entry in _load_registry(bugs_dir)] if bugs_dir else []
    known = {b.id for b in bugs}
    for bug_id in sorted(set(found) - known):
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

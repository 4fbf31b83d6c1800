"""The known-bug dashboard: a static site of plain HTML files with relative links.

Layout under the output folder (publishable as-is, e.g. on GitHub Pages)::

    index.html          overview: runs, bugs, cases
    matrix.html         bugs (rows) x toolchain versions (columns)
    changes.html        every regression and improvement between consecutive versions, and
                        the operators moved between the NPU and the Cortex-M55
    atlas.html          operator x version: where each operator ran in the stored runs
    bugs/<slug>.html    one page per bug: registry entry, reproducers' figures, history
    cases/<slug>.html   one page per case: its metrics across versions, as charts

The store is read as columns (DuckDB does the per-row work: latest item, stage choice,
pivot, classification of changes), and pages are written one at a time as they are
rendered: a bug's findings and a case's figures become Python objects only while its
page is written. File names are slugs with a hash suffix, never the untrusted names.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.bugs.verdict import STATUS_TEXT
from pytest_stedge.result import METRICS

from .bug_pages import (
    MatrixRow,
    bug_findings,
    known_bugs,
    matrix_row,
    statuses_seen,
    write_bug,
)
from .case_pages import write_case
from .changes import SHOWN_KINDS, Change, release_changes
from .data import FindingView, _h, slug, sorted_versions
from .history import case_histories, case_history, case_table
from .placement_views import MoveGroup
from .site_placement import read_placement, write_atlas

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

    from ..verdict.bands import BandSettings

STATUSES = ("reproduced", "not-reproduced", "unknown", "not-run")
CHANGES_SHOWN = 100  # per kind and version pair; `stedge diff A B` lists every one


@dataclass
class IndexPage:
    """Context of index.html.j2."""

    runs: list[dict[str, Any]] = field(default_factory=list, metadata=_h("newest runs (id, started, status, versions, counts)"))
    run_count: int = field(default=0, metadata=_h("runs stored"))
    versions: list[str] = field(default_factory=list, metadata=_h("toolchain versions with results"))
    bugs: list[MatrixRow] = field(default_factory=list, metadata=_h("bugs with their status per version"))
    cases: list[tuple[str, str, str, str]] = field(default_factory=list, metadata=_h("(case, page, latest version, outcome)"))
    changes: list[tuple[str, str, list[int]]] = field(default_factory=list, metadata=_h("(base, head, counts of each kind of change_kinds) per version pair"))
    change_kinds: list[str] = field(default_factory=list, metadata=_h("the kinds counted, regressions first (unchanged is not)"))


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
    note: str = field(default="", metadata=_h("why not comparable (which options or model differ), or which expectation flipped"))


@dataclass
class ChangeGroup:
    """The changes of one kind between two versions."""

    base: str = field(metadata=_h("older version"))
    head: str = field(metadata=_h("newer version"))
    kind: str = field(metadata=_h("regressed, newly failing, improved, fixed, changed or not comparable"))
    anchor: str = field(metadata=_h("HTML id"))
    rows: list[ChangeRow] = field(default_factory=list, metadata=_h("largest first"))
    more: int = field(default=0, metadata=_h("changes not listed (past the page's limit)"))


def write_site(
    store: Store, out: Path, *, bugs_dir: Path | None, bands: BandSettings | None = None,
    cases: Mapping[str, Any] | None = None,
) -> Path:
    """Render every page of the dashboard under ``out``; return index.html.

    :param bands: the bands changes are classified with (default: the built-in ones).
    :param cases: the corpus cases by name (their bands and bounds); default: each case
        file still where the store recorded it.
    """
    out.mkdir(parents=True, exist_ok=True)
    from pytest_stedge.store.view import one_view

    # One view of the store for the whole site: sessions writing a shared store meanwhile
    # would otherwise add a version between the reads (an index past the version list).
    with one_view(store) as view:
        return _write_site(view, out, bugs_dir=bugs_dir, bands=bands, cases=cases)


def _write_site(
    store: Store, out: Path, *, bugs_dir: Path | None, bands: BandSettings | None,
    cases: Mapping[str, Any] | None,
) -> Path:
    from pytest_stedge.store.history import finding_columns, stored_versions

    from .render import render

    versions = sorted_versions(stored_versions(store))
    order = {v: k for k, v in enumerate(versions)}
    corpus = cases
    table = case_table(store, versions)
    case_pages = {name: f"{slug(name)}.html" for name in table.cols.cases}
    found = finding_columns(store)
    bugs = known_bugs(bugs_dir, found.bugs)
    pages = {b.id: b.page for b in bugs}

    # bug pages, one bug's findings at a time; keep its matrix row and what it saw
    rows: dict[str, MatrixRow] = {}
    seen: dict[str, dict[str, str]] = {}  # case -> bug -> status, from reproducers only
    by_id = {b.id: b for b in bugs}
    with_findings = set(found.bugs)
    without: list[tuple[str, list[FindingView], dict[int, str]]] = [
        (b.id, [], {}) for b in bugs if b.id not in with_findings
    ]
    for bug_id, findings, started in itertools.chain(bug_findings(found), without):
        bug = by_id[bug_id]
        rows[bug_id] = row = matrix_row(bug, findings, versions)
        statuses_seen(bug, findings, seen)
        figures = {}
        for name in bug.reproducers:
            history = case_history(table, name)
            if history is not None:
                figures[name] = history.figures()
        write_bug(render, out, row, findings, versions, order, started, case_pages, figures)
    del found

    # the stored epoch tables, read once: the atlas, each case's SW/hybrid rows, the moves
    placement = read_placement(store, order, case_pages)
    write_atlas(render, out, placement.atlas)

    # case pages, one at a time from the store's columns
    listed: list[tuple[str, str, str, str]] = []
    from pytest_stedge.store.history import case_paths

    from ..case.recordings import public_sources

    paths = case_paths(store)
    for history in case_histories(table):
        file = case_pages[history.name]
        path = paths.get(history.name)
        sources = public_sources(Path(path), history.name) if path and Path(path).is_file() else []
        write_case(out, history, file, seen.get(history.name, {}), pages, sources,
                   placement.kinds.get(history.name, ()))
        newest = int(history.version[-1])  # rows by version then stage: the last is newest
        listed.append((history.name, file, versions[newest], history.outcome[-1]))

    changes, counts = release_changes(store, table, bands=bands, cases=corpus, keep=CHANGES_SHOWN)
    del table
    pairs = _write_changes(render, out, changes, counts, case_pages, order,
                           placement.move_groups(order, case_pages))
    matrix = [rows[b.id] for b in bugs]
    render(
        "matrix.html.j2", out / "matrix.html", rows=matrix, versions=versions,
        title="Known bugs by version", root="", statuses=STATUSES, status_text=STATUS_TEXT,
    )
    from pytest_stedge.store.database import COLLECTION_ERROR

    runs = [r for r in store.list_runs() if r["status"] != COLLECTION_ERROR]
    index = IndexPage(
        runs=runs[:20],
        run_count=len(runs),
        versions=versions,
        bugs=matrix,
        cases=listed,
        changes=pairs,
        change_kinds=[k.value for k in SHOWN_KINDS],
    )
    return render("index.html.j2", out / "index.html", page=index, title="Dashboard", root="")


def _write_changes(
    render: Any, out: Path, changes: Sequence[Change], counts: Mapping[tuple[str, str, str], int],
    case_pages: Mapping[str, str], order: Mapping[str, int], moves: Sequence[MoveGroup] = (),
) -> list[tuple[str, str, list[int]]]:
    """changes.html: per pair of consecutive versions, every kind of change but unchanged,
    regressions first, each largest first; then the operators moved between the NPU and
    the Cortex-M55 (``moves``)."""
    from .render import fmt_delta, fmt_metric, fmt_pct

    groups: dict[tuple[str, str, str], list[Change]] = {}
    for change in changes:
        groups.setdefault((change.base, change.head, change.kind.value), []).append(change)
    pairs = sorted({(b, h) for b, h, _k in counts}, key=lambda p: (order[p[1]], order[p[0]]))
    sections: list[ChangeGroup] = []
    summary = []
    for base, head in pairs:
        tally: list[int] = []
        for kind in (k.value for k in SHOWN_KINDS):
            members = groups.get((base, head, kind), [])  # the largest first, as kept
            total = counts.get((base, head, kind), 0)
            tally.append(total)
            if not members:
                continue
            rows = []
            for c in members[:CHANGES_SHOWN]:
                unit = METRICS[c.metric].unit
                page = case_pages.get(c.case_name)
                delta = c.delta
                rows.append(ChangeRow(
                    case_name=c.case_name,
                    case_href=f"cases/{page}" if page else "",
                    stage=c.stage,
                    metric=c.metric,
                    old=fmt_metric(c.old, unit),
                    new=fmt_metric(c.new, unit),
                    delta="—" if delta is None else f"{fmt_delta(delta, unit)} ({fmt_pct(c.delta_pct)})",
                    band=c.band,
                    runs=f"{c.base_run} → {c.head_run}",
                    note=c.note,
                ))
            sections.append(ChangeGroup(
                base=base, head=head, kind=kind, anchor=slug(f"{base}-{head}-{kind}", "ch-"),
                rows=rows, more=max(0, total - len(rows)),
            ))
        summary.append((base, head, tally))
    render("changes.html.j2", out / "changes.html", groups=sections, pairs=summary,
           kinds=[k.value for k in SHOWN_KINDS], moves=list(moves),
           title="Changes between releases", root="")
    return summary

"""Reports: the run report, the diff between two versions, the known-bug dashboard, and
the terminal table of changes.

Owns rendering (one Jinja2 environment, autoescaped, strict undefined), page contexts
built from the store, inline SVG charts and the templates. Reads the store through
``store.queries`` (and ``store.history``, the dashboard's column-wise reads) and the
comparison through ``diff``; nothing in the pytest flow imports it except to write a report
at session end, and ``visible`` (untrusted names shown with their bidi and invisible
characters escaped) for the terminal summary and failures. Jinja2 loads only when a page is
rendered.

Entry points (each loads its page module, and Jinja2, when called)::

    render_run_report(store, run_id, path)       # reports/run-<id>-<8 hex>.html
    render_diff_page(report, store, path)        # reports/diff-<a>-<b>.html
    render_dashboard(store, out_dir, bugs_dir=)  # reports/site/index.html and its pages
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

    from ..verdict.bands import BandSettings
    from ..verdict.compare import DiffReport


def render_run_report(store: Store, run_id: int, path: Path, *, bands: BandSettings | None = None) -> Path:
    """Write the report of one run: cases, outcomes, metrics with their expectations,
    the oracle's lower bound beside the tool's activations, epochs, findings, failures
    and the tool's diagnostics.

    :returns: ``path``.
    :raises StoreError: no such run.
    """
    from .data import build_run_page
    from .render import render

    page = build_run_page(store, run_id, bands)
    return render("run.html.j2", path, page=page, title=f"Run {run_id}", root="")


def render_diff_page(report: DiffReport, store: Store, path: Path) -> Path:
    """Write the page of a diff between two toolchain versions.

    :returns: ``path``.
    """
    from .diff import build_diff_page
    from .render import render

    page = build_diff_page(report, store)
    return render(
        "diff.html.j2", path, page=page, title=f"{report.base} → {report.head}", root=""
    )


def render_dashboard(
    store: Store, out_dir: Path, *, bugs_dir: Path | None, bands: BandSettings | None = None,
    cases: Mapping[str, Any] | None = None,
) -> Path:
    """Write the known-bug dashboard (a static site) under ``out_dir``.

    :param bugs_dir: the known-bug registry (``corpus/bugs``); None: bugs are known only
        by the ids of stored findings.
    :param bands: the bands changes are classified with (``stedge diff``'s; default: the
        built-in ones).
    :param cases: the corpus cases by name; default: each case file where the store recorded it.
    :returns: the index page.
    """
    from .site import write_site

    return write_site(store, Path(out_dir), bugs_dir=bugs_dir, bands=bands, cases=cases)


__all__ = ["render_dashboard", "render_diff_page", "render_run_report"]

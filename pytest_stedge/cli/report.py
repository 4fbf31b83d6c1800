"""``stedge report`` (one run as HTML) and ``stedge dashboard`` (the known-bug site)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_stedge.options import add_store_options

from ..case.lookup import load_corpus_cases
from ..verdict.band_settings import band_settings
from .shared import add_band_option


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``report`` and ``dashboard``."""
    raw = argparse.RawDescriptionHelpFormatter
    report = subparsers.add_parser(
        "report",
        help="Write the HTML report of one stored run",
        description="Write one run's report: its cases and outcomes, every metric with its "
        "expectation, the oracle's lower bound beside the tool's activations, the epoch "
        "split, known-bug findings, failure messages and the tool's diagnostics. "
        "One self-contained HTML file.",
        epilog="examples:\n"
        "  stedge report latest\n"
        "  stedge report 12 --out reports/run-12.html --db ci/results.duckdb",
        formatter_class=raw,
    )
    report.add_argument("run", metavar="RUN", help="Run id, or 'latest'")
    report.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="HTML file to write. Default: reports/run-<RUN>-<8 hex>.html",
    )
    add_store_options(report.add_argument, prefix="")
    add_band_option(report)
    report.set_defaults(handler=_report)

    dashboard = subparsers.add_parser(
        "dashboard",
        help="Write the known-bug dashboard (a static site)",
        description="Write the public regression dashboard: a matrix of known toolchain bugs "
        "by version (reproduced, not reproduced, not run, unknown) linking to the evidence, a "
        "page per bug, a page per case with its metrics across versions as charts and its "
        "software and hybrid (??) epochs, the changes between releases, and the operator "
        "atlas (operator x version: where each operator ran, NPU or Cortex-M55, with links "
        "to the runs that show it). Plain HTML files with relative links: publish the folder "
        "as-is.",
        epilog="examples:\n"
        "  stedge dashboard\n"
        "  stedge dashboard --out public/ --db ci/results.duckdb --corpus corpus",
        formatter_class=raw,
    )
    dashboard.add_argument(
        "--out", metavar="DIR", default="reports/site", help="Output folder. Default: reports/site"
    )
    dashboard.add_argument(
        "--corpus",
        metavar="DIR",
        default="corpus",
        help="Corpus whose bugs/ folder is the known-bug registry and whose cases' [baseline] "
        "bands and [expect] bounds classify the changes (as stedge diff --corpus). Default: corpus",
    )
    add_store_options(dashboard.add_argument, prefix="")
    add_band_option(dashboard)
    dashboard.set_defaults(handler=_dashboard)


def _run_id(store: Any, text: str) -> int:
    from pytest_stedge.errors import StoreError

    if text == "latest":
        run_id = store.latest_run_id()
        if run_id is None:
            raise StoreError(f"no runs in {store.path}: run `pytest corpus` first")
        return int(run_id)
    try:
        return int(text)
    except ValueError:
        raise StoreError(f"RUN must be a run id or 'latest', got {text!r}") from None


def _report(args: argparse.Namespace) -> int:
    from pytest_stedge.report import render_run_report
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.rows import run_label

    from .shared import db_path

    with Store.open(db_path(args), create=False, read_only=True) as store:
        run_id = _run_id(store, args.run)
        out = Path(args.out) if args.out else Path("reports") / f"{run_label(run_id, store.run_uuid_of(run_id))}.html"
        path = render_run_report(store, run_id, out, bands=band_settings(args.band))
    print(f"wrote {path}")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from pytest_stedge.report import render_dashboard
    from pytest_stedge.store.database import Store

    from .shared import db_path

    bands = band_settings(args.band)  # a bad band is said before the store is opened
    bugs = Path(args.corpus) / "bugs"
    cases = load_corpus_cases(args.corpus) if Path(args.corpus).is_dir() else None
    with Store.open(db_path(args), create=False, read_only=True) as store:
        index = render_dashboard(store, Path(args.out), bugs_dir=bugs if bugs.is_dir() else None,
                                 bands=bands, cases=cases)
    print(f"wrote {index}")
    return 0

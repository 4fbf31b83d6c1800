"""``stedge diff BASE HEAD``: what changed between two toolchain versions, from the store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_stedge.options import add_store_options

from .shared import add_band_option

EPILOG = """\
examples:
  stedge diff 3.0.0 4.0.1
  stedge diff 3.0.0 4.0.1 --json > diff.json
  stedge diff 3.0.0 4.0.1 --band +2% --db ci/results.duckdb
  stedge diff 3.0.0 4.0.1 --html reports/diff-3.0.0-4.0.1.html
  stedge diff 3.0.0 4.0.1 --group nightly-41 --group $CI_PIPELINE_ID --db postgresql://ci@db/stedge

exit status: 0 nothing regressed, 1 a metric regressed beyond its band or newly
misses its expectation, 2 usage error (e.g. a version without stored results)."""


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``diff``."""
    diff = subparsers.add_parser(
        "diff",
        help="Compare the stored results of two toolchain versions",
        description="Compare, case by case, the newest stored results of BASE and HEAD "
        "without running anything. Each metric change gets one kind: regressed, newly "
        "failing, improved, fixed, not comparable (other model or options) or unchanged. "
        "Bands come from each case's [baseline] table (--corpus), else --band. On the N6, "
        "operators that moved between the NPU and the Cortex-M55 are listed apart (to "
        "software, to hardware, software <-> hybrid; --json placement_moves): never a failure.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diff.add_argument("base", metavar="BASE", help="Baseline toolchain version, e.g. 3.0.0")
    diff.add_argument("head", metavar="HEAD", help="Toolchain version to judge, e.g. 4.0.1")
    add_store_options(diff.add_argument, prefix="")
    diff.add_argument("--json", action="store_true", help="Print the diff as JSON")
    diff.add_argument(
        "--corpus",
        metavar="DIR",
        default=None,
        help="Corpus whose case [baseline] bands and [expect] bounds apply. "
        "Default: ./corpus when it exists",
    )
    add_band_option(diff)
    diff.add_argument(
        "--all", action="store_true", dest="show_unchanged", help="List unchanged metrics too"
    )
    diff.add_argument("--html", metavar="PATH", default=None, help="Also write an HTML page")
    diff.add_argument(
        "--group",
        metavar="ID",
        action="append",
        default=[],
        dest="groups",
        help="Compare only the runs of these run groups (--stedge-run-group; repeatable: "
        "e.g. the baseline's pipeline and this one); a group missing a shard is refused",
    )
    diff.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    """Handler of ``stedge diff``; returns the exit status."""
    from pytest_stedge.report.table import format_table
    from pytest_stedge.store.database import Store

    from ..case.lookup import load_corpus_cases
    from ..verdict.band_settings import band_settings
    from ..verdict.store_diff import diff_store
    from .shared import db_path

    settings = band_settings(args.band)
    default_band, metric_bands = settings.default_band, dict(settings.metric_bands or {})
    cases = load_corpus_cases(args.corpus)
    with Store.open(db_path(args), create=False, read_only=True) as store:
        report = diff_store(store, args.base, args.head, default_band=default_band, cases=cases,
                            metric_bands=metric_bands, run_groups=args.groups or None)
        if args.html:
            from pytest_stedge.report import render_diff_page

            page = render_diff_page(report, store, Path(args.html))
            print(f"wrote {page}", file=sys.stderr)
        from ..verdict.placement import format_placement_changes, store_placement_changes

        pairs = {(c.case_name, c.stage) for c in report.changes}
        placement = store_placement_changes(store, args.base, args.head, pairs)
    if args.json:
        print(json.dumps({**report.to_json(), "placement_moves": placement}, indent=2))
    else:
        print(format_table(report, show_unchanged=args.show_unchanged))
        for line in format_placement_changes(placement, args.base, args.head):
            print(line)
    return 1 if report.regressed() else 0




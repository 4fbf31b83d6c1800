"""``stedge clean``: remove old run folders from the work folder (``.stedge/work``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``clean``."""
    from pytest_stedge.tool.retention import DEFAULT_KEEP, DEFAULT_KEEP_FAILED

    parser = subparsers.add_parser(
        "clean",
        help="Remove old run folders from the work folder",
        description="Remove the tool's outputs of old runs (run-*/pid-* folders under the "
        "work folder), by the rule every session applies at its end: the newest --keep runs "
        "stay, a run with a failure (or that never finished) stays while among the newest "
        "--keep-failed. Nothing else in the work folder is touched.",
        epilog="examples:\n  stedge clean --dry-run\n  stedge clean --keep 3\n"
        "  stedge clean --all --workdir ci/.stedge/work",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--workdir", metavar="DIR", default=str(Path(".stedge") / "work"),
        help="The work folder. Default: .stedge/work",
    )
    parser.add_argument(
        "--keep", metavar="N", default=str(DEFAULT_KEEP),
        help=f"Keep the newest N runs ('all': remove nothing). Default: {DEFAULT_KEEP}, "
        "as ini stedge_keep_runs",
    )
    parser.add_argument(
        "--keep-failed", metavar="M", default=str(DEFAULT_KEEP_FAILED),
        help="Keep runs with a failure while among the newest M ('all': for ever). "
        f"Default: {DEFAULT_KEEP_FAILED}, as ini stedge_keep_failed_runs",
    )
    parser.add_argument("--all", action="store_true", help="Remove every run folder")
    parser.add_argument("--dry-run", action="store_true", help="Say what would go; remove nothing")
    parser.set_defaults(handler=_clean)


def _clean(args: argparse.Namespace) -> int:
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.tool.retention import parse_keep, run_folders, to_remove

    from .shared import fmt_figure

    root = Path(args.workdir)
    if not root.is_dir():
        print(f"{root}: no work folder; nothing to clean")
        return 0
    try:
        keep = parse_keep(args.keep, "--keep")
        keep_failed = parse_keep(args.keep_failed, "--keep-failed")
    except ValueError as exc:
        raise StedgeError(str(exc)) from None
    runs = run_folders(root)
    drop = runs if args.all else to_remove(runs, keep, keep_failed)
    verb = "would remove" if args.dry_run else "removed"
    freed = 0
    for run in drop:
        if not args.dry_run:
            import shutil

            shutil.rmtree(run.path, ignore_errors=True)
            if run.path.exists():
                print(f"could not remove {run.path}")
                continue
        freed += run.size_bytes
        print(f"{verb} {run.path} ({run.status}, {fmt_figure(run.size_bytes)} B)")
    kept = len(runs) - len(drop)
    print(f"{root}: {verb} {len(drop)} run folder(s), {fmt_figure(freed)} B; {kept} kept")
    return 0

"""``stedge runs``, ``stedge show``, ``stedge migrate``: read the results store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.options import add_store_options

from .shared import db_path, fmt_figure

if TYPE_CHECKING:
    from pytest_stedge.store.location import Location


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``runs``, ``show``, ``migrate``, ``export`` and ``import``."""
    raw = argparse.RawDescriptionHelpFormatter
    runs = subparsers.add_parser(
        "runs",
        help="List the stored runs",
        description="List the runs stored in the DuckDB store, newest first.",
        epilog="examples:\n  stedge runs\n  stedge runs --db ci/results.duckdb --limit 5",
        formatter_class=raw,
    )
    add_store_options(runs.add_argument, prefix="")
    runs.add_argument("--limit", type=int, default=None, metavar="N", help="Show N runs at most")
    runs.add_argument("--json", action="store_true", help="Print JSON")
    runs.add_argument("--all", action="store_true", dest="all_runs",
                      help="Also list the runs of sessions stopped by collection errors "
                      "before any item ran (status collection-error)")
    runs.set_defaults(handler=_runs)

    show = subparsers.add_parser(
        "show",
        help="Show one stored run",
        description="Show one run: its items, outcomes, metrics and (with --json) Results.",
        epilog="examples:\n  stedge show 3\n  stedge show latest --json",
        formatter_class=raw,
    )
    show.add_argument("run", metavar="RUN", help="Run id, or 'latest'")
    add_store_options(show.add_argument, prefix="")
    show.add_argument("--json", action="store_true", help="Print JSON")
    show.set_defaults(handler=_show)

    migrate = subparsers.add_parser(
        "migrate",
        help="Apply or list the store's schema migrations",
        description="Apply pending schema migrations (done automatically on write), "
        "or list them with --list.",
        epilog="examples:\n  stedge migrate --list",
        formatter_class=raw,
    )
    add_store_options(migrate.add_argument, prefix="")
    migrate.add_argument("--list", action="store_true", help="List applied and known migrations")
    migrate.set_defaults(handler=_migrate)


    export = subparsers.add_parser(
        "export",
        help="Write stored runs as a Parquet bundle for another machine",
        description="Write runs (default: all) with their items, metrics, findings and cases "
        "as a folder of Parquet files and a manifest; `stedge import` reads it.",
        epilog="examples:\n  stedge export --out bundle/\n  stedge export --out n6-lab/ --run 7 --run 8",
        formatter_class=raw,
    )
    export.add_argument("--out", required=True, metavar="DIR", help="Bundle folder to write")
    export.add_argument(
        "--run", type=int, action="append", default=[], metavar="N", help="Export run N (repeatable)"
    )
    add_store_options(export.add_argument, prefix="")
    export.set_defaults(handler=_export)

    importer = subparsers.add_parser(
        "import",
        help="Add the runs of a Parquet bundle to the store",
        description="Add a bundle's runs under new local run ids; runs the store already has "
        "(same run uuid) are skipped, so importing twice changes nothing. Given the journal "
        "a stopped session left beside a store (killed, or a full disk), merge its items.",
        epilog="examples:\n  stedge import bundle/\n  stedge import n6-lab/ --db ci/results.duckdb",
        formatter_class=raw,
    )
    importer.add_argument(
        "bundle", metavar="DIR",
        help="Bundle folder written by stedge export, or a session journal (a "
        "<store>.journal folder or one .jsonl file in it) to merge",
    )
    add_store_options(importer.add_argument, prefix="")
    importer.set_defaults(handler=_import)



def _runs(args: argparse.Namespace) -> int:
    from pytest_stedge.store.database import COLLECTION_ERROR, Store

    with Store.open(db_path(args), create=False, read_only=True) as store:
        runs = store.list_runs()
    hidden = 0 if args.all_runs else sum(1 for r in runs if r["status"] == COLLECTION_ERROR)
    if hidden:
        runs = [r for r in runs if r["status"] != COLLECTION_ERROR]
    runs = runs[: args.limit] if args.limit else runs
    _journal_note(db_path(args))
    if args.json:
        print(json.dumps(runs, indent=2, default=str))
        return 0
    if hidden:
        print(f"{hidden} run(s) stopped by collection errors before any item ran are not "
              "listed (stedge runs --all)", file=sys.stderr)
    if not runs:
        print("no runs stored")
        return 0
    print(f"{'run':>4}  {'started':<19}  {'status':<11}  {'versions':<16}  items  pass  fail  skip")
    for run in runs:
        versions = ",".join(run["versions"] or []) or "-"
        print(
            f"{run['run_id']:>4}  {run['started_at'] or '':<19}  {run['status']:<11}  "
            f"{versions:<16}  {run['items']:>5}  {run['passed']:>4}  {run['failed']:>4}  "
            f"{run['skipped']:>4}"
            + (f"  group {run['run_group']}" if run.get("run_group") else "")
            + (f" shard {run['shard']}" if run.get("shard") else "")
        )
    return 0


def _show(args: argparse.Namespace) -> int:
    from pytest_stedge.errors import StoreError
    from pytest_stedge.store.database import Store

    with Store.open(db_path(args), create=False, read_only=True) as store:
        if args.run == "latest":
            run_id = store.latest_run_id()
            if run_id is None:
                raise StoreError(f"no runs in {store.path}")
        else:
            try:
                run_id = int(args.run)
            except ValueError:
                raise StoreError(f"RUN must be a run id or 'latest', got {args.run!r}") from None
        run = store.get_run(run_id)
    if args.json:
        print(json.dumps(run, indent=2, default=str))
        return 0
    print(f"run {run['run_id']}  {run['status']}  started {run['started_at']}  on {run['host']}")
    print(f"versions: {', '.join(run['versions'] or []) or '-'}")
    for item in run["items"]:
        tag = " (recorded)" if item["recorded"] else ""
        print(f"  {item['outcome']:<8} {item['nodeid']}{tag}")
        for name, value in sorted(item["metrics"].items()):
            print(f"             {name} = {fmt_figure(value)}")
        if item["outcome"] in ("failed", "error") and item["message"]:
            print("             " + item["message"].strip().splitlines()[0][:160])
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.migrations import MIGRATIONS

    with Store.open(db_path(args)) as store:
        applied = dict(store.applied_migrations())
    if args.list:
        for step in MIGRATIONS:
            when = applied.get(step.name)
            print(f"{step.name:<32} {'applied ' + str(when) if when else 'pending'}")
    else:
        print(f"{store.path}: {len(applied)} migrations applied, schema up to date")
    return 0


def _export(args: argparse.Namespace) -> int:
    from pytest_stedge.store.bundle import export_bundle
    from pytest_stedge.store.database import Store

    with Store.open(db_path(args), create=False, read_only=True) as store:
        manifest = export_bundle(store, Path(args.out), args.run or None)
    rows = ", ".join(f"{n} {table}" for table, n in manifest["rows"].items())
    print(f"wrote {args.out}: {rows}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from pytest_stedge.store.bundle import import_bundle, read_manifest
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.journal import SUFFIX, merge

    source = Path(args.bundle)
    journals = _journals_in(source, SUFFIX)
    if journals:  # what a stopped session left beside a store
        with Store.open(db_path(args)) as store:
            for journal in journals:
                done = merge(store, journal)
                print(f"merged journal {journal}: run {done['run_id']} ({done['status']}), "
                      f"{done['added']} item(s) added to {store.path}")
        return 0
    read_manifest(source)  # refuse a bad bundle before creating a store
    with Store.open(db_path(args)) as store:
        counts = import_bundle(store, source)
    print(f"imported {counts['imported']} run(s) into {store.path}; "
          f"{counts['skipped']} already there")
    return 0


def _journals_in(source: Path, suffix: str) -> list[Path]:
    if source.is_file() and source.name.endswith(suffix):
        return [source]
    if source.is_dir() and not (source / "manifest.json").exists():
        return sorted(source.glob(f"*{suffix}"))
    return []


def _journal_note(store: Location) -> None:
    """Say so when stopped sessions left items in journals the store does not hold yet."""
    import sys

    from pytest_stedge.store.journal import journal_dir, stopped_journals

    stopped = list(stopped_journals(store))
    if stopped:
        print(f"note: {len(stopped)} journal(s) of stopped sessions in {journal_dir(store)} hold "
              "items not in the store yet; the next session merges them, or now: "
              f"stedge import {journal_dir(store)} --db {store}", file=sys.stderr)

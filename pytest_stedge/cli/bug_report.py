"""``stedge bug-report``: a folder (and a .zip) ST can reproduce a failing case from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_stedge.errors import StedgeError


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``bug-report``."""
    p = subparsers.add_parser(
        "bug-report", help="Write a self-contained folder and .zip ST can reproduce a case from",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Re-runs the failing stage of a case with stedgeai VERSION inside a new "
        "folder (and the passing version's, when installed, else its stored figures), so "
        "that the exact command lines and the tool's outputs hold relative paths only; adds "
        "the model (or its sha256 and public source for a record-only case), the Neural-ART "
        "profile and mpool, the figures side by side, the options bisection (--bisect) and "
        "the first diverging epoch of a board dump (--dump), and POST.md, a forum post "
        "(tool build, compiler, runtime, board; what happens; how to reproduce; what was "
        "ruled out). Nothing from outside the case goes in; a path of this machine left in "
        "a file stops the report.",
        epilog="examples:\n  stedge bug-report corpus/tcn-23x60 --version 4.0.1 --passing-version "
               "3.0.0 --stage validate-target --board serial:/dev/ttyACM0:921600 --bisect\n"
               "  stedge bug-report corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate "
               "--passing-version 3.0.0 --db ci/results.duckdb")
    p.add_argument("case", metavar="CASE", help="case.toml, its folder, or a case name under "
                   "./corpus")
    p.add_argument("--version", required=True, metavar="V", help="the stedgeai version that fails")
    p.add_argument("--passing-version", metavar="W",
                   help="a version where the stage passes: run here when installed, else its "
                        "newest figures from the store (--db)")
    p.add_argument("--stage", help="the failing stage (default: validate-target when the case "
                   "has it, else generate)")
    p.add_argument("--out", type=Path, help="the folder to write (default: "
                   "bug-report-<case>-<version>); the .zip is written beside it")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="look for installs in DIR first (repeatable; also STEDGEAI_CORE_DIR)")
    p.add_argument("--board", metavar="DESC", help="validate-target: the board's --desc")
    p.add_argument("--loader", metavar="CMD", help="validate-target: the command that flashes "
                   "the network (default: the install's N6 loader)")
    p.add_argument("--bisect", action="store_true",
                   help="also find the options that make it fail (stedge bisect; slow)")
    p.add_argument("--dump", type=Path, help="a board dump of the failing build (stedge "
                   "board-run --per-layer): its first diverging epoch goes in the report")
    p.add_argument("--db", help="the store to read the passing version's figures from "
                   "(default .stedge/results.duckdb)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=cmd_bug_report)


def cmd_bug_report(args: argparse.Namespace) -> int:
    """Write the folder and the zip; print where and what they say."""
    from pytest_stedge.bisect.runner import stage_runner
    from pytest_stedge.bugreport.folder import make_report
    from pytest_stedge.bugreport.post import summary
    from pytest_stedge.case.lookup import find_case
    from pytest_stedge.tool.discovery import discover

    case = find_case(args.case)
    stage = args.stage or ("validate-target" if "validate-target" in case.stages else "generate")
    if stage not in case.stages and stage != "generate":
        raise StedgeError(f"case {case.name} has no stage {stage} (its stages: "
                          f"{', '.join(case.stages)})")
    if stage == "validate-target" and not args.board:
        raise StedgeError("validate-target runs on a board: give --board serial:PORT:BAUD")
    if args.dump is not None and not args.dump.is_file():
        raise StedgeError(f"--dump {args.dump}: no such file")
    found = discover(args.root, root_flag="--root")
    installs = {i.version: i for i in found.installs}
    install = installs.get(args.version)
    if install is None:
        known = ", ".join(f"{i.version} ({i.root})" for i in found.installs) or "none"
        raise StedgeError(f"stedgeai {args.version} is not installed here (found: {known}): the "
                          "report re-runs the failing stage in its folder, so that its command "
                          "lines and outputs are exact; give --root or STEDGEAI_CORE_DIR")

    def runner(i: Any) -> Any:
        return stage_runner(stage, i, args.board, args.loader, args.timeout)

    passing = stored = None
    if args.passing_version:
        other = installs.get(args.passing_version)
        if other is not None:
            passing = (other.version, other, runner(other))
        else:
            stored = _stored(args, case.name, stage, args.passing_version)
    out = args.out or Path(f"bug-report-{case.name}-{args.version}")
    report = make_report(case, stage, out, failing=(install.version, install, runner(install)),
                         passing=passing, stored_passing=stored, board_desc=args.board,
                         bisect=args.bisect, dump=args.dump)
    if args.json:
        print(json.dumps(summary(report), indent=2, default=str))
        return 0
    print(f"wrote {report.folder}/ and {report.zip}")
    print(f"  {report.failing.version}: " + (report.failing.error or "; ".join(
        report.failing.misses) or "no expectation missed"))
    if report.passing is not None:
        state = "passes" if report.passing.passed else "fails too"
        print(f"  {report.passing.version}: {state} ({report.passing.source})")
    if report.bisect:
        print(f"  options: {report.bisect['verdict']}")
    if report.divergence:
        print(f"  board: first diverging epoch {report.divergence.get('first_diverging_epoch')}"
              if not report.divergence.get("error") else
              f"  board: {report.divergence['error']}")
    print(f"post: {report.folder / 'POST.md'}")
    return 0


def _stored(args: argparse.Namespace, case: str, stage: str, version: str) -> Any:
    """The passing version's newest stored figures (the version is not installed)."""
    from pytest_stedge.bugreport.records import VersionRun
    from pytest_stedge.cli.shared import db_path
    from pytest_stedge.result import METRICS
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.queries import latest_metrics

    location = db_path(args)
    # named without its folder (no path of this machine goes in the report) nor a server's
    # address (it may carry credentials)
    shown = Path(str(location)).name if isinstance(location, Path) else "the shared store"
    try:
        with Store.open(location, create=False, read_only=True) as store:
            rows = latest_metrics(store, sorted(METRICS), [version])
    except Exception as exc:  # noqa: BLE001 - a missing or unreadable store: said, not fatal
        return VersionRun(version, f"not installed here, and the store {shown} cannot be "
                          f"read ({type(exc).__name__})")
    figures = {r["metric"]: float(r["value"]) for r in rows
               if r["case_name"] == case and r["stage"] == stage}
    if not figures:
        return VersionRun(version, f"not installed here, and the store {shown} holds no "
                          f"{stage} of {case} with it")
    return VersionRun(version, f"its newest stored figures (store {shown})", figures=figures)

"""``stedge bisect``: which compiler options make a case's stage fail (delta debugging)."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.errors import StedgeError

if TYPE_CHECKING:
    from pytest_stedge.bisect.search import Bisection

STAGES = ("generate", "analyze", "validate-host", "validate-target")


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``bisect``."""
    p = subparsers.add_parser(
        "bisect", help="Find the smallest set of a case's options that makes a stage fail",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Re-runs one stage of a case with stedgeai VERSION, keeping some of the "
        "compiler options of the case's Neural-ART profile and of the case itself, and finds "
        "by delta debugging (ddmin) the smallest set whose presence makes the stage's check "
        "fail: what fails with every option (the expectations missed, or the tool failing) "
        "is what every other run is judged on. Prints every run with its figures. Runs "
        "stay in --work (default: a temporary folder). Exit status: 0 when a set was found, "
        "1 when the stage passes with every option or fails without any.",
        epilog="examples:\n  stedge bisect corpus/tcn-23x60 --version 4.0.1 --stage validate-target "
               "--board serial:/dev/ttyACM0:921600\n"
               "  stedge bisect corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate --json")
    p.add_argument("case", metavar="CASE", help="case.toml, its folder, or a case name under "
                   "./corpus")
    p.add_argument("--version", required=True, metavar="V", help="the stedgeai version to run")
    p.add_argument("--stage", choices=STAGES, default="validate-target",
                   help="the stage to re-run (default validate-target)")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="look for installs in DIR first (repeatable; also STEDGEAI_CORE_DIR)")
    p.add_argument("--board", metavar="DESC", help="validate-target: the board's --desc "
                   "(serial:PORT:BAUD)")
    p.add_argument("--loader", metavar="CMD", help="validate-target: the command that flashes "
                   "each variant (placeholders as ini stedge_board_loader: {workdir} {port} ...); "
                   "default: the install's N6 loader")
    p.add_argument("--work", type=Path, help="folder for the runs (default: a temporary one)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    """Run the bisection and print every run."""
    from pytest_stedge.bisect.runner import oracle_figures, stage_runner
    from pytest_stedge.bisect.search import bisect_stage, no_install
    from pytest_stedge.case.lookup import find_case
    from pytest_stedge.tool.discovery import discover

    case = find_case(args.case)
    if args.stage not in case.stages and args.stage != "generate":
        raise StedgeError(f"case {case.name} has no stage {args.stage} (its stages: "
                          f"{', '.join(case.stages)})")
    if args.stage == "validate-target" and not args.board:
        raise StedgeError("validate-target runs on a board: give --board serial:PORT:BAUD")
    found = discover(args.root, root_flag="--root")
    install = next((i for i in found.installs if i.version == args.version), None)
    if install is None:
        raise no_install(args.version, [f"{i.version} ({i.root})" for i in found.installs])
    runner = stage_runner(args.stage, install, args.board, args.loader, args.timeout)
    oracle = oracle_figures if case.oracle else None
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        report = bisect_stage(case, args.stage, install.version, runner, args.work,
                              install_root=install.root, oracle=oracle)
    else:
        with tempfile.TemporaryDirectory(prefix="stedge-bisect-") as tmp:
            report = bisect_stage(case, args.stage, install.version, runner, Path(tmp),
                                  install_root=install.root, oracle=oracle)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        print_report(report)
    return 0 if report.culprits else 1



def print_report(report: Bisection) -> None:
    """The runs, one line each, then the verdict."""
    print(f"bisect {report.case} {report.stage} with stedgeai {report.version}: "
          f"{len(report.options)} option(s): {', '.join(report.options) or 'none'}")
    print(f"check: {report.check}")
    for run in report.runs:
        shown = {k: v for k, v in run.figures.items() if k.startswith(("val_", "activations",
                                                                        "epochs_", "weights"))}
        figures = ", ".join(f"{k} {v:.6g}" for k, v in sorted(shown.items())[:6])
        why = run.error or "; ".join(run.misses) or figures
        kept = " ".join(run.kept) if run.kept else "(no option)"
        print(f"  run {run.number:>3} {run.outcome:<10} {run.seconds:6.1f}s  {kept}")
        if why:
            print(f"            {why}")
    print(f"{len(report.runs)} runs (bound 2 n log2 n = {report.budget})")
    print(f"verdict: {report.verdict}")

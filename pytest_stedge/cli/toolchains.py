"""``stedge toolchains``: the stedgeai installs this machine has."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``toolchains``."""
    parser = subparsers.add_parser(
        "toolchains",
        help="List the stedgeai installs found",
        description="List the ST Edge AI Core installs found: version, build and path. "
        "Searches --root folders, STEDGEAI_CORE_DIR, /opt/ST/STEdgeAI/<x.y>, "
        "C:/ST/STEdgeAI/<x.y> and the X-CUBE-AI packs under ~/STM32Cube.",
        epilog="examples:\n  stedge toolchains\n  stedge toolchains --root ~/tools/stedgeai --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--root", action="append", default=[], metavar="DIR", help="Look in DIR first (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="Print JSON")
    parser.set_defaults(handler=_toolchains)


def _toolchains(args: argparse.Namespace) -> int:
    from ..tool.discovery import discover

    found = discover(args.root, root_flag="--root")
    if args.json:
        print(
            json.dumps(
                {
                    "installs": [i.to_dict() for i in found.installs],
                    "searched": found.searched,
                    "problems": found.problems,
                },
                indent=2,
            )
        )
        return 0
    if not found.installs:
        print(f"no stedgeai install found; looked in: {found.describe_search()}")
        print("point to one with --root DIR or STEDGEAI_CORE_DIR")
    else:
        width = max(len(i.version) for i in found.installs)
        print(f"{'version'.ljust(max(width, 7))}  {'build':<16}  path")
        for install in found.installs:
            build = f"{install.build} {install.revision}".strip()
            print(f"{install.version.ljust(max(width, 7))}  {build:<16}  {install.executable}")
    for problem in found.problems:
        print(f"warning: {problem.splitlines()[0]}")
    return 0

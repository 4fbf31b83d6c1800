"""``stedge corpus build``: rebuild the corpus models (the same code as ``corpus/build.py``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_stedge.errors import StedgeError

_EPILOG = """examples:
  stedge corpus build                 rebuild in place; refuses to change pinned models
  stedge corpus build --check         rebuild in memory, compare with the committed files
  stedge corpus build --out rebuilt/  write the models under rebuilt/ instead
  stedge corpus build --force         overwrite models whose pin differs and re-pin them
"""


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``stedge corpus build``."""
    corpus = subparsers.add_parser(
        "corpus",
        help="Work on the corpus of models",
        description="Work on the corpus of models.",
        epilog="examples:\n  stedge corpus build --check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = corpus.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="Rebuild the corpus models from their fixed seeds",
        description="Rebuild every model of the corpus from the recipes of its build.py: "
        "seeded float graphs, QDQ int8 quantization, sha256 pins in each case.toml.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_build_arguments(build)
    build.add_argument(
        "--corpus",
        type=Path,
        default=Path("corpus"),
        metavar="DIR",
        help="The corpus folder holding build.py (default: ./corpus)",
    )
    build.set_defaults(handler=_handle_build)


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by ``stedge corpus build`` and ``corpus/build.py``."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="Overwrite models whose case.toml pins another sha256, and update the pins",
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="Write the models under DIR instead of the corpus folder"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="Write nothing; exit 1 if a committed model or pin differs from the build",
    )


def _handle_build(args: argparse.Namespace) -> int:
    return run_build(args.corpus, out=args.out, force=args.force, check=args.check)


def run_build(
    corpus_root: Path, out: Path | None = None, force: bool = False, check: bool = False
) -> int:
    """Build the corpus at ``corpus_root``, print one line per model; return the exit status."""
    from ..case.build import build_corpus, load_recipes

    if out is not None and check:
        raise StedgeError("--check compares with the corpus itself; it cannot be combined with --out")
    started = time.perf_counter()
    recipes = load_recipes(corpus_root)
    built = build_corpus(recipes, corpus_root, out=out, force=force, check=check)
    elapsed = time.perf_counter() - started
    bad = 0
    for item in built:
        print(f"{item.status:9} {item.size:>9,} B  {item.sha256[:12]}  {item.path}")
        for note in item.notes:
            print(f"          {note}")
        bad += item.status not in ("written", "unchanged")
    total = sum(item.size for item in built)
    print(f"{len(built)} models, {total:,} B, built in {elapsed:.1f} s")
    if bad:
        print(f"{bad} models differ from the committed corpus", file=sys.stderr)
        return 1
    return 0


def build_main(argv: Sequence[str], corpus_root: Path) -> int:
    """Entry point of ``corpus/build.py``."""
    parser = argparse.ArgumentParser(
        prog="build.py",
        description="Rebuild the corpus models from their fixed seeds.",
        epilog=_EPILOG.replace("stedge corpus build", "python corpus/build.py"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_build_arguments(parser)
    args = parser.parse_args(list(argv))
    try:
        return run_build(corpus_root, out=args.out, force=args.force, check=args.check)
    except StedgeError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 2

"""The ``stedge`` command: small, talks to the store and the files it is given.

Each family of subcommands lives in its own module exposing
``add_commands(subparsers)``; handlers return the exit status
(0 ok, 1 regressions found, 2 usage or :class:`StedgeError`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from pytest_stedge.errors import StedgeError

# Modules stay light at import time: each handler imports what it needs.
COMMAND_MODULES = (
    "pytest_stedge.cli.toolchains",
    "pytest_stedge.cli.store",
    "pytest_stedge.cli.ingest",
    "pytest_stedge.cli.diff",
    "pytest_stedge.cli.report",
    "pytest_stedge.cli.parse",
    "pytest_stedge.cli.oracle",
    "pytest_stedge.cli.boards",
    "pytest_stedge.cli.corpus",
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every ``stedge`` subcommand."""
    parser = argparse.ArgumentParser(
        prog="stedge",
        description="pytest-stedge: regression-test ST Edge AI Core toolchain upgrades.",
        epilog="Runs happen inside pytest (pytest corpus --stedge-version X); "
        "this command reads the store and tool outputs.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Show tracebacks of errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stedge``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # `stedge runs | head`
        return 0
    except KeyboardInterrupt:
        print("stedge: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # no traceback reaches a user without -v
        if args.verbose:
            raise
        print(f"stedge: error: {describe_error(exc)}", file=sys.stderr)
        return 2


def describe_error(exc: Exception) -> str:
    """One line for an error: ours as they are; a file the system refused, with its name
    and the reason; anything else, with its type and the hint that -v shows where."""
    if isinstance(exc, StedgeError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        names = [n for n in (exc.filename, exc.filename2) if n is not None]
        return f"{' -> '.join(str(n) for n in names) or 'a file'}: {exc.strerror}"
    return (f"{type(exc).__name__}: {exc} (unexpected: this is a bug of pytest-stedge; "
            "rerun with -v for the traceback)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

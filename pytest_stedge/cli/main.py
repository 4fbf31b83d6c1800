"""The ``stedge`` command: small, talks to the store and the files it is given.

Each family of subcommands lives in its own module exposing
``add_commands(subparsers)``; handlers return the exit status
(0 ok, 1 regressions found, 2 usage or :class:`StedgeError`). Every error is printed
one way, ``stedge: error: ...``, with the hints of the library (written for pytest's
``--stedge-X`` flags) naming the running command's own ``--X`` where it has one.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

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
    "pytest_stedge.cli.diverge",
    "pytest_stedge.cli.bisect",
    "pytest_stedge.cli.bug_report",
    "pytest_stedge.cli.boards",
    "pytest_stedge.cli.corpus",
    "pytest_stedge.cli.clean",
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
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0,
        help="Print the version of pytest-stedge and exit",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(subparsers)
    return parser


# Options whose value is itself a command line for the tool: ``--options --st-neural-art``
# (argparse alone takes a lone ``--word`` for an option of ours and stops).
PASSED_THROUGH = ("--options",)


def attach_values(argv: Sequence[str]) -> list[str]:
    """``--options X`` written as ``--options=X`` when X starts with a dash."""
    out: list[str] = []
    words = list(argv)
    k = 0
    while k < len(words):
        word = words[k]
        if word in PASSED_THROUGH and k + 1 < len(words) and words[k + 1].startswith("-"):
            out.append(f"{word}={words[k + 1]}")
            k += 2
            continue
        out.append(word)
        k += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stedge``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(attach_values(sys.argv[1:] if argv is None else argv))
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
        print(f"stedge: error: {own_flags(describe_error(exc), command_flags(parser, args))}",
              file=sys.stderr)
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


def command_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """pytest's flag (``--stedge-board``) -> the running command's own (``--board``), for
    every long option the command has."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            command = action.choices.get(args.command)
            if command is None:
                break
            own = {s for a in command._actions for s in a.option_strings if s.startswith("--")}
            return {f"--stedge-{flag[2:]}": flag for flag in sorted(own)}
    return {}


def own_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with each pytest flag of ``flags`` named as the command names it."""
    for pytest_flag, flag in flags.items():
        message = re.sub(rf"{re.escape(pytest_flag)}(?![\w-])", flag, message)
    return message


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata
    costs every other command its import)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"stedge (pytest-stedge) {_version()}")  # stdout, as argparse's own action
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-stedge")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

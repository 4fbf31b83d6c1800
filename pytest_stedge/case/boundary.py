"""The exception boundary of one case file: whatever goes wrong while loading it is that
file's :class:`~pytest_stedge.errors.CaseError`, never an error of the whole corpus.

A case file is untrusted input, and the standard library has failures of its own on
hostile input that no ``except`` clause of the loader names: a parser's nesting limit
(``RecursionError``), a path longer than the file system takes (``OSError``
ENAMETOOLONG), a ``MemoryError`` on a giant value. Without this boundary any of them
reached the corpus folder's collector and collected nothing at all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from ..errors import CaseError

P = ParamSpec("P")
T = TypeVar("T")


def case_failure(case_toml: Path | str, exc: BaseException) -> CaseError:
    """``exc``, met while loading ``case_toml``, as the file's CaseError (said in one
    line: what failed and, for an error of ours, that it is one)."""
    if isinstance(exc, CaseError):
        return exc
    if isinstance(exc, RecursionError):
        return CaseError(case_toml, None, f"nested too deeply to read ({_first_line(exc)}); "
                                          "a case file's tables and lists nest a few levels")
    if isinstance(exc, OSError):
        reason = exc.strerror or _first_line(exc)
        return CaseError(case_toml, None, f"cannot read a file the case names: {reason}")
    if isinstance(exc, MemoryError):
        return CaseError(case_toml, None, "too large to load (out of memory)")
    return CaseError(
        case_toml, None,
        f"cannot be loaded: {type(exc).__name__}: {_first_line(exc)} (an error of "
        "pytest-stedge on this file: please report it with the file)",
    )


def one_case(load: Callable[P, T]) -> Callable[P, T]:
    """Wrap a loader of one case file (its first :class:`~pathlib.Path` or ``str``
    argument): any exception it raises becomes that file's CaseError
    (KeyboardInterrupt and SystemExit pass)."""

    @functools.wraps(load)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return load(*args, **kwargs)
        except CaseError:
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: any failure is the file's
            raise case_failure(_case_file(args, kwargs), exc) from None

    return guarded


def _case_file(args: tuple[object, ...], kwargs: dict[str, object]) -> str:
    for value in (*args, *kwargs.values()):
        if isinstance(value, Path):
            return str(value)
    return next((v for v in (*args, *kwargs.values()) if isinstance(v, str)), "case.toml")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]

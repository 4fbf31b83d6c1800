"""Numbers read from tool output: sizes with their rounding, and figures no float can hold.

A size printed ``3.936 MB`` is only known to half its last digit (±524 B); ``4,833 B`` is
exact. :func:`parse_size_precise` returns both, so the text parser can prefer the exact
figure and mark the others approximate (``memory.precision`` in the Result).

A figure that does not fit a float (an integer of 400 digits, ``1e999``) or that Python
refuses to convert (more than 4,300 digits) is not something the tool wrote: it raises
:class:`FigureError`, which the parsers turn into a ReportParseError naming file and line.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from typing import Any

# Python refuses int() of longer digit strings (sys.int_info.default_max_str_digits).
MAX_DIGITS = getattr(sys.int_info, "default_max_str_digits", 4300) or 4300
# The largest integer a float holds without overflowing.
_FLOAT_LIMIT = 2**1024

# Size units as the tool prints them; kB/KiB/KBytes are all 1024 bytes (a 240.000 kB pool
# is 245,760 bytes in c_info).
UNITS = {
    "b": 1,
    "bytes": 1,
    "byte": 1,
    "kb": 1024,
    "kib": 1024,
    "kbytes": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "mbytes": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
}
_SIZE = re.compile(
    r"(?<![\d.,])(-?[\d,]{1,40}(?:\.\d{1,40})?)\s*([KMG]?i?B(?:ytes)?|[kKMG]Bytes|Bytes|B)\b", re.IGNORECASE
)
_LITERALS = {"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan"}


class FigureError(ValueError):
    """A number in a tool output that no float can hold; ``literal`` is its text."""

    def __init__(self, literal: str, why: str) -> None:
        self.literal = literal
        shown = literal if len(literal) <= 40 else f"{literal[:20]}...{literal[-8:]}"
        super().__init__(f"figure {shown!r} ({len(literal)} characters) {why}")


def checked_int(text: str) -> int:
    """``int(text)`` for a string of digits, refusing what no float can hold."""
    digits = text.lstrip("+-")
    if len(digits) > MAX_DIGITS:
        raise FigureError(text, f"has more than {MAX_DIGITS} digits")
    value = int(text)
    if abs(value) >= _FLOAT_LIMIT:
        raise FigureError(text, "overflows a float")
    return value


def checked_float(text: str) -> float:
    """``float(text)``; ``inf``/``nan`` as printed are kept, a finite literal that overflows is refused."""
    value = float(text)
    if not math.isfinite(value) and text.strip().lower() not in _LITERALS:
        raise FigureError(text, "overflows a float")
    return value


def checked_number(value: Any) -> Any:
    """A JSON value unchanged, or FigureError when it is a number no float can hold."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _FLOAT_LIMIT:
        raise FigureError(str(value), "overflows a float")
    return value


def parse_size_precise(text: str) -> tuple[int, float] | None:
    """``'1.262 MB'`` -> ``(1323303, 524.288)``: bytes and how far they may be from the truth.

    The error is half the last printed digit in bytes (0 for a whole number of bytes).
    """
    match = _SIZE.search(text)
    if not match:
        return None
    literal = match.group(1).replace(",", "")
    unit = UNITS.get(match.group(2).lower())
    if unit is None or not literal.strip("-"):
        return None
    try:
        number = float(literal)
    except ValueError:
        return None
    if not math.isfinite(number) or abs(number) * unit >= 2.0**63:
        raise FigureError(match.group(1), "is not a size any memory holds")
    decimals = len(literal.split(".", 1)[1]) if "." in literal else 0
    error = 0.0 if unit == 1 and decimals == 0 else 0.5 * 10.0**-decimals * unit
    return round(number * unit), error


_BIG_EXPONENT = re.compile(r"[-+]?\d+(?:\.\d*)?[eE]\+?\d{3,}|-?Infinity")
_LONG_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")


def line_of(text: str, literal: str) -> int | None:
    """The 1-based line of ``text`` where the figure ``literal`` first appears.

    An infinite figure (``inf``, its literal lost when JSON was read) is looked for as a
    number with a 3-digit exponent that overflows, or ``Infinity``. None when not found.
    """
    index = -1
    if literal.lower().strip("+-") in ("inf", "infinity"):
        for match in _BIG_EXPONENT.finditer(text):
            if not math.isfinite(float(match.group(0).replace("Infinity", "inf"))):
                index = match.start()
                break
    elif literal:
        index = text.find(literal)
    return None if index < 0 else text.count("\n", 0, index) + 1


def line_of_long_digits(text: str) -> int | None:
    """The line of the first run of more than MAX_DIGITS digits (what ``int()`` refuses)."""
    match = _LONG_DIGITS.search(text)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def overflowing(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(field, literal) of every number in a Result that no float can hold."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from overflowing(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from overflowing(item, f"{where}[{index}]")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _FLOAT_LIMIT:
        yield where, str(value)

"""Shared helpers of the parsers: reading files, numbers, sizes, version banners, diagnostics."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError

from .diagnostics import extract_diagnostics, strip_ansi
from .figures import FigureError, checked_float, checked_int, parse_size_precise

__all__ = ["FigureError", "extract_diagnostics", "strip_ansi"]

# Versions whose formats the parsers were written against (stedgeai-formats.md §1.2).
# Legacy X-CUBE-AI (stm32ai) numbering runs 5.x -> 9.0; ST Edge AI Core restarts at 1.0.
# "STEdgeAI Core v9.0.0" (X-CUBE-AI 9.0) sits between the two numberings.
KNOWN_CORE_VERSIONS = {(1, 0), (2, 0), (2, 1), (2, 2), (3, 0), (4, 0), (9, 0)}
KNOWN_LEGACY_MAJORS = range(4, 9)

# Files larger than this are refused before they are read: the biggest real output in
# ../shared is 8 MB; a 200 MB junk "report" would otherwise cost about 1 GB of memory.
DEFAULT_MAX_MB = 64
MAX_MB_ENV = "STEDGE_PARSE_MAX_MB"

_CORE_BANNER = re.compile(
    r"ST\s?Edge\s?AI\s+Core\s+v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z_.]+))?(?:[ \t]+([0-9a-f]{6,40})\b)?"
)
_LEGACY_BANNER = re.compile(
    r"\((?:STM\.ai|stm\.ai|AI tools)\s+v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z_.]+))?\)"
)
_CUBEAI_COMPONENT = re.compile(r"^\s*STM32CubeAI\s+(\S+)", re.MULTILINE)

_INT = re.compile(r"[+-]?\d+")
_FIRST_INT = re.compile(r"-?\d[\d,]*")


def max_file_bytes() -> int:
    """The size above which an output file is refused: ``STEDGE_PARSE_MAX_MB`` MiB (default 64)."""
    text = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    if not math.isfinite(megabytes) or megabytes <= 0:
        megabytes = DEFAULT_MAX_MB
    return int(megabytes * 1024 * 1024)


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """Read ``path`` or raise ReportParseError naming it (also when it is over the size limit)."""
    limit = max_file_bytes() if limit is None else limit
    try:
        size = path.stat().st_size
        if size > limit:
            raise ReportParseError(
                path,
                f"file of {size / 1024 / 1024:.1f} MiB is over the {limit / 1024 / 1024:g} MiB "
                f"limit for stedgeai outputs (set {MAX_MB_ENV} to raise it)",
            )
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ReportParseError(path, f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > limit:  # grew while being read
        raise ReportParseError(path, f"file is over the {limit / 1024 / 1024:g} MiB limit")
    return data


def decode_text(path: Path, data: bytes) -> str:
    """Decode a tool output to text, undoing the encodings seen in the wild.

    UTF-16 captures (with BOM or NUL-interleaved), UTF-8 that was wrongly decoded as
    UTF-16-LE (CJK soup), and CubeMX logs whose spaces are U+00A0 are all recovered.
    A file with NUL bytes that is none of these is binary and refused.
    """
    head = data[:4096]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    elif b"\x00" in head:
        if head[1::2].count(0) > len(head) // 4:
            text = data.decode("utf-16-le", errors="replace")
        elif head[0::2].count(0) > len(head) // 4:
            text = data.decode("utf-16-be", errors="replace")
        else:
            raise ReportParseError(
                path, "binary file, not a text report or JSON written by stedgeai"
            )
    else:
        text = data.decode("utf-8", errors="replace")
        text = _undo_utf16_misread(text)
    text = text.removeprefix("\ufeff")
    return text.replace("\xa0", " ").replace("\r\n", "\n").replace("\r", "\n")


def _undo_utf16_misread(text: str) -> str:
    sample = text[:2000]
    if not sample:
        return text
    cjk = sum(1 for ch in sample if "\u3400" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    if cjk < len(sample) // 3:
        return text
    try:
        return text.encode("utf-16-le", errors="surrogatepass").decode("utf-8", errors="replace")
    except UnicodeError:
        return text


def is_progress_bar(line: str) -> bool:
    """A tqdm bar (``PASS:  92%|#####| 91/99 [...]``): an optional label of up to 20 word,
    ``.``, ``-`` or space characters, an optional ``:``, then 1-3 digits and ``%|``.

    Checked by hand from the ``%|`` backwards, in one pass: the equivalent regex backtracks
    over runs of spaces (about 1 ms on a blank 55-space line).
    """
    at = line.find("%|")
    if at < 1:
        return False
    head = line[:at]
    digits = len(head) - len(head.rstrip("0123456789"))
    if digits == 0:
        return False
    label = head[: len(head) - min(digits, 3)].rstrip()
    label = label.removesuffix(":")
    label = label.lstrip()
    return len(label) <= 20 and all(ch.isalnum() or ch in "_.- " for ch in label)


def clean_console(text: str) -> list[str]:
    """Split into lines without ANSI codes and tqdm progress bars."""
    lines = strip_ansi(text).split("\n")
    if "%|" in text:
        lines = [line for line in lines if "%|" not in line or not is_progress_bar(line)]
    return lines


def as_int(value: Any) -> int | None:
    """A JSON number as int; None for bools, strings, NaN and anything else.

    :raises FigureError: for an infinite figure (``1e999``) or one no float can hold.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            raise FigureError(repr(value), "overflows a float")
    elif abs(value) >= 2**1024:
        raise FigureError(str(value), "overflows a float")
    return int(value)


def normalize_target(value: str) -> str:
    """The ``--target`` name: reports print ``stm32n6npu``/``stm32u3hsp`` for the same runs."""
    target = value.strip().strip("'\"").lower()
    return re.sub(r"^(stm32n6)npu$|^(stm32u3)hsp$", lambda m: m.group(1) or m.group(2), target)


def parse_int(text: str) -> int | None:
    """``'21,004'`` -> 21004; ``'--'``, ``'n.a.'`` or garbage -> None.

    :raises FigureError: for digits no float can hold (the caller names file and line).
    """
    cleaned = text.strip().replace(",", "")
    if not cleaned or not _INT.fullmatch(cleaned):
        return None
    return checked_int(cleaned)


def parse_float(text: str) -> float | None:
    """A float from a table cell (``'0.000000073'``, ``'98.26%'``); None for ``n.a.``/``--``.

    :raises FigureError: for a finite literal that overflows (``1e999``); ``inf`` is kept.
    """
    cleaned = text.strip().replace(",", "").rstrip("%")
    try:
        return checked_float(cleaned)
    except FigureError:
        raise
    except ValueError:
        return None


def parse_size(text: str) -> int | None:
    """``'240.000 kB'`` -> 245760; ``'52 Bytes'`` -> 52; None when no size is there."""
    parsed = parse_size_precise(text)
    return None if parsed is None else parsed[0]


def first_int(text: str) -> int | None:
    """The first integer (with thousands commas) in ``text``."""
    match = _FIRST_INT.search(text)
    return parse_int(match.group(0)) if match else None


def parse_version_banner(text: str) -> dict[str, Any] | None:
    """Read the tool version from ``stedgeai --version`` output or a report's first lines.

    Accepts ``ST Edge AI Core v4.0.1-20581 7ed50de05``, ``STEdgeAI Core v9.0.0-19802`` and the
    old ``stm32ai`` banners (``... (STM.ai v7.2.0-RC5)``, ``(AI tools v5.0.0)``), with or without
    ANSI colour codes.

    :returns: ``{"version", "build"?, "revision"?, "family", "cubeai"?}`` or None.
    """
    head = strip_ansi(text[:8000])[:4000]
    info: dict[str, Any] | None = None
    match = _CORE_BANNER.search(head)
    if match:
        info = {"version": ".".join(match.group(1, 2, 3)), "family": "stedgeai"}
        if match.group(4):
            info["build"] = match.group(4)
        if match.group(5):
            info["revision"] = match.group(5)
    else:
        match = _LEGACY_BANNER.search(head)
        if match:
            info = {"version": ".".join(match.group(1, 2, 3)), "family": "stm32ai"}
            if match.group(4):
                info["build"] = match.group(4)
    if info is None:
        return None
    cube = _CUBEAI_COMPONENT.search(head)
    if cube:
        info["cubeai"] = cube.group(1)
    return info


def split_tool_version(value: str) -> dict[str, Any]:
    """``'2.2.0-20266 2adc00962'`` (c_info ``tools[].version``) -> version/build/revision."""
    match = re.match(r"\s*(\d+\.\d+\.\d+)(?:-([0-9A-Za-z_.]+))?(?:\s+([0-9a-f]{6,40}))?", value)
    if not match:
        return {}
    out: dict[str, Any] = {"version": match.group(1)}
    if match.group(2):
        out["build"] = match.group(2)
    if match.group(3):
        out["revision"] = match.group(3)
    return out


def version_warning(version: str | None, family: str = "stedgeai") -> dict[str, Any] | None:
    """A warning diagnostic when ``version`` is outside the versions the parsers know.

    :param family: ``"stedgeai"`` (ST Edge AI Core numbering) or ``"stm32ai"`` (X-CUBE-AI).
    """
    if not version:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if family == "stm32ai" and major in KNOWN_LEGACY_MAJORS:
        return None
    if family != "stm32ai" and (major, minor) in KNOWN_CORE_VERSIONS:
        return None
    return {
        "level": "warning",
        "code": "unknown-version",
        "kind": "UnknownVersion",
        "message": (
            f"stedgeai {version} is not a version pytest-stedge was written against "
            "(knows X-CUBE-AI 5.0-9.0 and ST Edge AI Core 1.0-4.0); figures read as far as recognised"
        ),
    }

"""Shared helpers of the parsers: reading files, numbers, sizes, version banners, diagnostics."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError

# Versions whose formats the parsers were written against (stedgeai-formats.md §1.2).
# Legacy X-CUBE-AI (stm32ai) numbering runs 5.x -> 9.0; ST Edge AI Core restarts at 1.0.
# "STEdgeAI Core v9.0.0" (X-CUBE-AI 9.0) sits between the two numberings.
KNOWN_CORE_VERSIONS = {(1, 0), (2, 0), (2, 1), (2, 2), (3, 0), (4, 0), (9, 0)}
KNOWN_LEGACY_MAJORS = range(4, 9)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# tqdm progress bars (PASS:  92%|...| 158/171 [...]) and other N%| bars; dropped whole.
_TQDM = re.compile(r"^\s*[\w.\- ]{0,20}:?\s*\d{1,3}%\|")

_CORE_BANNER = re.compile(
    r"ST\s?Edge\s?AI\s+Core\s+v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z_.]+))?(?:[ \t]+([0-9a-f]{6,40})\b)?"
)
_LEGACY_BANNER = re.compile(
    r"\((?:STM\.ai|stm\.ai|AI tools)\s+v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z_.]+))?\)"
)
_CUBEAI_COMPONENT = re.compile(r"^\s*STM32CubeAI\s+(\S+)", re.MULTILINE)

_DIAG_CODE = re.compile(r"\b(E\d{3})\((\w+)\):\s*(.*)")
_DIAG_PLAIN = re.compile(r"\b(INTERNAL ERROR|TOOL ERROR|LOAD ERROR):\s*(.*)")

# Size units as the tool prints them; kB/KiB/KBytes are all 1024 bytes (a 240.000 kB pool
# is 245,760 bytes in c_info).
_UNITS = {
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
    r"(-?[\d,]+(?:\.\d+)?)\s*([KMG]?i?B(?:ytes)?|[kKMG]Bytes|Bytes|B)\b", re.IGNORECASE
)


def read_bytes(path: Path) -> bytes:
    """Read ``path`` or raise ReportParseError naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ReportParseError(path, f"cannot read file: {exc.strerror or exc}") from exc


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


def clean_console(text: str) -> list[str]:
    """Split into lines without ANSI codes and tqdm progress bars."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    lines = text.split("\n")
    if "%|" in text:
        lines = [line for line in lines if not _TQDM.match(line)]
    return lines


def as_int(value: Any) -> int | None:
    """A JSON number as int; None for bools, strings, NaN/inf and anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def normalize_target(value: str) -> str:
    """The ``--target`` name: reports print ``stm32n6npu``/``stm32u3hsp`` for the same runs."""
    target = value.strip().strip("'\"").lower()
    return re.sub(r"^(stm32n6)npu$|^(stm32u3)hsp$", lambda m: m.group(1) or m.group(2), target)


def parse_int(text: str) -> int | None:
    """``'21,004'`` -> 21004; ``'--'``, ``'n.a.'`` or garbage -> None."""
    cleaned = text.strip().replace(",", "")
    if not cleaned or not re.fullmatch(r"[+-]?\d+", cleaned):
        return None
    return int(cleaned)


def parse_float(text: str) -> float | None:
    """A float from a table cell (``'0.000000073'``, ``'98.26%'``); None for ``n.a.``/``--``."""
    cleaned = text.strip().replace(",", "").rstrip("%")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value


def parse_size(text: str) -> int | None:
    """``'240.000 kB'`` -> 245760; ``'52 Bytes'`` -> 52; None when no size is there."""
    match = _SIZE.search(text)
    if not match:
        return None
    number = parse_float(match.group(1))
    unit = _UNITS.get(match.group(2).lower())
    if number is None or unit is None:
        return None
    return round(number * unit)


def first_int(text: str) -> int | None:
    """The first integer (with thousands commas) in ``text``."""
    match = re.search(r"-?\d[\d,]*", text)
    return parse_int(match.group(0)) if match else None


def parse_version_banner(text: str) -> dict[str, Any] | None:
    """Read the tool version from ``stedgeai --version`` output or a report's first lines.

    Accepts ``ST Edge AI Core v4.0.1-20581 7ed50de05``, ``STEdgeAI Core v9.0.0-19802`` and the
    old ``stm32ai`` banners (``... (STM.ai v7.2.0-RC5)``, ``(AI tools v5.0.0)``), with or without
    ANSI colour codes.

    :returns: ``{"version", "build"?, "revision"?, "family", "cubeai"?}`` or None.
    """
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    head = text[:4000]
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


def extract_diagnostics(text: str) -> list[dict[str, Any]]:
    """Collect tool errors from console output or a report.

    ``E<nnn>(Kind): message``, ``INTERNAL ERROR: ...``, ``TOOL ERROR: ...`` and the AI runner's
    ``LOAD ERROR: ...`` (board did not answer) become error diagnostics (each once, in order). ``E: ...`` lines are warnings the tool prints while
    succeeding and are ignored.
    """
    out: list[dict[str, Any]] = []
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    for line in text.splitlines():
        if "E" not in line or "ERROR" not in line and "(" not in line:
            continue
        match = _DIAG_CODE.search(line)
        if match:
            diag = {
                "level": "error",
                "code": match.group(1),
                "kind": match.group(2),
                "message": match.group(3).strip(),
            }
        else:
            plain = _DIAG_PLAIN.search(line)
            if not plain:
                continue
            kind = plain.group(1).title().replace(" ", "")
            diag = {"level": "error", "kind": kind, "message": plain.group(2).strip()}
        # Wrappers (AI Studio's "Run failed: ... LOAD ERROR: <msg>. Please check ...") repeat a
        # message with a tail: the same error is kept once.
        if not any(
            (d.get("code"), d["kind"]) == (diag.get("code"), diag["kind"])
            and (
                diag["message"].startswith(d["message"]) or d["message"].startswith(diag["message"])
            )
            for d in out
        ):
            out.append(diag)
    return out

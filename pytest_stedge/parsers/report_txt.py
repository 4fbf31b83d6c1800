"""Text reports (``<name>_<cmd>_report.txt``) and console captures of ``stedgeai``/``stm32ai``.

One reader for every version 5.0 -> 4.0: the version banner, the header, the
``Exec/report summary`` key/values, the model-table totals line, ``Requested memory size by
section``, the N6 sections (report_n6) and the validate sections (report_validate).
Console captures differ only by tqdm bars, ANSI codes, CubeMX log prefixes and U+00A0
spaces, which are removed first; a capture holding a generate then a validate run gives
one Result with the figures of both. Which of the figures a report states twice goes into
the Result is decided in :mod:`.text_memory`.

Every line is looked at once, with plain string tests before any regex, and no regex here
can backtrack over a run of spaces: parsing costs a few times reading the file.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError, SeveralRunsError
from pytest_stedge.result import Result, new_result

from . import report_n6, report_validate, text_memory
from .common import (
    FigureError,
    clean_console,
    extract_diagnostics,
    first_int,
    normalize_target,
    parse_int,
    parse_version_banner,
    version_warning,
)
from .figures import line_of
from .text_runs import echoed_command, split_runs

# "2026-06-16 21:38:16,979 [INFO] CmdLine:76 - " (STM32CubeMX log)
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d+\s+\[\w+\]\s+\S+\s+-\s?")
_SUMMARY = re.compile(r"Exec/report summary \((\w+)")
_TOTALS = re.compile(
    r"^\s*model(?:/c-model)?:\s*macc=([\d,\-]+)(?:/([\d,\-]+))?(?:\s+\S+%\))?\s+weights=([\d,\-]+)(?:/([\d,\-]+))?"
    r"(?:\s+\S+%\))?\s+activations=([\d,\-]+)(?:/([\d,\-]+))?"
)
_RAM_TOTAL = re.compile(r"=\s*([\d,]+)\s*\+\s*([\d,]+)\s*\+\s*([\d,]+)")
_SECTION_TITLE = re.compile(r'Requested memory size by section - "([^"]+)" target')
# ".../STEdgeAI/2.2/Utilities/..." or Developer Cloud's ".../X-CUBE-AI/2.2.0/Utilities/..." (core
# numbering, below the 5.x+ pack numbers).
_INSTALL_PATH = re.compile(
    r"[\\/](?:STEdgeAI(?:_Core)?|X-CUBE-AI)[\\/]([1-4]\.\d+(?:\.\d+)?)[\\/]Utilities[\\/]"
)
_MARKERS = (
    "Exec/report summary",
    "Evaluation report (summary)",
    "Epochs details",
    "Memory usage information",
    "Requested memory size by section",
    "ST.AI Profiling results",
    "Generated C-graph summary",
)
_MODEL_TYPES = ("onnx", "tflite", "keras")
_BANNER_START = re.compile(
    r"(?:ST\s?Edge\s?AI Core v\d|Neural Network Tools for STM32|stm32ai - Neural Network Tools)"
)
# Keys of the summary the Result uses; "key : value" lines are split by hand (a key may hold
# spaces, '#', '/', '(', ')', '.', '-').
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ #/().-")
_WANTED = frozenset(
    (
        "model file",
        "type",
        "model_name",
        "model_hash",
        "params #",
        "target/series",
        "macc",
        "weights (ro)",
        "activations (rw)",
        "ram (total)",
    )
)
# Developer Cloud names its service folder /tmp/rootDir-<uuid>/: two files naming the same
# one come from the same run.
_SERVICE_DIR = re.compile(r"rootDir-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def looks_like_report(lines: list[str]) -> bool:
    """Whether ``lines`` hold anything a stedgeai run printed.

    The banner or a section title must start a line: notes that merely quote a banner
    (a README, an index) are not tool output.
    """
    for line in lines:
        stripped = line.lstrip(" \t>")
        if (
            _BANNER_START.match(stripped)
            or stripped.startswith(_MARKERS)
            or stripped.startswith("model/c-model:")
        ):
            return True
    return False


def key_value(line: str) -> tuple[str, str] | None:
    """``' weights (ro)   :   497 B ...'`` -> ``('weights (ro)', '497 B ...')``, else None."""
    head, colon, rest = line.partition(":")
    if not colon or not rest[:1].isspace():
        return None
    key = head.strip()
    if not key or not key[0].isascii() or not key[0].isalpha() or not _KEY_CHARS.issuperset(key):
        return None
    return key, rest.strip()


def _strip_prefix(line: str) -> str:
    return _LOG_PREFIX.sub("", line) if line[:1].isdigit() else line


def _lines(text: str) -> list[str]:
    lines = clean_console(text)
    # a CubeMX log carries the prefix on every line: looking at its first lines is enough
    if any(_LOG_PREFIX.match(line) for line in lines[:50] if line[:1].isdigit()):
        lines = [_strip_prefix(line) for line in lines]
    return lines


def parse_text_report(path: Path, text: str) -> Result:
    """Parse a text report or console capture of one run into a Result.

    :raises SeveralRunsError: the text holds several runs (their Results in ``.runs``).
    :raises ReportParseError: when the text holds nothing stedgeai prints, or a figure in it
        no float can hold (naming the line).
    """
    runs = parse_text_runs(path, text)
    if len(runs) > 1:
        raise SeveralRunsError(path, runs)
    return runs[0]


def parse_text_runs(path: Path, text: str) -> list[Result]:
    """One Result per run of the tool the text holds (a console may hold several)."""
    lines = _lines(text)
    if not looks_like_report(lines):
        raise ReportParseError(path, "no stedgeai version banner or report section found", line=1)
    try:
        runs = [_parse(path, part) for part in split_runs(lines)]
    except FigureError as exc:
        raise ReportParseError(path, str(exc), line=line_of(text, exc.literal)) from None
    # A capture that starts after a run's banner (a CubeMX log of a generate, then the
    # validate it ran with its banner): one session of one install, when every banner agrees.
    versions = {(r.get("tool") or {}).get("version") for r in runs} - {None}
    if len(runs) > 1 and len(versions) == 1:
        known = next(r["tool"] for r in runs if (r.get("tool") or {}).get("version"))
        for run in runs:
            if not (run.get("tool") or {}).get("version"):
                run["tool"] = {**known, **(run.get("tool") or {})}
    return runs


def _install_version(text: str) -> str | None:
    """The version in the first install path (``.../X-CUBE-AI/2.2.0/Utilities/``) of ``text``."""
    at = text.find("Utilities")
    while at >= 0:
        match = _INSTALL_PATH.search(text, max(0, at - 40), at + 10)
        if match:
            return match.group(1)
        at = text.find("Utilities", at + 9)
    return None


# Words of every line _State acts on outside a live section: headers, the totals line, the
# compiler version. Found in the whole text at once; the lines between are skipped.
_HEADER_WORDS = (
    "summary (",
    "Model name -",
    "Generated C-graph summary",
    "Memory usage information",
    "Used memory ranges",
    "Compilation details",
    "Epochs details",
    "Requested memory size by section",
    "Compiler version:",
    "macc=",
    "Parameters",
)


def _header_lines(lines: list[str], joined: str) -> list[int]:
    """Sorted indexes of the lines holding a header word."""
    starts = [0, *accumulate(len(line) + 1 for line in lines)]
    found: set[int] = set()
    for word in _HEADER_WORDS:
        at = joined.find(word)
        while at >= 0:
            line = bisect_right(starts, at) - 1
            found.add(line)
            at = joined.find(word, starts[line + 1] if line + 1 < len(starts) else len(joined))
    return sorted(found)


def _parse(path: Path, lines: list[str]) -> Result:
    joined = "\n".join(lines)
    result = new_result("unknown")
    banner_line = next((line for line in lines if _BANNER_START.match(line.lstrip(" \t>"))), "")
    banner = parse_version_banner(banner_line) if banner_line else None
    diagnostics = extract_diagnostics(joined)
    if banner:
        result["tool"] = {k: banner[k] for k in ("version", "build", "revision") if k in banner}
    else:
        installed = _install_version(joined)
        if installed:  # Developer Cloud consoles print no banner, only the install path
            parts = installed.split(".")
            result["tool"] = {"version": ".".join((parts + ["0", "0"])[:3])}
    if "tool" in result:
        family = banner["family"] if banner else "stedgeai"
        warning = version_warning(result["tool"]["version"], family)
        if warning:
            diagnostics.append(warning)
    service = _SERVICE_DIR.search(joined)
    if service:
        result["run"] = {"service_dir": f"rootDir-{service.group(1)}"}
    state = _State(result)
    headers = _header_lines(lines, joined)
    index, count = 0, len(lines)
    while index < count:
        state.feed(lines[index])
        if state.dead:  # nothing to read before the next header: jump to it
            after = bisect_right(headers, index)
            index = headers[after] if after < len(headers) else count
        else:
            index += 1
    state.finish(lines, joined)
    if result["command"] == "unknown":
        result["command"] = echoed_command(lines) or (
            "validate" if result.get("validation") else "generate"
        )
    if diagnostics:
        result["diagnostics"] = diagnostics
    result["sources"] = [str(path)]
    return result


class _State:
    """Walks the lines once, remembering which section it is in."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.figures = text_memory.Figures()
        self.model: dict[str, Any] = {}
        self.section = ""
        self.summary = self.figures.summaries[0]  # rows before any header: a capture's start
        self.n6_memory: list[str] = []
        self.n6_epochs: list[str] = []
        self.sections: dict[str, Any] | None = None
        self.commands: list[str] = []
        self.started = False  # a header was seen: key/value rows now belong to a summary

    @property
    def dead(self) -> bool:
        """In a part of the text whose lines give nothing until the next header."""
        return self.started and self.section in ("", "compiler")

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            return
        if "summary (" in line:
            match = _SUMMARY.search(line)
            if match:
                self.section = "summary"
                self.started = True
                command = match.group(1).lower()
                self.commands.append(command)
                self.summary = text_memory.Summary(command)
                self.figures.summaries.append(self.summary)
                return
        first = stripped[0]
        if first == "P" and stripped.startswith("Parameters") and ":" in stripped:
            if not self.commands:
                self._parameters(stripped.split(":", 1)[1])
            return
        if first in "MGUCER" and self._section_start(stripped, line):
            return
        if first == "C" and stripped.startswith("Compiler version:"):
            words = stripped.split(":", 1)[1].split()
            if words:
                self.result.setdefault("tool", {}).setdefault("compiler", words[0])
            return
        if "macc=" in line:
            totals = _TOTALS.match(line)
            if totals:
                self._totals(totals)
                return
        section = self.section
        if section == "summary" or not section and not self.started:
            # Before any header too: captures may start mid-summary (CubeMX logs).
            if ":" in line:
                self._summary_row(line, stripped)
        elif section == "n6_memory":
            if stripped.startswith("===="):
                self.section = ""
            else:
                self.n6_memory.append(line)
        elif section == "n6_epochs":
            if stripped.startswith(("====", "Requested memory")):
                self.section = ""
            else:
                self.n6_epochs.append(line)
        elif section == "sections":
            self._section_row(stripped)

    def _section_start(self, stripped: str, line: str) -> bool:
        """Enter the section ``stripped`` opens; False when it opens none."""
        if stripped.startswith(("Model name -", "Generated C-graph summary")):
            self.section = ""
        elif stripped.startswith("Memory usage information"):
            self.section = "n6_memory"
        elif stripped.startswith(("Used memory ranges", "Compilation details")):
            self.section = "compiler"
        elif stripped.startswith("Epochs details"):
            self.section = "n6_epochs"
        elif stripped.startswith("Requested memory size by section"):
            title = _SECTION_TITLE.search(line)
            if not title:
                return False
            self.section = "sections"
            self.sections = {"target": title.group(1), "modules": {}}
        else:
            return False
        self.started = True
        return True

    def _parameters(self, value: str) -> None:
        args = value.split()
        if args and args[0] in ("analyze", "generate", "validate"):
            self.commands.append(args[0])
        for i, arg in enumerate(args[:-1]):
            if arg in ("--target", "--series"):
                self.result.setdefault("target", normalize_target(args[i + 1]))

    def _summary_row(self, line: str, stripped: str) -> None:
        if stripped.startswith("Memory-pools summary"):
            self.section = ""
            return
        pair = key_value(line)
        if pair is None:
            return
        key, value = pair[0].lower(), pair[1]
        if key not in _WANTED:
            return
        summary = self.summary
        if key == "model file":
            self.model.setdefault("file", re.split(r"[\\/]", value)[-1])
        elif key == "type":
            kind = value.split()[0].lower() if value else ""
            if kind in _MODEL_TYPES:
                self.model.setdefault("type", kind)
        elif key == "model_name":
            self.model.setdefault("name", value)
        elif key == "model_hash":
            self.model.setdefault("hash", value if value.startswith("0x") else f"0x{value}")
        elif key == "params #":
            params = first_int(value)
            if params is not None:
                self.model.setdefault("params", params)
        elif key == "target/series":
            summary.target = normalize_target(value) if value else None
            summary.npu = value.strip().lower().endswith("npu")
            self.result.setdefault("target", normalize_target(value))
        elif key == "macc":
            macc = first_int(value)
            if macc:  # N6 NPU summaries print 0 for "not computed"
                summary.values.setdefault("macc", macc)
        elif key in ("weights (ro)", "activations (rw)"):
            number = first_int(value)
            if number is not None:
                name = "weights_bytes" if key == "weights (ro)" else "activations_bytes"
                summary.values.setdefault(name, number)
        elif key == "ram (total)":
            ram = _RAM_TOTAL.search(value)
            if ram:
                summary.values.setdefault("io_bytes", [parse_int(ram.group(2)), parse_int(ram.group(3))])

    def _totals(self, match: re.Match[str]) -> None:
        macc = parse_int(match.group(2) or match.group(1))
        if macc:
            self.figures.totals.setdefault("macc", macc)
        if match.group(4) is not None:  # MCU "model/c-model:" line: the c-model figures
            for key, group in (("weights_bytes", 4), ("activations_bytes", 6)):
                value = parse_int(match.group(group) or "")
                if value is not None:
                    self.figures.totals.setdefault(key, value)

    def _section_row(self, stripped: str) -> None:
        assert self.sections is not None
        parts = stripped.rsplit(None, 4)
        if len(parts) != 5 or not all(p.replace(",", "").isdigit() for p in parts[1:]):
            if stripped.startswith("Summary -"):
                self.section = ""
            return
        values = [parse_int(p) or 0 for p in parts[1:]]
        self.sections["modules"][parts[0]] = dict(zip(("text", "rodata", "data", "bss"), values))

    def finish(self, lines: list[str], joined: str) -> None:
        result = self.result
        if self.n6_memory:
            self.figures.usage = report_n6.parse_memory_usage(self.n6_memory)
        if self.sections and self.sections["modules"]:
            self.figures.sections = self.sections
        memory, macc = self.figures.choose()
        if macc is not None:
            result["macc"] = macc
        if self.n6_epochs:
            epochs = report_n6.parse_epochs(self.n6_epochs)
            if epochs is not None:
                result["epochs"] = epochs
                result["neural_art"] = True
                result["software_ops"] = report_n6.software_ops(epochs)
        if "neural_art" not in result and result.get("target") == "stm32n6":
            # "target/series: stm32n6" (not stm32n6npu) and no epoch table: the software path
            stated = [s for s in self.figures.summaries if s.target]
            if stated and not any(s.npu for s in stated):
                result["neural_art"] = False
        if memory:
            result["memory"] = memory
        if self.model:
            result["model"] = self.model
        validation = report_validate.parse_validation(lines, joined)
        if validation.get("outputs") or "duration_ms" in validation:
            result["validation"] = validation
        if self.commands:
            result["command"] = "validate" if "validate" in self.commands else self.commands[-1]
        if validation.get("outputs"):
            result["command"] = "validate"

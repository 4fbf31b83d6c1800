"""Text reports (``<name>_<cmd>_report.txt``) and console captures of ``stedgeai``/``stm32ai``.

One reader for every version 5.0 -> 4.0: the version banner, the header, the
``Exec/report summary`` key/values, the model-table totals line, ``Requested memory size by
section``, the N6 sections (report_n6) and the validate sections (report_validate).
Console captures differ only by tqdm bars, ANSI codes, CubeMX log prefixes and U+00A0
spaces, which are removed first; a capture holding a generate then a validate run gives
one Result with the figures of both.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError
from pytest_stedge.result import Result, new_result

from . import report_n6, report_validate
from .common import (
    clean_console,
    extract_diagnostics,
    first_int,
    normalize_target,
    parse_int,
    parse_version_banner,
    version_warning,
)

# "2026-06-16 21:38:16,979 [INFO] CmdLine:76 - " (STM32CubeMX log)
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d+\s+\[\w+\]\s+\S+\s+-\s?")
_SUMMARY = re.compile(r"Exec/report summary \((\w+)")
_KV = re.compile(r"^\s*([A-Za-z][\w #/().-]*?)\s*:\s+(.*?)\s*$")
_TOTALS = re.compile(
    r"^\s*model(?:/c-model)?:\s*macc=([\d,\-]+)(?:/([\d,\-]+))?(?:\s+\S+%\))?\s+weights=([\d,\-]+)(?:/([\d,\-]+))?"
    r"(?:\s+\S+%\))?\s+activations=([\d,\-]+)(?:/([\d,\-]+))?"
)
_RAM_TOTAL = re.compile(r"=\s*([\d,]+)\s*\+\s*([\d,]+)\s*\+\s*([\d,]+)")
_SECTION_ROW = re.compile(r"^\s*(\S.*?)\s{2,}([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s*$")
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


def parse_text_report(path: Path, text: str) -> Result:
    """Parse a text report or console capture into a Result.

    :raises ReportParseError: when the text holds nothing stedgeai prints.
    """
    lines = [_LOG_PREFIX.sub("", line) for line in clean_console(text)]
    joined = "\n".join(lines)
    if not looks_like_report(lines):
        raise ReportParseError(path, "no stedgeai version banner or report section found", line=1)
    result = new_result("unknown")
    banner_line = next((line for line in lines if _BANNER_START.match(line.lstrip(" \t>"))), "")
    banner = parse_version_banner(banner_line) if banner_line else None
    diagnostics = extract_diagnostics(joined)
    if banner:
        result["tool"] = {k: banner[k] for k in ("version", "build", "revision") if k in banner}
    else:
        installed = _INSTALL_PATH.search(joined)
        if installed:  # Developer Cloud consoles print no banner, only the install path
            parts = installed.group(1).split(".")
            result["tool"] = {"version": ".".join((parts + ["0", "0"])[:3])}
    if "tool" in result:
        family = banner["family"] if banner else "stedgeai"
        warning = version_warning(result["tool"]["version"], family)
        if warning:
            diagnostics.append(warning)
    state = _State(result)
    for line in lines:
        state.feed(line)
    state.finish(lines)
    if result["command"] == "unknown":
        result["command"] = "validate" if result.get("validation") else "generate"
    if diagnostics:
        result["diagnostics"] = diagnostics
    result["sources"] = [str(path)]
    return result


class _State:
    """Walks the lines once, remembering which section it is in."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.memory: dict[str, Any] = {}
        self.model: dict[str, Any] = {}
        self.section = ""
        self.n6_memory: list[str] = []
        self.n6_epochs: list[str] = []
        self.sections: dict[str, Any] | None = None
        self.commands: list[str] = []

    def feed(self, line: str) -> None:
        stripped = line.strip()
        match = _SUMMARY.search(line)
        if match:
            self.section = "summary"
            self.commands.append(match.group(1).lower())
            return
        if stripped.startswith("Parameters") and ":" in stripped and not self.commands:
            self._parameters(stripped.split(":", 1)[1])
            return
        if stripped.startswith(("Model name -", "Generated C-graph summary")):
            self.section = ""
            return
        if stripped.startswith("Memory usage information"):
            self.section = "n6_memory"
            return
        if stripped.startswith(("Used memory ranges", "Compilation details")):
            self.section = "compiler"
            return
        if stripped.startswith("Epochs details"):
            self.section = "n6_epochs"
            return
        title = _SECTION_TITLE.search(line)
        if title:
            self.section = "sections"
            self.sections = {"target": title.group(1), "modules": {}}
            return
        if stripped.startswith("Compiler version:"):
            words = stripped.split(":", 1)[1].split()
            if words:
                self.result.setdefault("tool", {}).setdefault("compiler", words[0])
            return
        totals = _TOTALS.match(line)
        if totals:
            self._totals(totals)
            return
        if self.section == "summary" or not self.section:
            # Outside a known section too: captures may start mid-summary (CubeMX logs).
            self._summary_row(line)
        elif self.section == "n6_memory":
            if stripped.startswith("===="):
                self.section = ""
            else:
                self.n6_memory.append(line)
        elif self.section == "n6_epochs":
            if stripped.startswith(("====", "Requested memory")):
                self.section = ""
            else:
                self.n6_epochs.append(line)
        elif self.section == "sections":
            self._section_row(line)

    def _parameters(self, value: str) -> None:
        args = value.split()
        if args and args[0] in ("analyze", "generate", "validate"):
            self.commands.append(args[0])
        for i, arg in enumerate(args[:-1]):
            if arg in ("--target", "--series"):
                self.result.setdefault("target", normalize_target(args[i + 1]))

    def _summary_row(self, line: str) -> None:
        if line.strip().startswith("Memory-pools summary"):
            self.section = ""
            return
        match = _KV.match(line)
        if not match:
            return
        key, value = match.group(1).strip().lower(), match.group(2).strip()
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
            self.result.setdefault("target", normalize_target(value))
        elif key == "macc":
            macc = first_int(value)
            if macc:  # N6 NPU summaries print 0 for "not computed"
                self.result.setdefault("macc", macc)
        elif key == "weights (ro)":
            self._set_memory("weights_bytes", first_int(value))
        elif key == "activations (rw)":
            self._set_memory("activations_bytes", first_int(value))
        elif key == "ram (total)":
            ram = _RAM_TOTAL.search(value)
            if ram and "io_bytes" not in self.memory:
                self.memory["io_bytes"] = [parse_int(ram.group(2)), parse_int(ram.group(3))]

    def _set_memory(self, key: str, value: int | None) -> None:
        if value is not None:
            self.memory.setdefault(key, value)

    def _totals(self, match: re.Match[str]) -> None:
        macc = parse_int(match.group(2) or match.group(1))
        if macc:
            self.result.setdefault("macc", macc)
        if match.group(4) is not None:  # MCU "model/c-model:" line: the c-model figures
            self._set_memory("weights_bytes", parse_int(match.group(4)))
            self._set_memory("activations_bytes", parse_int(match.group(6) or ""))

    def _section_row(self, line: str) -> None:
        assert self.sections is not None
        match = _SECTION_ROW.match(line)
        if not match:
            if line.strip().startswith("Summary -"):
                self.section = ""
            return
        name = match.group(1).strip()
        values = [parse_int(match.group(i)) or 0 for i in range(2, 6)]
        self.sections["modules"][name] = dict(zip(("text", "rodata", "data", "bss"), values))

    def finish(self, lines: list[str]) -> None:
        result = self.result
        if self.n6_memory:
            usage = report_n6.parse_memory_usage(self.n6_memory)
            # Console captures print both the exact summary rows and these totals (rounded
            # to 3 decimals of kB/MB): the exact figures win, the totals fill report files.
            for key in ("weights_bytes", "activations_bytes", "pools"):
                if key in usage:
                    self.memory.setdefault(key, usage[key])
        if self.n6_epochs:
            epochs = report_n6.parse_epochs(self.n6_epochs)
            if epochs is not None:
                result["epochs"] = epochs
                result["neural_art"] = True
                result["software_ops"] = report_n6.software_ops(epochs)
        if self.sections and self.sections["modules"]:
            self.memory["sections"] = self.sections
        if self.memory:
            result["memory"] = self.memory
        if self.model:
            result["model"] = self.model
        validation = report_validate.parse_validation(lines)
        if validation.get("outputs") or "duration_ms" in validation:
            result["validation"] = validation
        if self.commands:
            result["command"] = "validate" if "validate" in self.commands else self.commands[-1]
        if validation.get("outputs"):
            result["command"] = "validate"

"""Legacy ``<name>_report.json`` (``report_version`` 1.1, X-CUBE-AI 6.0 -> ST Edge AI Core 2.0)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_stedge.result import Result, new_result

from .c_info import validation_from_metrics
from .common import (
    as_int,
    extract_diagnostics,
    normalize_target,
    split_tool_version,
    version_warning,
)


def is_report_json(doc: Any) -> bool:
    """Whether a parsed JSON document is a legacy report.json."""
    return (
        isinstance(doc, dict)
        and "report_version" in doc
        and ("rom_size" in doc or "exec_cmd" in doc)
    )


def _int(value: Any) -> int | None:
    return as_int(value)


def _tool(doc: dict[str, Any]) -> dict[str, Any]:
    tools = doc.get("tools_version")
    if isinstance(tools, dict):  # <= 8.1: {"major":7,"minor":2,"micro":0,"extra":"RC5"}
        parts = [tools.get(k) for k in ("major", "minor", "micro")]
        if all(isinstance(p, int) for p in parts):
            out: dict[str, Any] = {"version": ".".join(str(p) for p in parts)}
            if tools.get("extra"):
                out["build"] = str(tools["extra"])
            return out
        return {}
    if isinstance(tools, str):  # 9.0+: "2.0.0-20049"
        return split_tool_version(tools)
    return {}


def parse_report_json(path: Path, doc: dict[str, Any]) -> Result:
    """Turn a legacy report.json into a Result."""
    command = str(doc.get("exec_cmd") or "generate")
    result = new_result(command if command in ("analyze", "generate", "validate") else "generate")
    tool = _tool(doc)
    diagnostics: list[dict[str, Any]] = []
    if tool:
        result["tool"] = tool
        family = "stm32ai" if isinstance(doc.get("tools_version"), dict) else "stedgeai"
        warning = version_warning(tool.get("version"), family)
        if warning:
            diagnostics.append(warning)
    params = str(doc.get("cli_parameters") or "")
    target = re.search(r"--(?:target|series)[ =](\S+)", params)
    if target:
        result["target"] = normalize_target(target.group(1))
    model: dict[str, Any] = {}
    if doc.get("model_name"):
        model["name"] = str(doc["model_name"])
    files = doc.get("model_files")
    if isinstance(files, list) and files and isinstance(files[0], str):
        model["file"] = re.split(r"[\\/]", files[0])[-1]
    if doc.get("model_type"):
        model["type"] = str(doc["model_type"]).split()[0].lower()
    if doc.get("hash"):
        digest = str(doc["hash"])
        model["hash"] = digest if digest.startswith("0x") else f"0x{digest}"
    if _int(doc.get("model_n_params")):
        model["params"] = _int(doc.get("model_n_params"))
    if model:
        result["model"] = model
    memory: dict[str, Any] = {}
    rom = _int(doc.get("rom_size"))
    if rom is not None:
        memory["weights_bytes"] = rom
    ram = doc.get("ram_size")
    ram_value = _int(ram[0]) if isinstance(ram, list) and ram else _int(ram)
    if ram_value is not None:
        memory["activations_bytes"] = ram_value
    io = doc.get("ram_io_size")
    if isinstance(io, list) and len(io) == 2 and all(_int(v) is not None for v in io):
        memory["io_bytes"] = [_int(io[0]), _int(io[1])]
    if memory:
        result["memory"] = memory
    macc = _int(doc.get("rom_n_macc"))
    if macc:  # 0 on N6 NPU runs means "not computed"
        result["macc"] = macc
    metrics = doc.get("val_metrics")
    if isinstance(metrics, list):
        validation = validation_from_metrics(metrics)
        if validation:
            result["validation"] = validation
    errors = doc.get("error_str")
    if isinstance(errors, list):
        for message in errors:
            diagnostics.extend(
                extract_diagnostics(str(message))
                or [{"level": "error", "kind": "ToolError", "message": str(message)}]
            )
    elif isinstance(errors, str) and errors:
        diagnostics.extend(
            extract_diagnostics(errors)
            or [{"level": "error", "kind": "ToolError", "message": errors}]
        )
    if diagnostics:
        result["diagnostics"] = diagnostics
    result["sources"] = [str(path)]
    return result

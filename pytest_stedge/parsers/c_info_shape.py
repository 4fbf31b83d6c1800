"""The shape a c_info.json must have for its figures to be read, and what is said when it
does not: a section of the wrong type is read as empty, so without a word its figures
would silently give way to a text report's beside it.

The expected types are the ones every real c_info under ``../shared`` has (106 files,
1.0.0 to 4.0.0: ``environment``, ``memory_footprint`` and ``validation`` objects;
``graphs``, ``buffers``, ``memory_pools``, ``ec_blobs_info``, ``memory_accesses``,
``power_estimates`` and ``aton_execution_time`` lists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.result import Result

_OBJECT, _LIST = "an object", "a list"
SECTIONS: dict[str, str] = {
    "environment": _OBJECT,
    "memory_footprint": _OBJECT,
    "validation": _OBJECT,
    "graphs": _LIST,
    "buffers": _LIST,
    "memory_pools": _LIST,
    "ec_blobs_info": _LIST,
    "memory_accesses": _LIST,
    "power_estimates": _LIST,
    "aton_execution_time": _LIST,
}
# the figures a c_info is read for: byte counts, whole numbers >= 0
_FOOTPRINT_FIGURES = ("weights", "activations")
_SHOWN = 5


def with_shape_warning(result: Result, path: Path, doc: dict[str, Any]) -> Result:
    """``result`` (parsed from the c_info ``doc``) with the :func:`shape_diagnostic`, if any."""
    warning = shape_diagnostic(path, doc)
    if warning is not None:
        result["diagnostics"] = [*(result.get("diagnostics") or []), warning]
    return result


def shape_diagnostic(path: Path, doc: dict[str, Any]) -> dict[str, Any] | None:
    """A warning naming the file and each key whose value has the wrong shape (its
    figures are then not read); None for a well-formed file."""
    problems = shape_problems(doc)
    if not problems:
        return None
    more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    return {
        "level": "warning",
        "code": "c-info-shape",
        "kind": "MalformedCInfo",
        "message": f"{path.name}: not the shape stedgeai writes, so these parts were not "
        f"read: {'; '.join(problems[:_SHOWN])}{more}",
    }


def shape_problems(doc: dict[str, Any]) -> list[str]:
    """``[key] is X, expected Y`` for each part of ``doc`` of the wrong type."""
    problems = []
    for key, expected in SECTIONS.items():
        if key in doc and _kind(doc[key]) != expected:
            problems.append(f"[{key}] is {_kind(doc[key])}, expected {expected}")
    footprint = doc.get("memory_footprint")
    if isinstance(footprint, dict):
        for name in _FOOTPRINT_FIGURES:
            value = footprint.get(name)
            if name in footprint and not _byte_count(value):
                problems.append(f"[memory_footprint.{name}] is {value!r:.40}, expected a "
                                "whole number of bytes")
    for key in ("graphs", "buffers", "memory_pools"):
        problems += _entries(doc, key)
    graphs = doc.get("graphs")
    if isinstance(graphs, list) and graphs and isinstance(graphs[0], dict):
        nodes = graphs[0].get("nodes")
        if "nodes" in graphs[0] and not isinstance(nodes, list):
            problems.append(f"[graphs.0.nodes] is {_kind(nodes)}, expected a list")
        elif isinstance(nodes, list):
            bad = sum(1 for n in nodes if not isinstance(n, dict))
            if bad:
                problems.append(f"[graphs.0.nodes]: {bad} of {len(nodes)} entries are not objects")
    environment = doc.get("environment")
    if isinstance(environment, dict) and "tools" in environment:
        tools = environment["tools"]
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            problems.append(f"[environment.tools] is {_kind(tools)}, expected a list of objects")
    return problems


def _entries(doc: dict[str, Any], key: str) -> list[str]:
    value = doc.get(key)
    if not isinstance(value, list):
        return []
    bad = sum(1 for entry in value if not isinstance(entry, dict))
    return [f"[{key}]: {bad} of {len(value)} entries are not objects"] if bad else []


def _byte_count(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and value.is_integer() and value >= 0


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return _OBJECT
    if isinstance(value, list):
        return _LIST
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__

"""Merging the Results of one run's files: a figure comes from the first file that has it,
an exact figure replaces a rounded one, and a file of another model is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.result import Result


def _model_hash(result: Result) -> str | None:
    model = result.get("model") or {}
    digest = model.get("hash")
    return str(digest).lower() if digest else None


def _merge_memory(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """``mine`` filled from ``theirs``; an exact figure of theirs replaces a rounded one."""
    merged = dict(mine)
    precision = dict(mine.get("precision") or {})
    their_precision = theirs.get("precision") or {}
    for key, value in theirs.items():
        if key == "precision":
            continue
        if key not in merged:
            merged[key] = value
            if key in their_precision:
                precision[key] = their_precision[key]
        elif key in precision and their_precision.get(key, 0) < precision[key]:
            merged[key] = value
            if key in their_precision:
                precision[key] = their_precision[key]
            else:
                del precision[key]
    merged.pop("precision", None)
    if precision:
        merged["precision"] = precision
    return merged


def _merge_epochs(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """``mine``, or ``theirs`` when mine cannot count the epochs (a 3.x/4.x c_info whose EC
    blobs do not say how many epochs they run) and theirs can (the report's table)."""
    if "total" in mine or "total" not in theirs:
        return mine
    merged = dict(theirs)
    if "ec_blobs" in mine:
        merged.setdefault("ec_blobs", mine["ec_blobs"])
    return merged


def merge(results: list[Result]) -> Result:
    """Merge Results in priority order: a figure comes from the first Result that has it."""
    if not results:
        raise ValueError("merge() needs at least one Result")
    base: Result = {k: v for k, v in results[0].items()}
    diagnostics = list(base.get("diagnostics", []))
    sources = list(base.get("sources", []))
    commands = [r.get("command") for r in results]
    for other in results[1:]:
        mine, theirs = _model_hash(base), _model_hash(other)
        if mine and theirs and mine != theirs:
            # CubeMX .ai/ folders keep report.json files of earlier models: not this run.
            name = Path(other.get("sources", ["?"])[0]).name
            diagnostics.append(
                {
                    "level": "warning",
                    "code": "other-model",
                    "kind": "IgnoredFile",
                    "message": f"{name} ignored: model hash {theirs} is not this run's {mine}",
                }
            )
            continue
        for key, value in other.items():
            if key in ("diagnostics", "sources", "schema", "command"):
                continue
            if key not in base:
                base[key] = value
            elif key == "neural_art":
                base[key] = bool(base[key] or value)  # one file saw NPU epochs
            elif key == "memory" and isinstance(value, dict):
                base[key] = _merge_memory(base[key], value)
            elif key == "epochs" and isinstance(value, dict):
                base[key] = _merge_epochs(base[key], value)
            elif key in ("tool", "model", "validation", "run") and isinstance(value, dict):
                merged = dict(base[key])
                for sub, sub_value in value.items():
                    merged.setdefault(sub, sub_value)
                base[key] = merged
        for diag in other.get("diagnostics", []):
            if diag not in diagnostics:
                diagnostics.append(diag)
        sources.extend(s for s in other.get("sources", []) if s not in sources)
    if base.get("validation", {}).get("outputs") or "validate" in commands and "validation" in base:
        base["command"] = "validate"
    elif "generate" in commands:
        # CubeMX runs analyze then generate in one folder: the folder holds a generate.
        base["command"] = "generate"
    elif base.get("command") in (None, "unknown"):
        base["command"] = next((c for c in commands if c not in (None, "unknown")), "generate")
    if diagnostics:
        base["diagnostics"] = diagnostics
    base["sources"] = sources
    return base

"""Dispatch one file to its parser, and merge an output folder's files into one Result.

A folder's figures come from its ``*c_info.json`` first; text reports fill what c_info lacks
(the memory-by-section table, MACC on N6, the validation table), then legacy
``*_report.json``, then ``*_val_io.npz`` and validation CSVs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError
from pytest_stedge.result import Result

from . import c_info, report_json, report_txt, val_files
from .c_info_shape import with_shape_warning
from .common import decode_text, read_bytes
from .figures import FigureError, line_of, overflowing

_TEXT_SUFFIXES = {".txt", ".log", ".out", ""}
# Sub-folders a user may point at the parent of: the tool's default output and workspace.
_SUBFOLDERS = ("st_ai_output", "stm32ai_output", ".ai", "st_ai_ws/neural_art__*", "stm32ai_ws")
_MAX_LITERAL = 1_000_000


def parse_path(path: Path | str) -> Result:
    """Parse one stedgeai output file, or merge every output file of a folder.

    :param path: a report, c_info.json, report.json, npz or validation CSV; or a folder
        (``st_ai_output/``, a CubeMX ``.ai/`` folder, ``st_ai_ws/neural_art__network/``).
    :raises ReportParseError: unreadable/unknown file, or a folder without tool output.
    """
    path = Path(path)
    if path.is_dir():
        return parse_folder(path)
    if not path.exists():
        raise ReportParseError(path, "no such file or folder")
    return parse_file(path)


def parse_file(path: Path | str) -> Result:
    """Parse one file, recognised by its content (and its name for CSV/npz).

    :raises ReportParseError: the file is not something stedgeai wrote, or is damaged.
    """
    path = Path(path)
    data = read_bytes(path)
    if not data.strip():
        raise ReportParseError(path, "empty file")
    if data[:4] == b"PK\x03\x04" or path.suffix.lower() == ".npz":
        return val_files.parse_npz(path, data)
    text = decode_text(path, data)
    if path.suffix.lower() == ".csv":
        if not val_files.is_val_csv(path):
            raise ReportParseError(
                path, "CSV that is not a validate dump (<name>_val_{m,c}_{inputs,outputs}_<k>.csv)"
            )
        return val_files.parse_csv_files([path], [text])
    start = text.lstrip()[:1]
    if start == "{" or start == "[" and path.suffix.lower() == ".json":
        result = _parse_json(path, data)
    else:
        result = report_txt.parse_text_report(path, text)
    for where, literal in overflowing(result):
        shown = literal if len(literal) <= 40 else f"{literal[:20]}... ({len(literal)} digits)"
        raise ReportParseError(
            path, f"{where} = {shown} overflows a float", line=line_of(text, literal)
        )
    return result


def _parse_json(path: Path, data: bytes) -> Result:
    doc = c_info.load_json(path, data)
    try:
        if c_info.is_c_info(doc):  # a section of the wrong shape is said, never dropped
            return with_shape_warning(c_info.parse_c_info(path, doc), path, doc)
        if report_json.is_report_json(doc):
            _literal_metrics(doc)
            return report_json.parse_report_json(path, doc)
    except FigureError as exc:
        text = decode_text(path, data)
        raise ReportParseError(path, str(exc), line=line_of(text, exc.literal)) from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # Last line of defence against values of a type no tool version wrote.
        raise ReportParseError(
            path, f"unexpected JSON structure ({type(exc).__name__}: {exc})"
        ) from exc
    keys = sorted(doc)[:6] if isinstance(doc, dict) else type(doc).__name__
    raise ReportParseError(
        path,
        "JSON that stedgeai does not write as a result (expected a c_info.json with "
        f"'json_schema_version' or a report.json with 'report_version'; found {keys})",
        line=1,
    )


def _literal_metrics(doc: dict[str, Any]) -> None:
    # 7.2 wrote val_metrics as a Python repr string; literal_eval reads literals only.
    value = doc.get("val_metrics")
    if isinstance(value, str) and value.startswith("[") and len(value) < _MAX_LITERAL:
        try:
            doc["val_metrics"] = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            doc["val_metrics"] = []


def _candidates(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.is_file())
    if any(_kind(p) for p in files):
        return files
    for pattern in _SUBFOLDERS:
        for sub in sorted(folder.glob(pattern)):
            if sub.is_dir():
                inner = sorted(p for p in sub.iterdir() if p.is_file())
                if any(_kind(p) for p in inner):
                    return inner
    return files


# <name>_c_info.json, and AI Studio's <name>_<model>_c_info_generate.json / _analyze.json
_C_INFO_NAME = re.compile(r"c_info(?:_generate|_analyze)?\.json$")
_C_INFO_VALID_NAME = re.compile(r"c_info_valid(?:ate)?\.json$")


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if _C_INFO_NAME.search(name):
        return "c_info"
    if _C_INFO_VALID_NAME.search(name):
        return "c_info_valid"
    if name.endswith("_report.json"):
        return "report_json"
    if name.endswith("_val_io.npz"):
        return "npz"
    if val_files.is_val_csv(path):
        return "csv"
    if re.search(r"_(analyze|generate|validate)_report\.txt$", name):
        return "report_txt"
    return None


def parse_folder(folder: Path) -> Result:
    """Merge the tool outputs found in ``folder`` into one Result."""
    named: dict[str, list[Path]] = {}
    others: list[Path] = []
    for path in _candidates(folder):
        kind = _kind(path)
        if kind:
            named.setdefault(kind, []).append(path)
        elif path.suffix.lower() in _TEXT_SUFFIXES:
            others.append(path)
    results: dict[str, list[Result]] = {}
    for kind in ("c_info", "report_txt", "report_json", "npz"):
        for path in named.get(kind, []):
            results.setdefault(kind, []).append(parse_file(path))
    # 3.0+ writes <name>_c_info_valid.json (documented, never seen): read as a c_info when
    # it is one. Console captures and renamed reports (AI Studio's "<model>.txt") are used
    # when they turn out to be stedgeai output, skipped otherwise (SOURCE.txt, notes).
    for path in named.get("c_info_valid", []):
        try:
            valid = parse_file(path)
        except ReportParseError:
            continue
        results.setdefault("c_info", []).append(valid)
    for path in others:
        try:
            parsed = parse_file(path)
        except ReportParseError:
            continue
        results.setdefault("report_txt", []).append(parsed)
    if named.get("csv"):
        paths = named["csv"]
        texts = [decode_text(p, read_bytes(p)) for p in paths]
        results.setdefault("csv", []).append(val_files.parse_csv_files(paths, texts))
    if not results or set(results) == {"csv"} and not results["csv"][0].get("validation"):
        raise ReportParseError(
            folder,
            "no stedgeai output in this folder (looked for *c_info.json, *_report.txt, "
            "*_report.json, *_val_io.npz, validation CSVs and console captures)",
        )
    _refuse_several_runs(folder, results.get("report_txt", []))
    ordered = sorted(results.get("c_info", []), key=_c_info_rank)
    ordered += sorted(results.get("report_txt", []), key=_text_rank)
    for kind in ("report_json", "npz", "csv"):
        ordered += results.get(kind, [])
    merged = merge(ordered)
    if "validation" in merged:
        _validation_from_text(merged, results.get("report_txt", []))
    return merged


def _validation_from_text(merged: Result, texts: list[Result]) -> None:
    validation = dict(merged["validation"])
    for text in texts:
        other = text.get("validation") or {}
        # The per-sample mean the report prints ("duration : 0.018 ms by sample") is the
        # figure users read; c_info's graph exec_time is a sum over nodes and differs.
        if other.get("duration_ms") is not None:
            validation["duration_ms"] = other["duration_ms"]
        # c_info rows carry no tensor name before 3.0: take the report's ("'action', ...").
        ours, theirs = validation.get("outputs") or [], other.get("outputs") or []
        if (
            ours
            and len(ours) == len(theirs)
            and all(o.get("name", "").startswith("output_") for o in ours)
        ):
            validation["outputs"] = [
                {**o, "name": t.get("name", o["name"])} for o, t in zip(ours, theirs)
            ]
        if other:
            break
    merged["validation"] = validation


def _same_run(a: Result, b: Result) -> bool:
    """Whether two texts report one run: the same Developer Cloud service folder, or the
    same figures (each within the rounding the other was printed with)."""
    dir_a = (a.get("run") or {}).get("service_dir")
    dir_b = (b.get("run") or {}).get("service_dir")
    if dir_a and dir_b:
        return bool(dir_a == dir_b)
    mem_a, mem_b = a.get("memory") or {}, b.get("memory") or {}
    prec_a, prec_b = mem_a.get("precision") or {}, mem_b.get("precision") or {}
    for key in ("weights_bytes", "activations_bytes"):
        x, y = mem_a.get(key), mem_b.get(key)
        if x is not None and y is not None and abs(x - y) > prec_a.get(key, 0) + prec_b.get(key, 0):
            return False
    ep_a, ep_b = a.get("epochs") or {}, b.get("epochs") or {}
    return all(
        ep_a.get(k) is None or ep_b.get(k) is None or ep_a[k] == ep_b[k] for k in ("total", "ec")
    )


def _refuse_several_runs(folder: Path, texts: list[Result]) -> None:
    """Two reports of the same command from different runs (other service folder, or
    figures that differ beyond their rounding) are never mixed."""
    by_command: dict[str, list[Result]] = {}
    for text in texts:
        by_command.setdefault(text["command"], []).append(text)
    for command, group in by_command.items():
        if any(not _same_run(a, b) for i, a in enumerate(group) for b in group[i + 1 :]):
            names = ", ".join(Path(r["sources"][0]).name for r in group)
            raise ReportParseError(
                folder,
                f"holds {len(group)} different {command} runs ({names}); parse one of the files",
            )


def _model_hash(result: Result) -> str | None:
    model = result.get("model") or {}
    digest = model.get("hash")
    return str(digest).lower() if digest else None


def _c_info_rank(result: Result) -> tuple[int, int, int]:
    # Prefer the richest c_info (with memory footprint and epochs) as the base; of AI
    # Studio's generate and analyze c_info, the generate one.
    memory = result.get("memory") or {}
    return (
        0 if "weights_bytes" in memory else 1,
        0 if "epochs" in result else 1,
        _text_rank(result),
    )


def _text_rank(result: Result) -> int:
    return {"generate": 0, "analyze": 1, "validate": 2}.get(result.get("command", ""), 3)


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

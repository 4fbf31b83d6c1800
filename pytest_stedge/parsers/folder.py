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

from pytest_stedge.errors import ReportParseError, SeveralRunsError
from pytest_stedge.result import Result

from . import c_info, pool_split, report_json, report_txt, val_files
from .c_info_shape import with_shape_warning
from .common import decode_text, read_bytes
from .figures import FigureError, line_of, overflowing
from .merge import merge

_TEXT_SUFFIXES = {".txt", ".log", ".out", ""}
# Sub-folders a user may point at the parent of: the tool's default output and workspace.
_SUBFOLDERS = ("st_ai_output", "stm32ai_output", ".ai", "st_ai_ws/neural_art__*", "stm32ai_ws")
_MAX_LITERAL = 1_000_000


def parse_path(path: Path | str) -> Result:
    """Parse one stedgeai output file, or merge every output file of a folder, into the
    Result of the one run they hold.

    :param path: a report, c_info.json, report.json, npz or validation CSV; or a folder
        (``st_ai_output/``, a CubeMX ``.ai/`` folder, ``st_ai_ws/neural_art__network/``).
    :raises SeveralRunsError: the file or folder holds several runs (``parse_runs``).
    :raises ReportParseError: unreadable/unknown file, or a folder without tool output.
    """
    runs = parse_runs(path)
    if len(runs) > 1:
        raise SeveralRunsError(path, runs)
    return runs[0]


def parse_runs(path: Path | str) -> list[Result]:
    """One Result per run of the tool a file or folder holds, in the order they ran.

    A console capture may hold a generate and a validate; an output folder the reports of
    an analyze, a generate and a validate. Each is one run: its Result is read from that
    run's files only, never merged with another run's.

    :raises ReportParseError: unreadable/unknown file, or a folder without tool output.
    """
    path = Path(path)
    if path.is_dir():
        return parse_folder_runs(path)
    if not path.exists():
        raise ReportParseError(path, "no such file or folder")
    return parse_file_runs(path)


def parse_file(path: Path | str) -> Result:
    """Parse one file of one run, recognised by its content (and its name for CSV/npz).

    :raises SeveralRunsError: a console capture holding several runs (``parse_file_runs``).
    :raises ReportParseError: the file is not something stedgeai wrote, or is damaged.
    """
    runs = parse_file_runs(path)
    if len(runs) > 1:
        raise SeveralRunsError(path, runs)
    return runs[0]


def parse_file_runs(path: Path | str) -> list[Result]:
    """Each run one file holds (only a console capture holds more than one)."""
    path = Path(path)
    data = read_bytes(path)
    if not data.strip():
        raise ReportParseError(path, "empty file")
    if data[:4] == b"PK\x03\x04" or path.suffix.lower() == ".npz":
        return [val_files.parse_npz(path, data)]
    text = decode_text(path, data)
    if path.suffix.lower() == ".csv":
        if not val_files.is_val_csv(path):
            raise ReportParseError(
                path, "CSV that is not a validate dump (<name>_val_{m,c}_{inputs,outputs}_<k>.csv)"
            )
        return [val_files.parse_csv_files([path], [text])]
    start = text.lstrip()[:1]
    if start == "{" or start == "[" and path.suffix.lower() == ".json":
        results = [_parse_json(path, data)]
    else:
        results = report_txt.parse_text_runs(path, text)
    for result in results:
        for where, literal in overflowing(result):
            shown = literal if len(literal) <= 40 else f"{literal[:20]}... ({len(literal)} digits)"
            raise ReportParseError(
                path, f"{where} = {shown} overflows a float", line=line_of(text, literal)
            )
    return results


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
    """Merge the tool outputs found in ``folder`` into the Result of its one run.

    :raises SeveralRunsError: the folder holds several runs (``parse_folder_runs``).
    """
    runs = parse_folder_runs(folder)
    if len(runs) > 1:
        raise SeveralRunsError(folder, runs)
    return runs[0]


def parse_folder_runs(folder: Path) -> list[Result]:
    """The runs of an output folder, each merged from its own files.

    The text reports and consoles say which runs the folder holds. When they are all of
    one command, every file of the folder is that run's (CubeMX keeps an analyze c_info
    beside the generate it ran next). When they are of several commands (an AI Studio
    ``st_ai_output`` with analyze, generate and validate reports, or a console holding a
    generate and a validate), each run takes the files of its own command; a file of a
    command no report shows is a run of its own.
    """
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
            results.setdefault(kind, []).extend(parse_file_runs(path))
    # 3.0+ writes <name>_c_info_valid.json (documented, never seen): read as a c_info when
    # it is one. Console captures and renamed reports (AI Studio's "<model>.txt") are used
    # when they turn out to be stedgeai output, skipped otherwise (SOURCE.txt, notes).
    for path in named.get("c_info_valid", []):
        try:
            valid = parse_file_runs(path)
        except ReportParseError:
            continue
        results.setdefault("c_info", []).extend(valid)
    for path in others:
        try:
            parsed = parse_file_runs(path)
        except ReportParseError:
            continue
        results.setdefault("report_txt", []).extend(parsed)
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
    commands = list(dict.fromkeys(t["command"] for t in results.get("report_txt", [])))
    if len(commands) < 2:
        return [_merge_run(folder, results)]
    runs = []
    for command in _in_run_order(commands):
        mine = {kind: [r for r in found if _run_command(r) == command]
                for kind, found in results.items()}  # fmt: skip
        runs.append(_merge_run(folder, mine))
    shown = set(commands)
    for kind in ("c_info", "report_json", "npz", "csv"):
        for other in results.get(kind, []):
            if _run_command(other) not in shown:
                runs.append(_merge_run(folder, {kind: [other]}))
    return runs


_RUN_ORDER = {"analyze": 0, "generate": 1, "validate": 2}


def _in_run_order(commands: list[str]) -> list[str]:
    # The order a user runs them in (analyze, generate, then validate), whatever the files'.
    return sorted(commands, key=lambda c: _RUN_ORDER.get(c, 3))


def _run_command(result: Result) -> str:
    # Validation dumps (npz, CSV) are a validate's; the others state their command.
    if any(Path(s).suffix.lower() in (".npz", ".csv") for s in result.get("sources", [])):
        return "validate"
    return str(result.get("command", ""))


def _merge_run(folder: Path, results: dict[str, list[Result]]) -> Result:
    """One run's Result from its files: c_info first, then its text reports, report.json,
    then validation dumps."""
    _refuse_several_runs(folder, results.get("report_txt", []))
    ordered = sorted(results.get("c_info", []), key=_c_info_rank)
    ordered += sorted(results.get("report_txt", []), key=_text_rank)
    for kind in ("report_json", "npz", "csv"):
        ordered += results.get(kind, [])
    merged = merge(ordered)
    _split_against_report(merged, results.get("report_txt", []))
    if "validation" in merged:
        _validation_from_text(merged, results.get("report_txt", []))
    return merged


def _split_against_report(merged: Result, texts: list[Result]) -> None:
    """A c_info whose pools hold weights in RAM is split from its buffers: the report's
    per-pool lines are the tool's own split, kept where exact; disagreement is said."""
    memory = merged.get("memory") or {}
    if not memory.get("split_from_buffers"):
        return
    for text in texts:
        pools = (text.get("memory") or {}).get("pools") or []
        if any("weights_bytes" in p for p in pools):
            memory = dict(memory)
            name = Path(text["sources"][0]).name
            found = pool_split.compare_with_report(memory, pools, name)
            merged["memory"] = memory
            if found:
                merged["diagnostics"] = [*merged.get("diagnostics", []), *found]
            return


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

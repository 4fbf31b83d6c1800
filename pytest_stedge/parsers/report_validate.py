"""Validate sections of text reports and consoles: the evaluation table and the profiling summary."""

from __future__ import annotations

import re
from typing import Any

from .common import parse_float

_METRICS = ("acc", "rmse", "mae", "l2r", "mean", "std", "snr", "nse", "cos")
_MODE = re.compile(r"\(AI RUNNER\).*?mode=(\w+)", re.IGNORECASE)
_SAMPLES = re.compile(
    r"^\s*(?:nb sample\(s\)\s*:\s*(\d{1,12})|Results for (\d{1,12}) inference\(s\))"
)
_DURATION = re.compile(r"^\s*duration\s*:\s*([\d.]{1,40})\s*ms")
_DEVICE = re.compile(r"^\s*device(?:\.desc)?\s*:(.*)$")
_ROW_LABEL = re.compile(
    r"^(.*?(?:c-model|original model|X-cross|reference)\s*#\s*\d+)", re.IGNORECASE
)


# Words that start a line _profiling reads: found in the whole text, so that only those
# lines are looked at.
_PROFILING_WORDS = ("RUNNER", "runner", "nb sample", "Results for", "duration", "device")
_TABLE = "Evaluation report (summary)"


def parse_validation(lines: list[str], text: str | None = None) -> dict[str, Any]:
    """Read mode, device, samples, duration and the ``Evaluation report (summary)`` table.

    :param text: ``"\\n".join(lines)`` when the caller has it (saves joining again).
    """
    if text is None:
        text = "\n".join(lines)
    validation: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    tables = _tables(text)
    for line in _profiling_lines(text, [(start, stop) for start, stop, _ in tables]):
        _profiling(line, validation)
    for _, _, table_rows in tables:
        rows += table_rows
    if rows:
        outputs = [_output(r) for r in rows if r["desc"].lower().startswith("x-cross")]
        if not outputs:
            outputs = [_output(r) for r in rows if "c-model" in r["desc"].lower()]
        validation["outputs"] = outputs
        validation["rows"] = rows
    return validation


def _line_at(text: str, at: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return start, len(text) if end < 0 else end


def _tables(text: str) -> list[tuple[int, int, list[dict[str, Any]]]]:
    """Each evaluation table: (offset of its title line, offset after its last line, rows)."""
    tables: list[tuple[int, int, list[dict[str, Any]]]] = []
    at = text.find(_TABLE)
    while at >= 0:
        start, end = _line_at(text, at)
        if text[start:end].strip().startswith(_TABLE):
            used, rows = _table(text[end + 1 :].split("\n"))
            stop = min(len(text), end + 1 + sum(len(line) + 1 for line in used))
            tables.append((start, stop, rows))
            end = stop
        at = text.find(_TABLE, end)
    return tables


def _profiling_lines(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The lines holding a profiling word, in text order, outside the evaluation tables."""
    found: dict[int, int] = {}
    for word in _PROFILING_WORDS:
        at = text.find(word)
        while at >= 0:
            start, end = _line_at(text, at)
            found[start] = end
            at = text.find(word, end)
    return [
        text[start : found[start]]
        for start in sorted(found)
        if not any(lo <= start < hi for lo, hi in spans)
    ]


def _table(lines: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The lines one evaluation table spans (after its title) and its rows."""
    rows: list[dict[str, Any]] = []
    columns: list[str] | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("---"):
            if columns is not None and rows and not stripped:
                return lines[: index + 1], rows
            continue
        if columns is None:
            words = stripped.split()
            if words and words[0] == "Output":
                columns = words[1:]
                continue
            if stripped.startswith("NOT EVALUATED"):
                return lines[: index + 1], rows
            continue
        row = _row(stripped, columns)
        if row is None:
            return lines[: index + 1], rows
        rows.append(row)
    return lines, rows


def _profiling(line: str, validation: dict[str, Any]) -> None:
    match = _MODE.search(line)
    if match:
        mode = match.group(1).lower()
        validation["mode"] = "host" if mode in ("host", "x86") else "target"
        return
    match = _SAMPLES.match(line)
    if match:
        validation["samples"] = int(match.group(1) or match.group(2))
        return
    match = _DURATION.match(line)
    if match:
        value = parse_float(match.group(1))
        if value is not None:
            validation["duration_ms"] = value
        return
    match = _DEVICE.match(line)
    if match and "device" not in validation and match.group(1).strip():
        validation["device"] = match.group(1).strip()


def _row(text: str, columns: list[str]) -> dict[str, Any] | None:
    label = _ROW_LABEL.match(text)
    if not label:
        return None
    rest = text[label.end() :].strip()
    # Cells are separated by 2+ spaces; the tensor cell (last) may hold single spaces.
    cells = re.split(r"\s{2,}", rest, maxsplit=len(columns) - 1) if rest else []
    row: dict[str, Any] = {"desc": label.group(1).strip()}
    for name, cell in zip(columns, cells):
        if name in _METRICS:
            value = parse_float(cell)
            if value is not None:
                row[name] = value
        elif name == "tensor":
            tensor = re.match(r"'?([^',]+)'?", cell.strip())
            if tensor:
                row["name"] = tensor.group(1)
    return row


def _output(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k in _METRICS}
    match = re.search(r"#\s*(\d+)", row["desc"])
    out["name"] = row.get("name") or (f"output_{match.group(1)}" if match else row["desc"])
    return out

"""Validate sections of text reports and consoles: the evaluation table and the profiling summary."""

from __future__ import annotations

import re
from typing import Any

from .common import parse_float

_METRICS = ("acc", "rmse", "mae", "l2r", "mean", "std", "snr", "nse", "cos")
_MODE = re.compile(r"\(AI RUNNER\).*?mode=(\w+)", re.IGNORECASE)
_SAMPLES = re.compile(r"^\s*(?:nb sample\(s\)\s*:\s*(\d+)|Results for (\d+) inference\(s\))")
_DURATION = re.compile(r"^\s*duration\s*:\s*([\d.]+)\s*ms")
_DEVICE = re.compile(r"^\s*(?:device(?:\.desc)?)\s*:\s*(.+?)\s*$")
_ROW_LABEL = re.compile(
    r"^(.*?(?:c-model|original model|X-cross|reference)\s*#\s*\d+)", re.IGNORECASE
)


def parse_validation(lines: list[str]) -> dict[str, Any]:
    """Read mode, device, samples, duration and the ``Evaluation report (summary)`` table."""
    validation: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    columns: list[str] | None = None
    in_table = False
    for line in lines:
        stripped = line.strip()
        if not in_table:
            if stripped.startswith("Evaluation report (summary)"):
                in_table, columns = True, None
                continue
            _profiling(line, validation)
            continue
        if not stripped or stripped.startswith("---"):
            if columns is not None and rows and not stripped:
                in_table = False
            continue
        if columns is None:
            words = stripped.split()
            if words and words[0] == "Output":
                columns = words[1:]
                continue
            if stripped.startswith("NOT EVALUATED"):
                in_table = False
            continue
        row = _row(stripped, columns)
        if row is None:
            in_table = False
            continue
        rows.append(row)
    if rows:
        outputs = [_output(r) for r in rows if r["desc"].lower().startswith("x-cross")]
        if not outputs:
            outputs = [_output(r) for r in rows if "c-model" in r["desc"].lower()]
        validation["outputs"] = outputs
        validation["rows"] = rows
    return validation


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
    if match and "device" not in validation:
        validation["device"] = match.group(1)


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

"""Validation data files: ``<name>_val_io.npz`` and ``<name>_val_{m,c}_outputs_<k>.csv``.

They hold the original-model (``m``) and C-model (``c``) outputs. The number of samples is
always read; metrics are computed (X-cross: C-model against the original model, with the
formulas of validation-and-protocol.md §1.2) only for float outputs, because integer
outputs would need the quantisation scales the tool used to dequantise them.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError
from pytest_stedge.result import Result, new_result

_NPZ_KEY = re.compile(r"^([mc])_outputs_(\d+)$")
_CSV_NAME = re.compile(r"_val_([mc])_(inputs|outputs)_(\d+)\.csv$")


def is_val_csv(path: Path) -> bool:
    """Whether ``path`` is named like a validate CSV dump."""
    return bool(_CSV_NAME.search(path.name))


def st_metrics(reference: Any, prediction: Any) -> dict[str, float]:
    """ST's validate metrics of ``prediction`` against ``reference`` (flattened float arrays)."""
    import numpy as np

    r = np.asarray(reference, dtype=np.float64).ravel()
    p = np.asarray(prediction, dtype=np.float64).ravel()
    if r.size == 0 or r.size != p.size:
        return {}
    e = r - p
    mse = float(np.mean(e * e))
    norm_p = float(np.linalg.norm(p))
    norm_r = float(np.linalg.norm(r))
    out = {"rmse": math.sqrt(mse), "mae": float(np.mean(np.abs(e))), "mean": float(np.mean(e))}
    if r.size > 1:
        out["std"] = float(np.std(e, ddof=1))
        var_r = float(np.var(r, ddof=1))
        if var_r > 0:
            out["nse"] = 1.0 - mse / var_r
    if norm_p > 0:
        out["l2r"] = float(np.linalg.norm(e)) / norm_p
    if norm_p > 0 and norm_r > 0:
        out["cos"] = float(np.dot(r, p)) / (norm_r * norm_p)
    energy = float(np.sum(e * e))
    out["snr"] = (
        10.0 * math.log10(float(np.sum(r * r)) / energy) if energy > 0 and norm_r > 0 else math.inf
    )
    return out


def _pairs_to_validation(pairs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    outputs = []
    samples = None
    for index in sorted(pairs):
        pair = pairs[index]
        c_out = pair.get("c")
        if c_out is None:
            continue
        samples = samples or int(c_out.shape[0]) if c_out.ndim else samples
        entry: dict[str, Any] = {"name": pair.get("name") or f"output_{index}"}
        m_out = pair.get("m")
        if m_out is not None and c_out.dtype.kind == "f" and m_out.dtype.kind == "f":
            entry.update(st_metrics(m_out, c_out))
        outputs.append(entry)
    validation: dict[str, Any] = {}
    if samples is not None:
        validation["samples"] = samples
    if any(len(o) > 1 for o in outputs):
        validation["outputs"] = outputs
    return validation


def parse_npz(path: Path, data: bytes) -> Result:
    """Read a ``*_val_io.npz`` written by validate."""
    import numpy as np

    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
        keys = list(archive.files)
        pairs: dict[int, dict[str, Any]] = {}
        for key in keys:
            match = _NPZ_KEY.match(key)
            if match:
                pairs.setdefault(int(match.group(2)), {})[match.group(1)] = np.asarray(archive[key])
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise ReportParseError(path, f"unreadable npz archive: {exc}") from exc
    if not pairs:
        raise ReportParseError(
            path, f"npz holds no m_outputs_<k>/c_outputs_<k> arrays (found {keys[:6]})"
        )
    result = new_result("validate")
    validation = _pairs_to_validation(pairs)
    if validation:
        result["validation"] = validation
    result["sources"] = [str(path)]
    return result


def load_csv(path: Path, text: str) -> tuple[Any, str | None]:
    """Load one validate CSV: ``#`` header lines (dtype, shape, tensor name) then rows.

    The tool writes only the header when a sample is too large ("w/o data"): the array
    is then None.
    """
    import numpy as np

    dtype = "float32"
    name = None
    rows: list[list[float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            match = re.match(r"#\s*dtype=(\w+)", line)
            if match:
                dtype = match.group(1)
            shape = re.match(r"#\s*\([\d, ]*\)/\w+.*,\s*([^,]+)$", line)
            if shape:
                name = shape.group(1).strip()
            continue
        try:
            rows.append([float(cell) for cell in line.split(",")])
        except ValueError as exc:
            raise ReportParseError(path, f"non-numeric CSV cell: {exc}", line=number) from exc
    if not rows:
        return None, name
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ReportParseError(
            path, f"validation CSV rows differ in length (first row has {width})"
        )
    try:
        kind = np.dtype(dtype)
    except TypeError:
        kind = np.dtype("float32")
    array = np.asarray(rows, dtype=np.float64)
    if kind.kind != "f":
        array = array.astype(np.int64)
    return array, name


def parse_csv_files(paths: list[Path], texts: list[str]) -> Result:
    """Read the CSV dumps of one validate run (any subset of m/c inputs/outputs)."""
    pairs: dict[int, dict[str, Any]] = {}
    for path, text in zip(paths, texts):
        match = _CSV_NAME.search(path.name)
        if not match:
            raise ReportParseError(
                path, "not a validate CSV (expected <name>_val_{m,c}_{inputs,outputs}_<k>.csv)"
            )
        array, name = load_csv(path, text)
        if match.group(2) != "outputs" or array is None:
            continue
        pair = pairs.setdefault(int(match.group(3)), {})
        pair[match.group(1)] = array
        if name and match.group(1) == "c":
            pair["name"] = name
    result = new_result("validate")
    validation = _pairs_to_validation(pairs) if pairs else {}
    if not validation and pairs:
        validation = {}
    if validation:
        result["validation"] = validation
    result["sources"] = [str(p) for p in paths]
    return result

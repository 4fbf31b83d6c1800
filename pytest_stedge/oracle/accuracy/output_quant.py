"""How the tool quantized a model's outputs, where it says so beside a ``*_val_io.npz``.

``stedgeai validate`` saves integer outputs as codes; its metrics are computed on
``(q - zp) * s``. The parameters are stated in two places of the same output folder:

- the validate report (``<name>_validate_report.txt``): the notes of each
  ``Cross accuracy report #k`` read ``r/int8 data are dequantized with
  s=0.0006660326616838574 zp=-128`` (full precision), and ``Saving validation data``
  lists ``c_outputs_k: ... scale=0.000666033 zp=-128`` (rounded: the fallback);
- ``<name>_c_info.json``: the ``intq`` of the buffers listed as the graph's outputs
  (generate and host-validate runs; a board run's c_info has no buffers).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_REPORT_HEAD = re.compile(r"Cross accuracy report #(\d+)")
_NOTE = re.compile(r"\b([rp])/u?int\d+ data are dequantized with s=(\S+) zp=(-?\d+)")
_SAVED = re.compile(r"^\s*c_outputs_(\d+):.*\bscale=(\S+) zp=(-?\d+)")


@dataclass(frozen=True)
class OutputQuant:
    """The dequantization of one output, and the file that states it."""

    scale: float
    zero_point: int
    source: str


def stated_quantization(npz: Path | str) -> dict[int, OutputQuant]:
    """Output number (1, 2, ... as in ``m_outputs_1``) -> its stated dequantization, read
    from the validate report or the c_info beside ``npz`` (those of the same C name
    first); empty when no file there states it."""
    npz = Path(npz)
    folder = npz.parent
    stem = npz.name.removesuffix("_val_io.npz")
    reports = _ordered(folder, f"{stem}_validate_report.txt", "*validate_report.txt")
    for report in reports:
        found = _from_report(report)
        if found:
            return found
    for c_info in _ordered(folder, f"{stem}_c_info.json", "*c_info.json"):
        found = _from_c_info(c_info)
        if found:
            return found
    return {}


def _ordered(folder: Path, own: str, pattern: str) -> list[Path]:
    others = sorted(p for p in folder.glob(pattern) if p.name != own and p.is_file())
    return ([folder / own] if (folder / own).is_file() else []) + others


def _from_report(path: Path) -> dict[int, OutputQuant]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    notes: dict[int, OutputQuant] = {}
    saved: dict[int, OutputQuant] = {}
    output = 1
    for line in text.splitlines():
        head = _REPORT_HEAD.search(line)
        if head:
            output = int(head.group(1))
            continue
        note = _NOTE.search(line)
        if note and output not in notes:
            quant = _quant(note.group(2), note.group(3), f"{path} (notes of output #{output})")
            if quant is not None:
                notes[output] = quant
            continue
        listed = _SAVED.match(line)
        if listed:
            number = int(listed.group(1))
            quant = _quant(listed.group(2), listed.group(3), f"{path} (c_outputs_{number})")
            if quant is not None:
                saved.setdefault(number, quant)
    return {**saved, **notes}  # the notes' full precision wins


def _quant(scale: str, zero_point: str, source: str) -> OutputQuant | None:
    try:
        value = float(scale.rstrip(","))
    except ValueError:
        return None
    return OutputQuant(value, int(zero_point), source) if value > 0 else None


def _from_c_info(path: Path) -> dict[int, OutputQuant]:
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    graphs = doc.get("graphs") or [{}]
    outputs = graphs[0].get("outputs") if isinstance(graphs[0], dict) else None
    buffers = {}
    for buffer in doc.get("buffers") or []:
        if isinstance(buffer, dict):
            buffers[buffer.get("id")] = buffer
            buffers[buffer.get("name")] = buffer
    found: dict[int, OutputQuant] = {}
    for number, ref in enumerate(outputs or [], start=1):
        intq = (buffers.get(ref) or {}).get("intq") or {}
        scales, offsets = intq.get("scales") or [], intq.get("offsets") or []
        if len(scales) == 1 and len(offsets) == 1 and float(scales[0]) > 0:
            name = buffers[ref].get("name", ref)
            found[number] = OutputQuant(
                float(scales[0]), int(offsets[0]), f"{path} (buffer {name} of output #{number})"
            )
    return found

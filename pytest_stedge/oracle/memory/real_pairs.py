"""Real (model, run) pairs: a folder of public ST Edge AI Core outputs beside the model file.

Layout of ``../shared/real-cases`` (INDEX.md there): one folder per case holding its
model file(s) and one sub-folder per run. A run is a folder whose outputs give an
activation figure; its model is the case file whose MD5 the run recorded (c_info
``signature`` or report ``model_hash``), never an ``_OE_`` intermediate. The target
and options are the run's own command line, as the outputs record it.

Used by the real-pairs test and by ``benchmarks/real_pairs_table.py``; parsers load
only when a folder is walked.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..deployment.recorded import deployment_options

__all__ = ["RealPair", "deployment_options", "pair_row", "real_pairs"]

MODEL_SUFFIXES = (".onnx", ".tflite")
_COMMAND = re.compile(r"(?:^|\s)(?:generate|analyze|validate)\s+.*--target\s+\S+")
# Report tables print pool use in kB with 3 decimals: a figure read from them is
# known to +-0.5 B * 1.024 (conv2d_64f_3x3 2.2.0: 12.062 kB for 12,352 B).
_ROUNDED_TOLERANCE = 1


@dataclass
class RealPair:
    """One run of the tool on one verified model."""

    case: str
    run: str  # the run folder, relative to the case
    model: Path
    md5: str
    version: str | None
    target: str | None
    options: list[str]
    activations: int
    tolerance: int  # bytes of rounding in the figure (0 when exact)
    c_infos: list[Path] = field(default_factory=list)  # c_info files with buffers
    folder: Path | None = None  # the run's folder (pool files named by the run are there)

    @property
    def label(self) -> str:
        """``case/model@run`` as the rules cite it."""
        if self.run == ".":  # a public-runs folder is one run with its model beside it
            return f"{self.case}/{self.model.name}"
        return f"{self.case}/{self.model.name}@{self.run}"


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _command_words(files: list[Path]) -> list[str]:
    for path in files:
        if path.suffix == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for tool in (data.get("environment") or {}).get("tools") or []:
                if tool.get("arguments"):
                    return str(tool["arguments"]).split()
    for path in files:
        if path.suffix != ".txt":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            if _COMMAND.search(line):
                return line.split()
    return []


def _has_buffers(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(data.get("buffers")) and bool(data.get("memory_pools"))


def real_pairs(root: Path) -> list[RealPair]:
    """Every verified (model, run) pair under ``root`` (a real-cases folder)."""
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.parsers import parse_runs

    pairs: list[RealPair] = []
    for case in sorted(p for p in root.iterdir() if p.is_dir()):
        models = {
            _md5(m): m
            for m in sorted(case.rglob("*"))
            if m.suffix in MODEL_SUFFIXES and "_OE_" not in m.name
        }
        if not models:
            continue  # e.g. n6-mobilenetv2-qdq-3versions: the source model is not public
        folders = sorted({p.parent for p in case.rglob("*") if p.is_file()})
        for folder in folders:
            if "st_ai_ws" in folder.relative_to(case).parts:
                continue  # the tool's workspace: part of the run in the folder above it
            files = sorted(
                p for p in folder.iterdir()
                if p.is_file() and (p.name.endswith("c_info.json") or p.suffix == ".txt")
                and p.name != "SOURCE.txt"
            )
            figure, exact, md5, version, target = None, False, None, None, None
            for path in files:
                try:
                    runs = parse_runs(path)
                except StedgeError:
                    continue
                # a log of a generate and a validate: the build's figures are the generate's
                result = next((r for r in runs if r.get("command") != "validate"), runs[0])
                hashed = str((result.get("model") or {}).get("hash") or "").lower()
                md5 = md5 or (hashed.removeprefix("0x") or None)
                version = version or (result.get("tool") or {}).get("version")
                target = target or result.get("target")
                value = (result.get("memory") or {}).get("activations_bytes")
                if isinstance(value, int) and (figure is None or not exact):
                    precise = path.suffix == ".json" or _exact_line(path)
                    if figure is None or precise:
                        figure, exact = value, precise
            if figure is None or md5 not in models:
                continue
            words = _command_words(files)
            pairs.append(
                RealPair(
                    case=case.name,
                    run=str(folder.relative_to(case)),
                    model=models[md5],
                    md5=md5,
                    version=version,
                    target=_target(words) or target,
                    options=words,
                    activations=figure,
                    tolerance=0 if exact else _ROUNDED_TOLERANCE,
                    c_infos=[p for p in files if p.suffix == ".json" and _has_buffers(p)],
                    folder=folder,
                )
            )
    return pairs


def _exact_line(path: Path) -> bool:
    text = path.read_text(encoding="utf-8", errors="replace")
    return bool(re.search(r"activations \(rw\)\s*:\s*[\d,]+ B", text))


def _target(words: list[str]) -> str | None:
    for k, word in enumerate(words):
        if word == "--target" and k + 1 < len(words):
            return words[k + 1]
    return None


def pair_row(pair: RealPair) -> dict[str, Any]:
    """The oracle's figures for one pair: floor, expected, the tool's figure, the ratio."""
    from .analysis import analyze_model

    report = analyze_model(
        pair.model, target=pair.target, options=deployment_options(pair.options, pair.folder)
    )
    floor = report["lower_bound_bytes"]
    return {
        "pair": pair.label,
        "version": pair.version,
        "family": report["deployment"]["family"],
        "floor": floor,
        "expected": report["expected_bytes"],
        "tool": pair.activations,
        "ratio": pair.activations / floor if floor else None,
        "report": report,
    }

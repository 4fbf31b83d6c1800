"""The oracle: facts, memory and reference inference from the model alone.

Public entry points (heavy modules load lazily):

- :func:`analyze_model` (``memory``): facts and activation memory of an ONNX model;
- :func:`explain_c_info` (``cinfo``): the tool's ``c_info.json`` buffers side by side;
- ``metrics.compute_metrics`` and ``stimulus.default_stimulus``.

Owns everything computed from the model alone, independently of the tool. May import
``errors`` and ``parsers`` (to read a c_info it explains); the pytest flow, the board
stage and the CLI import it. onnx, onnxruntime and numpy load inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def analyze_model(path: Path | str, *, details: bool = False) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.memory.analyze_model`."""
    from .memory import analyze_model as _analyze

    return _analyze(path, details=details)


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.cinfo.explain_c_info`."""
    from .cinfo import explain_c_info as _explain

    return _explain(model, c_info)


__all__ = ["analyze_model", "explain_c_info"]

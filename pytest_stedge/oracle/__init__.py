"""The oracle: facts, memory and reference inference from the model alone.

Public entry points (heavy modules load lazily):

- :func:`analyze_model` (``memory``): facts and activation memory of an ONNX or TFLite
  model as a target deploys it (rules per family: ``rules_n6_npu``, ``rules_n6_sw``,
  ``rules_mcu``, applied by ``deployed``);
- :func:`explain_c_info` (``cinfo``): the tool's ``c_info.json`` buffers side by side;
- ``metrics.compute_metrics`` and ``stimulus.default_stimulus``.

Owns everything computed from the model alone, independently of the tool. May import
``errors`` and ``parsers`` (to read a c_info it explains); the pytest flow, the board
stage and the CLI import it. onnx, onnxruntime, numpy, tflite and LiteRT load inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def analyze_model(
    path: Path | str,
    *,
    details: bool = False,
    target: str | None = None,
    options: Sequence[str] = (),
    mpool: Path | str | None = None,
) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.memory.analyze_model`."""
    from .memory import analyze_model as _analyze

    return _analyze(path, details=details, target=target, options=options, mpool=mpool)


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.cinfo.explain_c_info`."""
    from .cinfo import explain_c_info as _explain

    return _explain(model, c_info)


__all__ = ["analyze_model", "explain_c_info"]

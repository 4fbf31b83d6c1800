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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..case.model import Case
    from .deploy import Deployment


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


def case_deployment(case: Case) -> Deployment:
    """The deployment of a corpus case: its target, options, Neural-ART profile and mpool."""
    from .deploy import deployment_for

    options = list(case.options)
    mpool = None
    if case.neural_art is not None:
        options.append("--st-neural-art")
        mpool = case.neural_art.mpool
    elif case.memory_pool is not None:
        mpool = case.memory_pool
    return deployment_for(case.target, options, mpool)


def analyze_deployed(path: Path | str, deployment: Deployment) -> dict[str, Any]:
    """The oracle report of a model for an already chosen deployment."""
    from .memory import analyze_graph
    from .model_files import open_graph

    return analyze_graph(open_graph(path), deployment=deployment)


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.cinfo.explain_c_info`."""
    from .cinfo import explain_c_info as _explain

    return _explain(model, c_info)


__all__ = ["analyze_deployed", "analyze_model", "case_deployment", "explain_c_info"]

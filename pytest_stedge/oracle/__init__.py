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


def case_deployment(case: Case, run: dict[str, Any] | None = None) -> Deployment:
    """The deployment of a corpus case: its target, options, Neural-ART profile and mpool;
    with ``run`` (a recording the case replays), the deployment that run's command line
    states (its pool files are not public: the case's own, if any, stand for them)."""
    from .deploy import deployment_for, run_options

    mpool = None
    if case.neural_art is not None:
        mpool = case.neural_art.mpool
    elif case.memory_pool is not None:
        mpool = case.memory_pool
    if run is not None and states_deployment(run):
        target, options = run_options(run)
        return deployment_for(target or case.target, options, mpool)
    options = list(case.options)
    if case.neural_art is not None:
        options.append("--st-neural-art")
    return deployment_for(case.target, options, mpool)


def states_deployment(run: dict[str, Any]) -> bool:
    """Whether a recording says how the model was deployed: its command line, or at least
    whether the NPU ran (a validate log of a public run may state neither)."""
    result = run.get("result")
    return isinstance(run.get("options"), list) or (
        isinstance(result, dict) and result.get("neural_art") is not None
    )


def recorded_conflicts(case: Case, runs: list[dict[str, Any]]) -> list[str]:
    """How the case's own deployment contradicts the command lines of its recordings: one
    line per disagreeing recording (empty: they agree, or there are none)."""
    from .deploy import deployment_differences

    ours = case_deployment(case)
    lines = []
    for run in runs:
        if not states_deployment(run):
            continue
        theirs = case_deployment(case, run)
        differences = deployment_differences(ours, theirs)
        if differences:
            where = f"{run.get('version')} {run.get('stage')}"
            lines.append(f"the recording of {where}: {'; '.join(differences)} (the case vs the run)")
    return lines


def analyze_deployed(path: Path | str, deployment: Deployment) -> dict[str, Any]:
    """The oracle report of a model for an already chosen deployment."""
    from .memory import analyze_graph
    from .model_files import open_graph

    return analyze_graph(open_graph(path), deployment=deployment)


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.cinfo.explain_c_info`."""
    from .cinfo import explain_c_info as _explain

    return _explain(model, c_info)


__all__ = [
    "analyze_deployed", "analyze_model", "case_deployment", "explain_c_info", "recorded_conflicts"
]

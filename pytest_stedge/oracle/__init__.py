"""The oracle: what the model alone says, independently of the tool, one wing per question.

- ``model/``: the shared model reader (ONNX, TFLite, ST's ``_OE_`` models) and its facts;
- ``deployment/``: what a target, its options and an mpool mean, read by every question;
- ``memory/``: activation memory: the admissible floor, the expected plan in the mpool's
  pools, and the tool's own figure explained from its ``c_info.json``;
- ``placement/``: where each node runs on the STM32N6 (HW, EC, SW, hybrid) and why;
- ``accuracy/``: the default stimulus, reference inference, ST's metrics, and the first
  node or epoch where a board or host run diverges.

Public entry points here (heavy modules load lazily): :func:`analyze_model`,
:func:`analyze_deployed`, :func:`explain_c_info`, :func:`case_deployment`,
:func:`recorded_conflicts`. The question wings import ``model`` and ``deployment``,
never each other. The oracle may import ``errors`` and ``parsers`` (to read the runs it
explains); the pytest flow, the board stage and the CLI import it. onnx, onnxruntime,
numpy, tflite and LiteRT load inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..case.model import Case
    from .deployment.settings import Deployment


def analyze_model(
    path: Path | str,
    *,
    details: bool = False,
    target: str | None = None,
    options: Sequence[str] = (),
    mpool: Path | str | None = None,
) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.memory.analysis.analyze_model`."""
    from .memory.analysis import analyze_model as _analyze

    return _analyze(path, details=details, target=target, options=options, mpool=mpool)


def case_deployment(case: Case, run: dict[str, Any] | None = None) -> Deployment:
    """The deployment of a corpus case: its target, options, Neural-ART profile and mpool;
    with ``run`` (a recording the case replays), the deployment that run's command line
    states (its pool files are not public: the case's own, if any, stand for them)."""
    from .deployment.recorded import run_options
    from .deployment.settings import deployment_for

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
    from .deployment.settings import deployment_differences

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
    from .memory.analysis import analyze_graph
    from .model.files import open_graph

    return analyze_graph(open_graph(path), deployment=deployment)


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """See :func:`pytest_stedge.oracle.memory.explain.explain_c_info`."""
    from .memory.explain import explain_c_info as _explain

    return _explain(model, c_info)


__all__ = [
    "analyze_deployed", "analyze_model", "case_deployment", "explain_c_info", "recorded_conflicts"
]

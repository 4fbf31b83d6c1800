"""One item's steps, each a function of its inputs.

An item runs ``stage_result`` (replay a recording or run the tool: a Result) or
``oracle_result``; then ``attach_oracle`` (the oracle's figures beside the tool's),
``record_figures`` (the row the store keeps) and ``judge_item`` (expectations, baseline,
known bugs). The session state builds each step's inputs once per item
(:meth:`pytest_stedge.state.StedgeState.stage_inputs` and its siblings); no step reads the
state itself, so each can be called, and tested, with plain values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .errors import OracleError, ToolchainError
from .result import Result, flat_metrics, new_result
from .store.rows import ItemRow

if TYPE_CHECKING:
    from .bugs.registry import BugRegistry
    from .case.model import Case
    from .tool.discovery import Install
    from .tool.runner import StageRun
    from .verdict.gate import Baseline, Verdict

_ORACLE_FIGURES = ("lower_bound_bytes", "expected_bytes", "plan_bytes", "naive_bytes", "float_nodes")
_KERAS_SUFFIXES = (".h5", ".keras", ".hdf5")


@dataclass(frozen=True)
class OracleInputs:
    """What an item needs of the oracle: the report on the case's model as it is deployed."""

    model_here: bool  # False: a record-only case whose model is in none of the model folders
    missing_reason: str  # why the model is absent, and how to provide it ("" when present)
    report: Callable[[], dict[str, Any]]  # once per session and deployment; raises OracleError
    model: Path | None = None  # the model file (for the N6 placement prediction)


@dataclass(frozen=True)
class StageInputs:
    """What one toolchain stage needs: an install, or a recording to replay, and how to run."""

    recording: dict[str, Any] | None  # the recorded run of this (version, case, stage)
    install: Install | None
    case: Case | None  # with its model file; None: a record-only model that is absent
    board_connected: bool  # a --stedge-board is given (validate-target runs for real)
    missing_model_reason: str
    missing_tool_reason: str  # "" when an install or a recording is there
    workdir: Path
    timeout: float
    timeout_source: str  # what set the limit, for the message of a run that hit it
    board_desc: str | None


@dataclass(frozen=True)
class GateInputs:
    """What the verdict needs besides the figures: bugs, baseline, bands, --stedge-update."""

    registry: BugRegistry
    baseline: Baseline | None
    default_band: str
    metric_bands: Mapping[str, str]
    strict_baseline: bool
    update: bool


#: runs one stage (the ``pytest_stedge_run_stage`` hook):
#: (case, install, workdir, timeout, board_desc) -> StageRun
RunStage = Callable[["Case", "Install", Path, float, "str | None"], "StageRun"]


def new_row(nodeid: str, case: Case, stage: str, version: str | None, model_sha256: str) -> ItemRow:
    """The row of an item that has started (``running`` until the report says more)."""
    return ItemRow(
        nodeid=nodeid,
        case_name=case.name,
        stage=stage,
        version=version,
        outcome="running",
        # a bound some stage of the case checks is not warned about, even where that stage
        # did not run here (no board, no install): the case asks for it
        expect_keys=case.expect_keys(),
        checked=case.stage_keys(),
        case={
            "case_path": str(case.path),
            "model_path": str(case.model),
            "target": case.target,
            "description": case.description,
        },
        model_sha256=model_sha256,
        options_hash=case.options_hash(),
    )


def oracle_result(case: Case, oracle: OracleInputs, row: ItemRow) -> Result:
    """The oracle stage: the report on the model alone, or a skip saying what is missing.

    :raises OracleError: the model cannot be analysed (the row keeps the diagnostic).
    """
    if case.record_only and not oracle.model_here:
        pytest.skip(oracle.missing_reason)
    try:
        report = oracle.report()
        unresolved = report.get("unresolved_tensors")
        if unresolved:
            names = ", ".join(unresolved[:5])
            raise OracleError(
                f"{case.model}: unresolved shapes: {len(unresolved)} "
                f"tensor(s) ({names}) have no static size, so the floor would leave them out"
            )
    except OracleError as exc:
        row.result = new_result("oracle", diagnostics=[diagnostic("OracleError", str(exc))])
        if case.model.suffix.lower() in _KERAS_SUFFIXES:
            pytest.skip(str(exc))
        raise
    return new_result(
        "oracle",
        stage="oracle",
        target=case.target,
        model={"name": case.model.stem, "file": case.model.name},
        oracle=report,
    )


def replays(stage: str, inputs: StageInputs) -> bool:
    """Whether the stage replays its recording: no install, no model, or validate-target
    without a board."""
    if inputs.recording is None:
        return False
    no_board = stage == "validate-target" and not inputs.board_connected
    return inputs.install is None or inputs.case is None or no_board


def stage_result(
    case: Case, stage: str, version: str, inputs: StageInputs, row: ItemRow, run_stage: RunStage
) -> Result:
    """A toolchain stage's Result: the recording replayed where no live run can be made
    (no install, no model, or validate-target without a board), else the tool's run.

    :raises ToolchainError: the run failed (the row keeps its diagnostics).
    """
    recording, install, resolved = inputs.recording, inputs.install, inputs.case
    if install is not None and resolved is None and recording is None:
        pytest.skip(inputs.missing_model_reason)
    if install is None and recording is None:
        pytest.skip(inputs.missing_tool_reason)
    if recording is not None and replays(stage, inputs):
        return _replay(recording, row)
    assert install is not None and resolved is not None
    try:
        stage_run = run_stage(resolved, install, inputs.workdir, inputs.timeout, inputs.board_desc)
    except ToolchainError as error:
        _fail_run(error, stage, version, inputs.timeout_source, row)
    row.tool_seconds = stage_run.tool.seconds
    stage_run.result.setdefault("options", resolved.stated_options())
    return stage_run.result


def _replay(recording: dict[str, Any], row: ItemRow) -> Result:
    result: Result = recording["result"]
    row.recorded = True
    if isinstance(recording.get("options"), list):  # a public run's stated options
        result.setdefault("options", ["--target", str(result.get("target") or ""), *recording["options"]])
    corpus_sha = row.model_sha256
    if recording.get("corpus"):
        # a public run: its identity is the one its own outputs and command stated
        row.model_sha256 = recording["model_sha256"]
        row.options_hash = recording["options_hash"]
        if isinstance(recording.get("provenance"), dict):  # where the dashboard links it
            result.setdefault("provenance", recording["provenance"])
    else:
        # the identity the recording was checked against at ingest: a forced one (None)
        # or a model changed since never compares with other versions
        row.model_sha256 = recording.get("model_sha256")
        row.options_hash = recording.get("options_hash") or row.options_hash
    if (
        not recording.get("corpus")
        and row.model_sha256 != corpus_sha
        and recording.get("comparable", True)
    ):
        result.setdefault("diagnostics", []).append(
            diagnostic(
                "NotComparable",
                "the recording was made from a different model file than the corpus holds",
                level="warning",
            )
        )
    return result


def _fail_run(error: ToolchainError, stage: str, version: str, timeout_source: str, row: ItemRow) -> None:
    """Keep a failed run's diagnostics on the row and raise what the user reads (or skip
    a stage the tool refuses for this target)."""
    from .parsers import extract_diagnostics
    from .tool.runner import stage_refusal

    exc = error
    if exc.timed_out is not None and exc.reason is None:  # say which limit
        exc = ToolchainError(
            exc.argv, timed_out=exc.timed_out, output_tail=exc.output_tail,
            reason=f"the limit set by {timeout_source}",
        )
    if exc.returncode not in (None, 0) and stage_refusal(stage, exc.reason):
        # the tool says the stage does not apply to this target (the refusals it
        # documents, runner.STAGE_REFUSALS): a skip, not a regression
        pytest.skip(f"stedgeai {version} refuses {stage} here: {exc.reason}")
    diagnostics = extract_diagnostics(exc.output_tail)
    if exc.timed_out is not None:
        diagnostics.append(diagnostic("Timeout", exc.short()))
    row.result = new_result(
        "validate" if stage.startswith("validate") else stage,
        stage=stage,
        diagnostics=diagnostics or [diagnostic("ToolchainError", exc.short())],
    )
    raise exc from None


def attach_oracle(case: Case, oracle: OracleInputs, result: Result) -> None:
    """Put the oracle's figures beside the tool's (for ``activations_ratio``)."""
    if not case.oracle:
        return
    if case.record_only and not oracle.model_here:
        return  # no model here: the oracle item says so, once
    try:
        report = oracle.report()
    except OracleError as exc:
        result.setdefault("diagnostics", []).append(diagnostic("OracleError", str(exc), level="warning"))
        return
    result["oracle"] = {k: report[k] for k in _ORACLE_FIGURES if k in report}
    version = str((result.get("tool") or {}).get("version") or "")
    if version and oracle.model is not None and result.get("neural_art") and result.get("epochs"):
        from .oracle.placement.predict import placement_summary

        try:  # the predicted placement beside the real epochs (issue 27)
            result["oracle"]["placement"] = placement_summary(oracle.model, version, case.options)
        except OracleError as exc:
            result.setdefault("diagnostics", []).append(
                diagnostic("OracleError", f"placement: {exc}", level="warning"))


def record_figures(row: ItemRow, result: Result, started: float) -> dict[str, float]:
    """The Result and its flat metrics on the row; the item's time so far."""
    metrics = flat_metrics(result)
    row.result = result
    row.metrics = metrics
    row.duration_s = time.perf_counter() - started
    return metrics


def judge_item(
    case: Case, stage: str, version: str | None, result: Result, row: ItemRow, gate: GateInputs
) -> Verdict:
    """Expectations, baseline and known bugs on the row's figures; the findings and the
    changes against the baseline go on the row."""
    from .verdict.gate import judge

    verdict = judge(
        case=case,
        stage=stage,
        version=version,
        result=result,
        metrics=row.metrics,
        model_sha256=row.model_sha256,
        baseline=gate.baseline,
        default_band=gate.default_band,
        metric_bands=gate.metric_bands,
        strict_baseline=gate.strict_baseline,
        registry=gate.registry,
        options_hash=row.options_hash,
    )
    row.findings = verdict.findings
    row.checked += [key for key, _bound in case.keyed_bounds(stage, row.metrics)]
    # unchanged ones too: the summary counts them ("baseline 3.0.0: 187 metrics unchanged")
    row.changes = [c.to_json() for c in verdict.changes]
    row.baseline_version = verdict.baseline_version
    row.placement_moves = verdict.placement_moves
    return verdict


def recorded_errors(result: Result) -> list[str]:
    """The error diagnostics of a replayed recording (a board that never answered ...)."""
    return [
        str(d.get("kind") or d.get("code") or "error")
        for d in result.get("diagnostics") or []
        if isinstance(d, dict) and d.get("level") == "error"
    ]


def diagnostic(kind: str, message: str, *, level: str = "error") -> dict[str, Any]:
    """A diagnostic of the harness itself (no tool code)."""
    return {"level": level, "code": None, "kind": kind, "message": message}

"""pytest collection of the corpus: one item per (case, stage, toolchain version)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from .corpus import Case, load_cases
from .errors import CaseError, OracleError, ToolchainError
from .gate import (
    Baseline,
    explaining_bug,
    failure_message,
    judge,
    looks_fixed,
    xfail_known_bug,
    xpass_marker,
)
from .report.visible import visible
from .result import Result, flat_metrics, new_result
from .state import StedgeState, get_state
from .store.rows import ItemRow


class StedgeCheckFailure(Exception):
    """An item's metrics missed their expectations or regressed (the message is the report)."""

    def __init__(self, message: str, summary: list[str]) -> None:
        super().__init__(message)
        self.summary = summary


class CaseFile(pytest.File):
    """A ``case.toml``: collects the oracle stage and every toolchain stage of its cases."""

    def collect(self) -> Iterator[pytest.Item]:
        state = get_state(self.config)
        try:
            cases = load_cases(self.path)
            for case in cases:
                state.bugs.check(case)
        except CaseError as exc:
            raise self.CollectError(visible(str(exc), keep_newlines=True)) from None
        variants = len(cases) > 1 or cases[0].variant is not None
        for case in cases:
            prefix = case.variant if variants else None
            if case.oracle:
                name = f"oracle[{prefix}]" if prefix else "oracle"
                yield StedgeItem.from_parent(
                    self, name=name, nodeid=_child_id(self, name), case=case, stage="oracle",
                    version=None,
                )
            for stage in case.stages:
                for version in state.case_versions(case, stage):
                    param = f"{prefix}-{version}" if prefix else version
                    name = f"{stage}[{param}]"
                    yield StedgeItem.from_parent(
                        self, name=name, nodeid=_child_id(self, name), case=case, stage=stage,
                        version=version,
                    )


class StedgeItem(pytest.Item):
    """One stage of one case with one toolchain version (or the oracle, version None)."""

    def __init__(
        self, *, case: Case, stage: str, version: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.stage = stage
        self.version = version
        self._row: ItemRow | None = None
        self.add_marker("stedge")
        for marker in case.markers:
            self.config.addinivalue_line("markers", f"{marker}: corpus marker")
            self.add_marker(marker)

    # -- running -----------------------------------------------------------------

    def runtest(self) -> None:
        state = get_state(self.config)
        started = time.perf_counter()
        self._row = row = ItemRow(
            nodeid=self.nodeid,
            case_name=self.case.name,
            stage=self.stage,
            version=self.version,
            outcome="running",
            case={
                "case_path": str(self.case.path),
                "model_path": str(self.case.model),
                "target": self.case.target,
                "description": self.case.description,
            },
        )
        row.model_sha256 = state.models.sha256(self.case)
        row.options_hash = self.case.options_hash()
        if self.stage == "oracle":
            result = self._run_oracle(state)
        else:
            result = self._run_toolchain(state, row)
        self.ihook.pytest_stedge_result(config=self.config, item=self, result=result)
        metrics = flat_metrics(result)
        row.result = result
        row.metrics = metrics
        row.duration_s = time.perf_counter() - started
        self._judge(state, row, result, metrics)

    def _judge(self, state: StedgeState, row: ItemRow, result: Result, metrics: dict[str, float]) -> None:
        """Expectations, baseline and known bugs decide the outcome."""
        registry = state.bugs.registry(self.case)
        baseline = state.baselines.for_item(self.case.name, self.stage, self.version)
        if baseline is None and state.baselines.version is None and self.version is not None:
            baseline = self._previous_recorded(state)
        verdict = judge(
            case=self.case,
            stage=self.stage,
            version=self.version,
            result=result,
            metrics=metrics,
            model_sha256=row.model_sha256,
            baseline=baseline,
            default_band=state.baselines.default_band,
            strict_baseline=state.baselines.strict,
            registry=registry,
            options_hash=row.options_hash,
        )
        row.findings = verdict.findings
        row.changes = [c.to_json() for c in verdict.changes if c.kind.value != "unchanged"]
        row.baseline_version = verdict.baseline_version
        if self.version is not None:
            state.baselines.remember(self.case.name, self.stage, self.version, row)
        errors = _recorded_errors(result) if row.recorded else []
        if verdict.failed or errors:
            bug = explaining_bug(registry, verdict, self.version)
            title = f"{self.case.name} {self.name}"
            parts = [failure_message(title, verdict, update_hint=not state.settings.update)] if verdict.failed else []
            if errors:
                parts.append(f"{title}: the recorded run ended in an error: {', '.join(errors)}")
            message = "\n\n".join(parts)
            summary = verdict.summary_lines() + [f"recorded error: {e}" for e in errors]
            if self.stage == "validate-target":  # where a per-layer search saw it start
                from .board.plugin import divergence_lines

                message += "".join(f"\n{line}" for line in divergence_lines(result))
                summary += divergence_lines(result)
            if bug is not None and self.version is not None:
                # a known bug is not a new normal: --stedge-update leaves it alone
                xfail_known_bug(bug, self.version, message.splitlines()[0])
            if state.settings.update:
                row.update = {
                    "path": str(self.case.path),
                    "variant": self.case.variant,
                    "stage": self.stage,
                    "misses": {m.metric: m.measured for m in verdict.misses},
                    "baseline_deltas": {
                        c.metric: (c.old, c.new)
                        for c in verdict.failing_changes
                        if c.old is not None and c.new is not None
                    },
                }
            raise StedgeCheckFailure(message, summary)
        fixed = looks_fixed(registry, self.case, verdict, self.version)
        if fixed is not None and self.version is not None:
            self.add_marker(xpass_marker(fixed, self.version))

    def _previous_recorded(self, state: StedgeState) -> Baseline | None:
        """Without --stedge-baseline, a case with corpus recordings gates each version
        against the recording of the version before it (read from the data, so any
        worker can do it)."""
        assert self.version is not None
        previous = state.toolchains.previous_recording(self.case.name, self.stage, self.version)
        if previous is None:
            return None
        result: Result = previous["result"]
        self._attach_oracle(state, result)
        return Baseline(
            version=previous["version"],
            metrics=flat_metrics(result),
            model_sha256=previous["model_sha256"],
            options_hash=previous["options_hash"],
        )

    def _run_oracle(self, state: StedgeState) -> Result:
        if self.case.record_only and state.models.resolved(self.case) is None:
            pytest.skip(state.models.missing_reason(self.case))
        try:
            report = state.models.oracle_report(self.case)
            if report.get("unresolved_tensors"):
                names = ", ".join(report["unresolved_tensors"][:5])
                raise OracleError(
                    f"{self.case.model}: unresolved shapes: {len(report['unresolved_tensors'])} "
                    f"tensor(s) ({names}) have no static size, so the floor would leave them out"
                )
        except OracleError as exc:
            assert self._row is not None
            self._row.result = new_result("oracle", diagnostics=[_diag("OracleError", str(exc))])
            if self.case.model.suffix.lower() in (".h5", ".keras", ".hdf5"):
                pytest.skip(str(exc))
            raise
        return new_result(
            "oracle",
            stage="oracle",
            target=self.case.target,
            model={"name": self.case.model.stem, "file": self.case.model.name},
            oracle=report,
        )

    def _run_toolchain(self, state: StedgeState, row: ItemRow) -> Result:
        assert self.version is not None
        recording = state.toolchains.recording(self.version, self.case.name, self.stage)
        install = state.toolchains.install(self.version)
        case = state.models.resolved(self.case)
        if install is not None and case is None and recording is None:
            pytest.skip(state.models.missing_reason(self.case))
        if install is None and recording is None:
            pytest.skip(state.toolchains.missing_reason(self.version, self.case.name))
        if install is None or case is None:
            assert recording is not None
            result: Result = recording["result"]
            row.recorded = True
            if recording.get("corpus"):
                # a public run: its identity is the one its own outputs and command stated
                row.model_sha256 = recording["model_sha256"]
                row.options_hash = recording["options_hash"]
            elif recording.get("model_sha256") and recording["model_sha256"] != row.model_sha256:
                result.setdefault("diagnostics", []).append(
                    _diag(
                        "NotComparable",
                        "the recording was made from a different model file than the corpus holds",
                        level="warning",
                    )
                )
        else:
            workdir = state.work.item_dir(self.case, self.stage, self.version)
            try:
                stage_run = self.ihook.pytest_stedge_run_stage(
                    config=self.config,
                    case=case,
                    stage=self.stage,
                    install=install,
                    workdir=workdir,
                    timeout=state.settings.timeout(self.case),
                    board_desc=state.settings.board_desc(),
                )
            except ToolchainError as exc:
                from .parsers import extract_diagnostics

                if _stage_refused(exc):
                    # e.g. 4.x: "E102(CliArgumentError): Validation on host is not supported
                    # for devices based on Arm Cortex M55/M85 core." The tool says the stage
                    # does not apply to this target: that is a skip, not a regression.
                    pytest.skip(f"stedgeai {self.version} refuses {self.stage} here: {exc.reason}")
                diagnostics = extract_diagnostics(exc.output_tail)
                if exc.timed_out is not None:
                    diagnostics.append(_diag("Timeout", exc.short()))
                row.result = new_result(
                    _command(self.stage),
                    stage=self.stage,
                    diagnostics=diagnostics or [_diag("ToolchainError", exc.short())],
                )
                raise
            result = stage_run.result
            row.tool_seconds = stage_run.tool.seconds
        self._attach_oracle(state, result)
        return result

    def _attach_oracle(self, state: StedgeState, result: Result) -> None:
        """Put the oracle's figures beside the tool's (for activations_ratio)."""
        if not self.case.oracle:
            return
        if self.case.record_only and state.models.resolved(self.case) is None:
            return  # no model here: the oracle item says so, once
        try:
            report = state.models.oracle_report(self.case)
        except OracleError as exc:
            result.setdefault("diagnostics", []).append(
                _diag("OracleError", str(exc), level="warning")
            )
            return
        result["oracle"] = {
            k: report[k]
            for k in ("lower_bound_bytes", "expected_bytes", "plan_bytes", "naive_bytes", "float_nodes")
            if k in report
        }

    # -- reporting -----------------------------------------------------------------

    def stedge_row(self) -> dict[str, Any] | None:
        """The row this item hands to the controller (None if it never started)."""
        return None if self._row is None else self._row.to_dict()

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:
        """Our own failures are reports in their own right: no traceback."""
        if isinstance(excinfo.value, (StedgeCheckFailure, ToolchainError, OracleError)):
            return visible(str(excinfo.value), keep_newlines=True)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        version = f" with stedgeai {self.version}" if self.version else ""
        return self.path, None, visible(f"{self.case.name}: {self.stage}{version}")


def _recorded_errors(result: Result) -> list[str]:
    """The error diagnostics of a replayed recording (a board that never answered ...)."""
    return [
        str(d.get("kind") or d.get("code") or "error")
        for d in result.get("diagnostics") or []
        if isinstance(d, dict) and d.get("level") == "error"
    ]


def _child_id(parent: pytest.Collector, name: str) -> str:
    # The id as a string, so pytest parses "stage[version]" as name and params the way it
    # parses the ids it caches (--lf, --sw): pytest 9.2 would otherwise keep the bracket
    # in the name and never match a last-failed id again.
    return f"{parent.nodeid}::{name}"


def _stage_refused(exc: ToolchainError) -> bool:
    reason = exc.reason or ""
    return reason.startswith("E102(") and "not supported" in reason


def _command(stage: str) -> str:
    return "validate" if stage.startswith("validate") else stage


def _diag(kind: str, message: str, *, level: str = "error") -> dict[str, Any]:
    return {"level": level, "code": None, "kind": kind, "message": message}

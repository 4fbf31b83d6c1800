"""pytest collection of the corpus: one item per (case, stage, toolchain version)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from .corpus import Case, check_model_pin, load_cases
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
from .state import StedgeState, get_state, path_cache
from .store.rows import ItemRow


class StedgeCheckFailure(Exception):
    """An item's metrics missed their expectations or regressed (the message is the report)."""

    def __init__(self, message: str, summary: list[str]) -> None:
        super().__init__(message)
        self.summary = summary


_markers_key = pytest.StashKey[dict[str, pytest.MarkDecorator]]()


class CaseFile(pytest.File):
    """A ``case.toml``: collects the oracle stage and every toolchain stage of its cases.

    ``hooks_from``: the folder whose conftests apply to it, when its own folder (plain:
    no Python in it) was not collected as a node of its own (see :mod:`.folders`).
    """

    def __init__(self, *, hooks_from: Path | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hooks_from = hooks_from

    @property
    def ihook(self) -> Any:
        return self.session.gethookproxy(self.hooks_from or self.path)

    def collect(self) -> list[StedgeItem]:
        try:
            return case_items(self, self.path, str(self.nodeid))
        except CaseError as exc:
            raise self.CollectError(visible(str(exc), keep_newlines=True)) from None


def case_file(parent: pytest.Collector, path: Path, hooks_from: Path | None = None) -> CaseFile:
    """The :class:`CaseFile` node of ``path``; a folder named with bidi controls or
    invisible characters gets an id that shows them escaped (the terminal prints ids)."""
    node = CaseFile.from_parent(parent, path=path, hooks_from=hooks_from)
    shown = visible(node.nodeid)
    if shown != node.nodeid:
        node = CaseFile.from_parent(parent, path=path, hooks_from=hooks_from, nodeid=shown)
    return node



def case_items(parent: pytest.Collector, path: Path, file_id: str) -> list[StedgeItem]:
    """The items of one case file (node ids ``<file_id>::<stage>[<param>]``), children of
    ``parent``: its :class:`CaseFile`, or the corpus folder above (see :mod:`.folders`).

    :raises CaseError: the case file is malformed, names an unknown bug, its model is not
        the file its ``sha256`` pins, or a case name or test id is another file's.
    """
    config = parent.config
    state = get_state(config)
    cases = load_cases(path, cache=path_cache(config))
    for case in cases:
        state.bugs.check(case)
        if case.sha256 is not None and case.model.is_file():
            check_model_pin(case, state.models.sha256(case))
    variants = len(cases) > 1 or cases[0].variant is not None
    planned: list[tuple[str, Case, str, str | None]] = []
    for case in cases:
        prefix = case.variant if variants else None
        if case.oracle:
            planned.append((f"oracle[{prefix}]" if prefix else "oracle", case, "oracle", None))
        for stage in case.stages:
            for version in state.case_versions(case, stage):
                param = f"{prefix}-{version}" if prefix else version
                planned.append((f"{stage}[{param}]", case, stage, version))
    # The ids as strings, so pytest parses "stage[version]" as name and params the way it
    # parses the ids it caches (--lf, --sw): pytest 9.2 would otherwise keep the bracket in
    # the name and never match a last-failed id again.
    state.claim(path, [c.name for c in cases], [f"{file_id}::{name}" for name, *_ in planned])
    # -k matches the case's folder and file names, as when the folder was a node
    keywords = () if isinstance(parent, CaseFile) else (path.parent.name, path.name)
    marks = {case.markers: _marks(config, case.markers) for case in cases}
    return [
        StedgeItem.from_parent(
            parent, name=name, nodeid=f"{file_id}::{name}", path=path, case=case,
            stage=stage, version=version, keywords=keywords, marks=marks[case.markers],
        )
        for name, case, stage, version in planned
    ]


def _marks(config: pytest.Config, markers: tuple[str, ...]) -> list[pytest.MarkDecorator]:
    """The marks of a case's items: ``stedge`` and the case's markers (each registered
    once per session, so --strict-markers knows it)."""
    known = config.stash.setdefault(_markers_key, {})
    marks = []
    for name in ("stedge", *markers):
        mark = known.get(name)
        if mark is None:
            if name != "stedge":
                config.addinivalue_line("markers", f"{name}: corpus marker")
            mark = known[name] = getattr(pytest.mark, name)
        marks.append(mark)
    return marks


class StedgeItem(pytest.Item):
    """One stage of one case with one toolchain version (or the oracle, version None)."""

    def __init__(
        self, *, case: Case, stage: str, version: str | None, keywords: tuple[str, ...] = (),
        marks: list[pytest.MarkDecorator] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.stage = stage
        self.version = version
        self._row: ItemRow | None = None
        self.extra_keyword_matches.update(keywords)
        for mark in _marks(self.config, case.markers) if marks is None else marks:
            # what add_marker does, without its import per call (six per case)
            self.keywords[mark.name] = mark.mark
            self.own_markers.append(mark.mark)

    @property
    def ihook(self) -> Any:
        assert self.parent is not None
        return self.parent.ihook  # the case file's conftests

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
            metric_bands=state.baselines.metric_bands,
            strict_baseline=state.baselines.strict,
            registry=registry,
            options_hash=row.options_hash,
        )
        row.findings = verdict.findings
        # unchanged ones too: the summary counts them ("baseline 3.0.0: 187 metrics unchanged")
        row.changes = [c.to_json() for c in verdict.changes]
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
        no_board = self.stage == "validate-target" and not state.settings.boards
        if recording is not None and (install is None or case is None or no_board):
            result: Result = recording["result"]
            row.recorded = True
            corpus_sha = row.model_sha256
            if recording.get("corpus"):
                # a public run: its identity is the one its own outputs and command stated
                row.model_sha256 = recording["model_sha256"]
                row.options_hash = recording["options_hash"]
            else:
                # the identity the recording was checked against at ingest: a forced one
                # (None) or a model changed since never compares with other versions
                row.model_sha256 = recording.get("model_sha256")
                row.options_hash = recording.get("options_hash") or row.options_hash
            if (
                not recording.get("corpus")
                and row.model_sha256 != corpus_sha
                and recording.get("comparable", True)
            ):
                result.setdefault("diagnostics", []).append(
                    _diag(
                        "NotComparable",
                        "the recording was made from a different model file than the corpus holds",
                        level="warning",
                    )
                )
        else:
            assert install is not None and case is not None
            workdir = state.work.item_dir(self.case, self.stage, self.version)
            timeout, timeout_source = state.settings.timeout_and_source(self.case)
            try:
                stage_run = self.ihook.pytest_stedge_run_stage(
                    config=self.config,
                    case=case,
                    stage=self.stage,
                    install=install,
                    workdir=workdir,
                    timeout=timeout,
                    board_desc=state.settings.board_desc(),
                )
            except ToolchainError as error:
                from .parsers import extract_diagnostics
                from .runner import stage_refusal

                exc = error
                if exc.timed_out is not None and exc.reason is None:  # say which limit
                    exc = ToolchainError(
                        exc.argv, timed_out=exc.timed_out, output_tail=exc.output_tail,
                        reason=f"the limit set by {timeout_source}",
                    )
                if exc.returncode not in (None, 0) and stage_refusal(self.stage, exc.reason):
                    # the tool says the stage does not apply to this target (the refusals
                    # it documents, runner.STAGE_REFUSALS): a skip, not a regression
                    pytest.skip(f"stedgeai {self.version} refuses {self.stage} here: {exc.reason}")
                diagnostics = extract_diagnostics(exc.output_tail)
                if exc.timed_out is not None:
                    diagnostics.append(_diag("Timeout", exc.short()))
                row.result = new_result(
                    _command(self.stage),
                    stage=self.stage,
                    diagnostics=diagnostics or [_diag("ToolchainError", exc.short())],
                )
                raise exc from None
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
        model = state.models.resolved(self.case)
        if self.version and result.get("neural_art") and result.get("epochs") and model:
            from .oracle.placement import placement_summary

            try:  # the predicted placement beside the real epochs (issue 27)
                result["oracle"]["placement"] = placement_summary(
                    model.model, self.version, self.case.options)
            except OracleError as exc:
                result.setdefault("diagnostics", []).append(
                    _diag("OracleError", f"placement: {exc}", level="warning"))

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




def _command(stage: str) -> str:
    return "validate" if stage.startswith("validate") else stage


def _diag(kind: str, message: str, *, level: str = "error") -> dict[str, Any]:
    return {"level": level, "code": None, "kind": kind, "message": message}

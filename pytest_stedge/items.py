"""pytest collection of the corpus: one item per (case, stage, toolchain version)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .case.boundary import one_case
from .case.load import check_model_pin, load_cases
from .case.model import Case
from .errors import CaseError, OracleError, ToolchainError
from .report.visible import visible
from .result import Result
from .state import get_state, path_cache
from .steps import (
    GateInputs,
    attach_oracle,
    judge_item,
    new_row,
    oracle_result,
    record_figures,
    recorded_errors,
    replays,
    stage_result,
)
from .store.rows import ItemRow
from .verdict.bands import check_case_bands
from .verdict.gate import (
    explaining_bug,
    failure_message,
    looks_fixed,
    similar_lines,
    xfail_known_bug,
    xpass_marker,
)

if TYPE_CHECKING:
    from .tool.discovery import Install
    from .tool.runner import StageRun
    from .verdict.gate import Verdict


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



@one_case  # a failure on one case file is that file's collection error
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
        check_case_bands(case)
        state.bugs.check(case)
        if case.sha256 is not None and case.model.is_file():
            check_model_pin(case, state.models.sha256(case))
        if case.oracle:
            _warn_recorded_deployment(parent, case, state.toolchains.case_runs(case.name))
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


def _warn_recorded_deployment(parent: pytest.Collector, case: Case, runs: list[dict[str, Any]]) -> None:
    """A collection warning when the case's [neural_art]/options deploy the model otherwise
    than its recordings' command lines: the oracle's floor of a replayed run follows the
    run, so the case file says something its figures do not."""
    if not runs:
        return
    from .oracle import recorded_conflicts

    try:
        lines = recorded_conflicts(case, runs)
    except OracleError as exc:  # an unreadable pool file: the oracle item says so
        lines = [str(exc)]
    if lines:
        parent.warn(
            pytest.PytestCollectionWarning(
                f"{case.path}: case {case.name!r} is deployed otherwise than its recordings: "
                + "; ".join(lines[:3])
                + (f" (and {len(lines) - 3} more)" if len(lines) > 3 else "")
                + ". The oracle follows each recorded command line; say the same in the case "
                "([neural_art], options)."
            )
        )


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
        case, stage, version = self.case, self.stage, self.version
        started = time.perf_counter()
        self._row = row = new_row(self.nodeid, case, stage, version, state.models.sha256(case))
        if stage == "oracle":
            oracle = state.oracle_inputs(case)
            result = oracle_result(case, oracle, row)
        else:
            assert version is not None
            inputs = state.stage_inputs(case, stage, version)
            # a replayed run is set beside the floor of the deployment it was made with
            oracle = state.oracle_inputs(case, inputs.recording if replays(stage, inputs) else None)
            result = stage_result(case, stage, version, inputs, row, self._run_stage)
            attach_oracle(case, oracle, result)
        self.ihook.pytest_stedge_result(config=self.config, item=self, result=result)
        record_figures(row, result, started)
        gate = state.gate_inputs(case, stage, version, oracle)
        verdict = judge_item(case, stage, version, result, row, gate)
        if version is not None:
            state.baselines.remember(case.name, stage, version, row)
            if verdict.failed and not row.recorded and self.config.getoption("stedge_bisect"):
                self._bisect(inputs, result, oracle)
        self._conclude(verdict, gate, row, result)

    def _bisect(self, inputs: Any, result: Result, oracle: Any) -> None:
        """--stedge-bisect: which options make this failing stage fail (into the Result)."""
        from .bisect.search import bisect_stage

        install, version = inputs.install, self.version
        if install is None or version is None:
            return

        def run(variant: Case, workdir: Path) -> Result:
            return self._run_stage(variant, install, workdir, inputs.timeout,
                                   inputs.board_desc).result

        report = bisect_stage(self.case, self.stage, version, run, inputs.workdir / "bisect",
                              install_root=install.root)
        result["bisect"] = report.to_json()

    def _run_stage(
        self, case: Case, install: Install, workdir: Path, timeout: float, board_desc: str | None
    ) -> StageRun:
        """One live run of the stage, through the hook (users may replace the runner)."""
        run: StageRun = self.ihook.pytest_stedge_run_stage(
            config=self.config, case=case, stage=self.stage, install=install,
            workdir=workdir, timeout=timeout, board_desc=board_desc,
        )
        return run

    def _conclude(self, verdict: Verdict, gate: GateInputs, row: ItemRow, result: Result) -> None:
        """Pass, fail with the verdict's report, xfail on a known bug, or mark a bug that
        looks fixed."""
        errors = recorded_errors(result) if row.recorded else []
        if verdict.failed or errors:
            bug = explaining_bug(gate.registry, verdict, self.version)
            title = f"{self.case.name} {self.name}"
            parts = [failure_message(title, verdict, update_hint=not gate.update)] if verdict.failed else []
            if errors:
                parts.append(f"{title}: the recorded run ended in an error: {', '.join(errors)}")
            if bug is None:
                parts += similar_lines(gate.registry, verdict)
            message = "\n\n".join(parts)
            summary = verdict.summary_lines() + [f"recorded error: {e}" for e in errors]
            if isinstance(result.get("bisect"), dict):
                found = f"bisect (--stedge-bisect): {result['bisect']['verdict']}"
                message += f"\n{found}"
                summary.append(found)
            if self.stage == "validate-target":  # where a per-layer search saw it start
                from .board.plugin import divergence_lines

                message += "".join(f"\n{line}" for line in divergence_lines(result))
                summary += divergence_lines(result)
            if bug is not None and self.version is not None:
                # a known bug is not a new normal: --stedge-update leaves it alone
                xfail_known_bug(bug, self.version, message.splitlines()[0])
            if gate.update:
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
        fixed = looks_fixed(gate.registry, self.case, verdict, self.version)
        if fixed is not None and self.version is not None:
            self.add_marker(xpass_marker(fixed, self.version))

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

"""The bisection of one failing stage: which options make its check fail.

The check is the case's own: the stage runs with every option, and what fails there
(the expectations it misses, or the tool failing) is what every other run is judged
on. A run fails when it misses one of those same expectations (or the tool fails
again, when that was the failure); it passes when it meets them all; a run that cannot
tell (the tool fails where it did not, a figure is not measured) is undecided, which
delta debugging treats as not failing. Runs: every option, none, then ddmin.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case.model import Bound, Case
from ..errors import StedgeError, ToolchainError
from ..result import Result, flat_metrics
from .ddmin import FAIL, PASS, UNRESOLVED, ddmin
from .options import Options, Unit, case_options, variant

#: runs one stage of a case into a folder and returns its Result (raises ToolchainError)
RunStage = Callable[[Case, Path], Result]


@dataclass
class Run:
    """One run of the bisection: the options it kept, its outcome and its figures."""

    number: int
    kept: list[str]
    outcome: str  # fail, pass, unresolved
    figures: dict[str, float]
    misses: list[str]
    error: str | None
    seconds: float
    workdir: str

    def to_json(self) -> dict[str, Any]:
        """For ``--json`` and the bug report."""
        return {"run": self.number, "kept": self.kept, "outcome": self.outcome,
                "figures": self.figures, "misses": self.misses, "error": self.error,
                "seconds": round(self.seconds, 3), "workdir": self.workdir}


@dataclass
class Bisection:
    """What the bisection found."""

    case: str
    stage: str
    version: str
    options: list[str]
    check: str
    culprits: list[str] | None  # None: the search could not run (see ``verdict``)
    verdict: str
    runs: list[Run] = field(default_factory=list)

    @property
    def budget(self) -> int:
        """2 n log2 n runs (n options): the bound the search must stay within."""
        n = len(self.options)
        return max(2, math.ceil(2 * n * math.log2(n))) if n > 1 else 2

    def to_json(self) -> dict[str, Any]:
        """For ``--json`` and the bug report."""
        return {"case": self.case, "stage": self.stage, "version": self.version,
                "options": self.options, "check": self.check, "culprits": self.culprits,
                "verdict": self.verdict, "runs": [r.to_json() for r in self.runs],
                "budget": self.budget}


class _Judge:
    """Runs variants and judges them against what failed with every option."""

    def __init__(self, case: Case, stage: str, options: Options, run_stage: RunStage,
                 workroot: Path, oracle: Callable[[Case], dict[str, Any]] | None) -> None:
        self.case, self.stage, self.options = case, stage, options
        self.run_stage, self.workroot, self.oracle = run_stage, workroot, oracle
        self.runs: list[Run] = []
        self.bounds: tuple[Bound, ...] = case.bounds_for(stage)
        self.watched: list[Bound] = []
        self.tool_fails = False

    def run(self, kept: list[Unit]) -> Run:
        from ..verdict.expect import check, summarize_miss

        number = len(self.runs) + 1
        workdir = self.workroot / f"run-{number:03d}"
        started = time.perf_counter()
        figures: dict[str, float] = {}
        error = None
        misses: list[str] = []
        try:
            chosen = variant(self.case, self.options, kept, workdir)
            result = self.run_stage(chosen, workdir)
            if self.oracle is not None and any(b.metric.startswith("activations_ratio")
                                               or b.metric.startswith("activations_lower")
                                               for b in self.bounds):
                result["oracle"] = self.oracle(chosen)
            figures = {k: v for k, v in flat_metrics(result).items() if ":" not in k}
            missed = check(self.watched or self.bounds, figures)
            misses = [summarize_miss(m) for m in missed]
            outcome = FAIL if missed and all(m.measured is not None for m in missed) else (
                UNRESOLVED if missed else PASS)
            if self.tool_fails:
                outcome = PASS  # the failure watched is the tool's: it did not fail here
        except ToolchainError as exc:
            error = exc.short() if hasattr(exc, "short") else str(exc)
            outcome = FAIL if self.tool_fails else UNRESOLVED
        record = Run(number, [u.text for u in kept], outcome, figures, misses, error,
                     time.perf_counter() - started, str(workdir))
        self.runs.append(record)
        return record


def bisect_stage(case: Case, stage: str, version: str, run_stage: RunStage, workroot: Path,
                 *, install_root: Path | None = None,
                 oracle: Callable[[Case], dict[str, Any]] | None = None) -> Bisection:
    """Find the smallest set of ``case``'s options whose presence makes ``stage`` fail.

    :param run_stage: runs the stage of a case variant in a folder (the tool, or a board).
    :param workroot: one folder per run is made under it.
    :param install_root: where a built-in Neural-ART profile is read from.
    :param oracle: the oracle's figures of a case variant (for ``activations_ratio``).
    """
    options = case_options(case, install_root)
    units = list(options.units)
    judge = _Judge(case, stage, options, run_stage, workroot, oracle)
    texts = [u.text for u in units]
    report = Bisection(case.name, stage, version, texts, "", None, "")
    full = judge.run(units)
    report.runs = judge.runs
    if full.outcome == UNRESOLVED and full.error is not None:
        judge.tool_fails = True
        full.outcome = FAIL
        report.check = f"the tool fails ({full.error})"
    elif full.outcome == PASS:
        report.check = "the case's expectations of the stage: " + (
            ", ".join(b.metric for b in judge.bounds) or "none")
        report.verdict = ("the stage passes with every option: nothing to bisect "
                          f"({len(judge.bounds)} expectation(s) met)")
        return report
    else:
        from ..verdict.expect import check

        judge.watched = [m.bound for m in check(judge.bounds, full.figures)]
        report.check = "; ".join(full.misses)
    if not units:
        report.verdict = "the case has no compiler options to remove: it fails without any"
        report.culprits = []
        return report
    empty = judge.run([])
    if empty.outcome == FAIL:
        report.culprits = []
        report.verdict = ("it fails without any of the options too: no option causes it "
                          f"({options.describe()})")
        return report
    if empty.outcome == UNRESOLVED:
        report.verdict = ("without any option the run cannot be judged "
                          f"({empty.error or '; '.join(empty.misses)}): the search would not "
                          "be sound")
        return report
    found = ddmin(units, lambda kept: judge.run(kept).outcome)
    report.culprits = [u.text for u in found]
    report.verdict = (f"{' + '.join(report.culprits)}: with {'these' if len(found) > 1 else 'this'}"
                      f" the check fails, without any one of them it passes "
                      f"({len(judge.runs)} runs, {options.describe()})")
    return report


def no_install(version: str, found: list[str]) -> StedgeError:
    """The error of a bisection asked of a version that is not installed."""
    known = ", ".join(found) or "none"
    return StedgeError(f"stedgeai {version} is not installed here (found: {known}): a bisection "
                       "re-runs the tool, and a recorded run cannot be re-run with other options; "
                       "give --stedge-root/STEDGEAI_CORE_DIR")

"""Judge one finished item: expectations, the baseline version, and known bugs.

Runs on the process that ran the item. It decides the item's outcome (pass, fail,
xfail for a known bug, strict XPASS when a known bug looks fixed) and fills the
row with what the controller stores and summarises: findings, metric changes, and
the edits ``--stedge-update`` should make.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..bugs.registry import Bug, BugRegistry
from ..bugs.signature import signature_env
from ..case.model import Case
from ..report.table import fmt_delta, fmt_number
from ..result import Result
from .compare import ChangeKind, MetricChange, compare_results, expectation_flags
from .expect import Miss, check, format_misses, summarize_miss
from .placement import baseline_moves

GATING_KINDS = (ChangeKind.REGRESSED, ChangeKind.NEWLY_FAILING)


@dataclass
class Baseline:
    """The baseline version's figures for one (case, stage)."""

    version: str
    metrics: dict[str, float]
    model_sha256: str | None
    options_hash: str | None
    run_id: int | None = None
    options: list[str] | None = None  # the stated options (Result ``options``), when known
    # software/hybrid epochs per operator (epoch_kinds.op_counts); None: no epoch table
    placement: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for xdist workers)."""
        return dict(self.__dict__)


@dataclass
class Verdict:
    """Everything the gate found on one item."""

    misses: list[Miss] = field(default_factory=list)
    changes: list[MetricChange] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    failing_changes: list[MetricChange] = field(default_factory=list)
    baseline_version: str | None = None
    # operators moved between the NPU and the Cortex-M55 against the baseline (verdict.placement)
    placement_moves: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        """Whether the item fails (before known bugs are taken into account)."""
        return bool(self.misses or self.failing_changes)

    def summary_lines(self) -> list[str]:
        """One line per reason, for the terminal summary."""
        lines = [summarize_miss(m) for m in self.misses]
        lines += [
            f"{c.metric}: {c.kind.value} against {self.baseline_version}: "
            f"{fmt_number(c.metric, c.old)} -> {fmt_number(c.metric, c.new)} (band {c.band})"
            for c in self.failing_changes
            if not any(m.metric == c.metric for m in self.misses)
        ]
        return lines


def judge(
    *,
    case: Case,
    stage: str,
    version: str | None,
    result: Result,
    metrics: dict[str, float],
    model_sha256: str | None,
    baseline: Baseline | None,
    default_band: str,
    strict_baseline: bool,
    registry: BugRegistry | None,
    options_hash: str | None = None,
    metric_bands: Mapping[str, str] | None = None,
) -> Verdict:
    """Check ``metrics`` against the case, the baseline and the bug registry.

    :param options_hash: the item's options identity (a replayed recording has the one its
        command line stated); default: the case's.
    :param metric_bands: per-metric default bands (None: the noisy metrics' built-in ones).
    """
    bounds = case.bounds_for(stage, metrics)
    verdict = Verdict(misses=check(bounds, metrics))
    if baseline is not None and version is not None and version != baseline.version:
        comparable = (
            baseline.model_sha256 is not None
            and baseline.model_sha256 == model_sha256
            and baseline.options_hash == (options_hash or case.options_hash())
        )
        verdict.baseline_version = baseline.version
        why = "" if comparable else _why_not_comparable(
            baseline, model_sha256, options_hash or case.options_hash(), result, version
        )
        verdict.placement_moves = baseline_moves(baseline.placement, result, comparable, why)
        verdict.changes = compare_results(
            case.name,
            stage,
            baseline.metrics,
            metrics,
            comparable=comparable,
            bands=case.baseline,
            default_band=default_band,
            base_ok=expectation_flags(case.bounds_for(stage, baseline.metrics), baseline.metrics),
            head_ok=expectation_flags(bounds, metrics),
            note=why,
            metric_bands=metric_bands,
        )
        kinds = GATING_KINDS + ((ChangeKind.IMPROVED,) if strict_baseline else ())
        verdict.failing_changes = [c for c in verdict.changes if c.kind in kinds]
    if registry is not None and len(registry) and stage != "oracle":
        env = signature_env(result, stage=stage, version=version, metrics=metrics,
                            target=case.target)
        verdict.findings = [
            f.to_row()
            for f in registry.evaluate(env, case_name=case.name, case_bugs=case.bugs,
                                       version=version, markers=case.markers)
        ]
    return verdict


def _why_not_comparable(
    baseline: Baseline, model_sha256: str | None, options_hash: str, result: Result, version: str
) -> str:
    from .identity import not_comparable_reason

    base = {"model_sha256": baseline.model_sha256, "options_hash": baseline.options_hash,
            "options": baseline.options, "version": baseline.version}
    head = {"model_sha256": model_sha256, "options_hash": options_hash,
            "options": result.get("options"), "version": version}
    return not_comparable_reason(base, head) or "model or options differ"


def failure_message(title: str, verdict: Verdict, *, update_hint: bool) -> str:
    """The item's failure report: missed expectations, then changes against the baseline."""
    parts = []
    hint = "To accept the measured values, rerun with --stedge-update." if update_hint else None
    if verdict.misses:
        parts.append(format_misses(title, verdict.misses, hint=hint))
        hint = None
    if verdict.failing_changes:
        rows = [("metric", "baseline", "measured", "delta", "kind", "band")]
        for c in verdict.failing_changes:
            rows.append(
                (
                    c.metric,
                    fmt_number(c.metric, c.old),
                    fmt_number(c.metric, c.new),
                    fmt_delta(c),
                    c.kind.value,
                    c.band,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            (f"{title}: {len(verdict.failing_changes)} metric(s) moved beyond their band "
             f"against {verdict.baseline_version}.")
        ]
        if hint:
            lines.append(hint)
        lines.append("")
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def explaining_bug(registry: BugRegistry | None, verdict: Verdict, version: str | None) -> Bug | None:
    """A known bug that affects ``version``, whose evidence this item is (a reproducer, or in
    the bug's scope) and whose signature matched it. A signature that merely matches on
    another model is a similar signature: it explains nothing, the failure stays a failure."""
    if registry is None or version is None:
        return None
    for finding in verdict.findings:
        if finding["status"] != "reproduced" or not (finding.get("evidence") or {}).get("reproducer"):
            continue
        bug = registry.get(finding["bug_id"])
        if bug is not None and bug.affects(version) is True:
            return bug
    return None


def similar_lines(registry: BugRegistry | None, verdict: Verdict) -> list[str]:
    """For a failure no bug explains: the known bugs whose signature matched this item
    although it is not their evidence (a lead, never an explanation)."""
    if registry is None:
        return []
    out = []
    for finding in verdict.findings:
        evidence = finding.get("evidence") or {}
        bug = registry.get(finding["bug_id"])
        if bug is not None and finding["status"] == "reproduced" and not evidence.get("reproducer"):
            out.append(f"similar signature to known bug {bug.id} ({bug.title}); this case is "
                       "not its reproducer, so the failure stands")
    return out


def looks_fixed(
    registry: BugRegistry | None, case: Case, verdict: Verdict, version: str | None
) -> Bug | None:
    """A bug this case reproduces, listed as affecting ``version``, whose signature no longer
    matches: the registry needs an update."""
    if registry is None or version is None:
        return None
    for finding in verdict.findings:
        if finding["status"] != "not-reproduced":
            continue
        bug = registry.get(finding["bug_id"])
        if bug is None or bug.affects(version) is not True:
            continue
        if case.name in bug.reproducers or bug.id in case.bugs:
            return bug
    return None


def xfail_known_bug(bug: Bug, version: str, reason: str) -> None:
    """Report the item xfailed with the bug's id and source."""
    pytest.xfail(f"known bug {bug.id} in {version}: {bug.title} [{bug.source}]; {reason}")


def xpass_marker(bug: Bug, version: str) -> pytest.MarkDecorator:
    """A strict xfail mark: the item passing then reads "bug X looks fixed in V"."""
    return pytest.mark.xfail(
        strict=True,
        reason=f"bug {bug.id} looks fixed in {version}: its signature `{bug.signature.text}` "
        f"no longer matches, yet corpus/bugs/{bug.id}.toml lists {version} as affected; "
        "update the registry",
    )

"""The session's terminal summary: outcomes per case, failed items, changes against the
baseline, expectation updates, and where the run was stored."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.rows import ItemRow
from .visible import visible


@dataclass
class SessionSummary:
    """What the controller gathers from item reports for the summary."""

    rows: list[ItemRow] = field(default_factory=list)
    failures: dict[str, list[str]] = field(default_factory=dict)
    changes: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # (base, head)
    updates: list[str] = field(default_factory=list)
    bounds: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)  # case -> (keys, checked)
    # (base, head) -> per (case, stage): operators moved between the NPU and the Cortex-M55
    placement: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def add_bounds(self, row: ItemRow) -> None:
        """Note which of its case's bounds a finished item checked."""
        if not row.expect_keys:
            return
        keys, checked = self.bounds.setdefault(row.case_name, (set(), set()))
        keys.update(row.expect_keys)
        checked.update(row.checked)

    def unchecked_bounds(self) -> list[tuple[str, list[str]]]:
        """(case, its bound keys that no stage checked), for cases with any."""
        out = []
        for case in sorted(self.bounds):
            keys, checked = self.bounds[case]
            if keys - checked:
                out.append((case, sorted(keys - checked)))
        return out


def write_summary(
    terminalreporter: Any,
    summary: SessionSummary,
    *,
    notes: list[str],
    write_errors: list[str],
    stored: str | None,
    report_path: Path | None,
) -> None:
    """The ``stedge summary`` section of pytest's terminal report."""

    def write(line: str, **markup: bool) -> None:  # names show their bidi controls
        terminalreporter.write_line(visible(line, keep_newlines=True), **markup)

    rows = summary.rows
    terminalreporter.section("stedge summary")
    by_case: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        bucket = {"error": "failed", "xpassed": "passed"}.get(row.outcome, row.outcome)
        by_case[visible(row.case_name)][bucket] += 1
    if by_case:
        width = max(len("case"), *(len(c) for c in by_case))
        known = any(c["xfailed"] for c in by_case.values())
        header = f"{'case'.ljust(width)}  passed  failed  skipped"
        write(header + ("  known bug" if known else ""))
        for case in sorted(by_case):
            counts = by_case[case]
            line = (
                f"{case.ljust(width)}  {counts['passed']:>6}  {counts['failed']:>6}  "
                f"{counts['skipped']:>7}"
            )
            write(line + (f"  {counts['xfailed']:>9}" if known else ""))
    if summary.failures:
        write("")
        write("failed items:")
        for nodeid, lines in summary.failures.items():
            write(f"  {nodeid}")
            for line in lines:
                write(f"      {line}")
    _write_changes(write, summary.changes)
    _write_placement_moves(write, summary.placement)
    _write_placement(write, rows)
    _write_bugs(write, rows)
    unchecked = summary.unchecked_bounds()
    if unchecked:
        write("")
        write("warning: bounds that no stage checked (they said nothing):", yellow=True)
        for case, keys in unchecked:
            write(f"  {case}: {'; '.join(_why_unchecked(key) for key in keys)}")
        write("  a bound applies to the stages that measure its metric: add such a stage to "
              "the case's stages, or move the bound to the table of one it has")
    if summary.updates:
        write("")
        write("--stedge-update changed:")
        for line in summary.updates:
            write(f"  {line}")
    recorded = sum(1 for r in rows if r.recorded)
    if recorded:
        write(f"{recorded} item(s) replayed from recorded runs")
    for note in notes:
        write(note)
    for error in write_errors:
        write(f"NOT STORED: {error}", red=True)
    if stored is not None:
        write(stored)
    if report_path is not None:
        write(f"report: {report_path}")


@dataclass(frozen=True)
class _Finding:
    """A finding of this session, as :func:`pytest_stedge.bugs.verdict.bug_verdict` reads it."""

    bug_id: str
    status: str
    case_name: str
    stage: str
    version: str
    reproducer: bool
    run_id: int = 0
    group_run: int = 0


def _write_bugs(write: Callable[..., None], rows: list[ItemRow]) -> None:
    """Per known bug and version of this session: its verdict, as the run report and the
    dashboard give it (only its evidence decides); similar signatures counted apart."""
    from ..bugs.verdict import SIMILAR_TEXT, bug_verdict, by_bug_and_version

    findings = [
        _Finding(str(f["bug_id"]), str(f["status"]), row.case_name, row.stage, row.version or "",
                 bool((f.get("evidence") or {}).get("reproducer")))
        for row in rows for f in row.findings
    ]
    table = []
    for (bug_id, version), mine in sorted(by_bug_and_version(findings).items()):
        verdict = bug_verdict(mine, ())
        if verdict.status == "not-run" and not verdict.similar:
            continue
        deciding = verdict.deciding
        similar = verdict.similar_cases()
        table.append((bug_id, version or "-", verdict.text,
                      f"{deciding.case_name} ({deciding.stage})" if deciding else "no reproducer ran",
                      f"{len(similar)} model(s)" if similar else ""))
    if not table:
        return
    write("")
    write(f"known bugs (only a bug's reproducers decide; the last column, {SIMILAR_TEXT}, never does):")
    head = ("bug", "version", "status", "decided by", "similar")
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]
    for line in [head, *table]:
        write("  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())


def _why_unchecked(key: str) -> str:
    """``expect.val_cos (no stage measured val_cos)`` for the summary's warning."""
    from ..case.model import ALL_STAGES

    parts = key.split(".")
    if len(parts) == 3 and parts[1] in ALL_STAGES:
        return f"{key} ({parts[1]} is not among the case's stages)"
    return f"{key} (no stage measured {parts[-1]})"


def _write_placement(write: Callable[..., None], rows: list[ItemRow]) -> None:
    """Items with software or hybrid epochs: which operators, and what ``??`` means."""
    from pytest_stedge.parsers.epoch_kinds import summary_lines

    # A generate and the validate on the board are two items (two runs): the board's
    # figures of the same case and version are shown beside the generate's epochs.
    validated = {(r.case_name, r.version): r.result["validation"] for r in rows
                 if r.result and r.version and (r.result.get("validation") or {}).get("outputs")}
    items = []
    for r in rows:
        if not r.result or not r.version:
            continue
        result = r.result
        board = validated.get((r.case_name, r.version))
        if board is not None and not result.get("validation"):
            result = {**result, "validation": board}
        items.append((f"{r.case_name} {r.stage} {r.version}", result))
    lines = summary_lines(items)
    if lines:
        write("")
    for line in lines:
        write(line)


def _write_placement_moves(
    write: Callable[..., None], by_pair: dict[tuple[str, str], list[dict[str, Any]]]
) -> None:
    """Per baseline pair, the operators that moved between the NPU and the Cortex-M55,
    listed by operator (a change of its own kind beside the metric table)."""
    from ..case.recordings import release_key
    from ..verdict.placement import format_by_operator, moves_by_operator

    for base, head in sorted(by_pair, key=lambda p: (release_key(p[1]), release_key(p[0]))):
        lines = format_by_operator(moves_by_operator(by_pair[(base, head)]))
        if not lines:
            continue
        write("")
        write(f"operators moved between the NPU and the Cortex-M55 against baseline {base} "
              f"({head}):")
        for line in lines:
            write(f"  {line}")


def _write_changes(
    write: Callable[..., None], changes_by_pair: dict[tuple[str, str], list[dict[str, Any]]]
) -> None:
    """Per case, the metrics that moved against the baseline, regressions first."""
    from ..case.recordings import release_key
    from ..verdict.compare import ChangeKind, DiffReport, MetricChange
    from .table import format_table

    pairs = sorted(changes_by_pair, key=lambda p: (release_key(p[1]), release_key(p[0])))
    for base, head in pairs:
        changes = changes_by_pair[(base, head)]
        report = DiffReport(
            base=base,
            head=head,
            changes=[MetricChange(**{**c, "kind": ChangeKind(c["kind"])}) for c in changes],
        )
        write("")
        if all(c.kind is ChangeKind.UNCHANGED for c in report.changes):
            # say so: silence would not tell "nothing moved" from "nothing was compared"
            write(f"baseline {base}: {len(report.changes)} metrics unchanged in {head}")
            continue
        for line in format_table(report).splitlines():
            write(line)

"""What a bug's findings say about one toolchain version: one rule for every page.

The run report and the dashboard both show, per bug and version, one status decided
here, so they never disagree. Only the bug's reproducers decide (a case that lists the
bug, or that the bug lists): a signature that merely matches on another case (a PReLU
left float on purpose runs in software too; a detector's head has hybrid epochs of its
own) is shown as a match elsewhere, never as the bug reproduced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


class FindingView(Protocol):
    """What this module reads of a finding (pytest_stedge.report.data.FindingView)."""

    bug_id: str
    status: str
    case_name: str
    stage: str
    version: str
    run_id: int
    group_run: int  # the newest run of its run group (0: not known, use run_id)
    reproducer: bool
    evidence: list[tuple[str, str]]

STATUS_TEXT = {
    "reproduced": "reproduced",
    "not-reproduced": "not reproduced",
    "unknown": "unknown",
    "not-run": "not run",
}


@dataclass(frozen=True)
class VersionStatus:
    """A bug on one version: its status, the finding that decided it, other matches."""

    status: str
    deciding: FindingView | None
    run_id: int = 0
    elsewhere: int = 0  # non-reproducer cases whose signature matched in that run

    @property
    def text(self) -> str:
        """The status as people read it."""
        return STATUS_TEXT[self.status]


def _run_of(finding: FindingView) -> int:
    """The run a finding counts in: its run group's newest run (the shards of one CI
    pipeline are one run), else its own."""
    return finding.group_run or finding.run_id


def decides(finding: FindingView, reproducers: Iterable[str]) -> bool:
    """Whether this finding comes from one of the bug's reproducers."""
    return finding.reproducer or finding.case_name in set(reproducers)


def version_status(findings: Sequence[FindingView], reproducers: Sequence[str]) -> VersionStatus:
    """The status of one bug on one version from its findings there (any runs): the newest
    run in which a reproducer evaluated it; reproduced wins over not reproduced, which
    wins over unknown."""
    decisive = [f for f in findings if decides(f, reproducers)]
    matched = [f for f in findings if not decides(f, reproducers) and f.status == "reproduced"]
    if not decisive:
        newest = max((_run_of(f) for f in matched), default=0)
        return VersionStatus("not-run", None, newest, sum(1 for f in matched if _run_of(f) == newest))
    # the newest run of a run group: the shards of one CI pipeline are one run
    newest = max(_run_of(f) for f in decisive)
    current = [f for f in decisive if _run_of(f) == newest]
    statuses = {f.status for f in current}
    status = next((s for s in ("reproduced", "not-reproduced") if s in statuses), "unknown")
    deciding = next(f for f in current if f.status == status or status == "unknown")
    elsewhere = sum(1 for f in matched if _run_of(f) == newest)
    return VersionStatus(status, deciding, newest, elsewhere)


F = TypeVar("F", bound=FindingView)


def by_bug_and_version(findings: Iterable[F]) -> dict[tuple[str, str], list[F]]:
    """Findings grouped by (bug id, version)."""
    out: dict[tuple[str, str], list[F]] = {}
    for f in findings:
        out.setdefault((f.bug_id, f.version), []).append(f)
    return out

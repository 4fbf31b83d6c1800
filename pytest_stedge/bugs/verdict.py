"""A known bug's verdict on one toolchain version: the one rule every page and the terminal use.

Only the bug's evidence decides: the findings of its reproducer cases, of the cases that
list the bug, and of the cases its ``scope`` names (a model family, an operator). A
signature that merely matches on another model (a detector's head has hybrid epochs of
its own; any board timeout reads like a hang) is a *similar signature on other models*:
listed apart, never reproduced, never a reason to xfail an item.

Per (bug, version), over every run that evaluated it: the newest run in which the
evidence was evaluated decides; reproduced wins over not reproduced, which wins over
unknown; without any evidence the version is *not run*, whatever matched elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

STATUS_TEXT = {
    "reproduced": "reproduced",
    "not-reproduced": "not reproduced",
    "unknown": "unknown",
    "not-run": "not run",
}
SIMILAR_TEXT = "similar signature on other models"


class FindingView(Protocol):
    """What the verdict reads of a stored finding (the report's and the terminal's rows)."""

    @property
    def bug_id(self) -> str: ...
    @property
    def status(self) -> str: ...  # reproduced | not-reproduced | unknown
    @property
    def case_name(self) -> str: ...
    @property
    def stage(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def run_id(self) -> int: ...
    @property
    def group_run(self) -> int: ...  # the newest run of its run group (0: use run_id)
    @property
    def reproducer(self) -> bool: ...  # the item was in the bug's scope when evaluated


F = TypeVar("F", bound=FindingView)


def run_of(finding: FindingView) -> int:
    """The run a finding counts in: its run group's newest run (the shards of one CI
    pipeline are one run), else its own."""
    return finding.group_run or finding.run_id


def is_evidence(finding: FindingView, reproducers: Iterable[str]) -> bool:
    """Whether the finding is the bug's evidence (its case is a reproducer, lists the bug
    or is in the bug's scope), rather than a similar signature elsewhere."""
    return finding.reproducer or finding.case_name in set(reproducers)


@dataclass(frozen=True)
class BugVerdict(Generic[F]):
    """One bug on one version: its status, the findings that decided it, and the similar
    signatures seen on other models (listed apart)."""

    status: str  # reproduced | not-reproduced | unknown | not-run
    run_id: int = 0  # the run that decided (for not-run: the newest run with a similar match)
    evidence: list[F] = field(default_factory=list)  # the deciding run's evidence findings
    similar: list[F] = field(default_factory=list)  # matches elsewhere, in that run

    @property
    def text(self) -> str:
        """The status as people read it."""
        return STATUS_TEXT[self.status]

    @property
    def deciding(self) -> F | None:
        """The finding that shows the status (the first of the evidence with it; None when
        nothing decided: not run)."""
        return next((f for f in self.evidence if f.status == self.status), None)

    def similar_cases(self) -> list[str]:
        """The other models whose signature matched, sorted, each once."""
        return sorted({f.case_name for f in self.similar})


def bug_verdict(findings: Sequence[F], reproducers: Sequence[str]) -> BugVerdict[F]:
    """The verdict of one bug on one version from its findings there (any runs).

    :param findings: the bug's findings on that version.
    :param reproducers: the bug's reproducer cases (the registry's list; findings stored
        with ``reproducer`` true count as evidence too).
    """
    evidence = [f for f in findings if is_evidence(f, reproducers)]
    matched = [f for f in findings if not is_evidence(f, reproducers) and f.status == "reproduced"]
    if not evidence:
        newest = max((run_of(f) for f in matched), default=0)
        return BugVerdict("not-run", newest, [], [f for f in matched if run_of(f) == newest])
    newest = max(run_of(f) for f in evidence)
    # in case order, so every page names the same deciding case
    current = sorted((f for f in evidence if run_of(f) == newest), key=lambda f: (f.case_name, f.stage))
    statuses = {f.status for f in current}
    status = next((s for s in ("reproduced", "not-reproduced") if s in statuses), "unknown")
    return BugVerdict(status, newest, current, [f for f in matched if run_of(f) == newest])


def by_bug_and_version(findings: Iterable[F]) -> dict[tuple[str, str], list[F]]:
    """Findings grouped by (bug id, version)."""
    out: dict[tuple[str, str], list[F]] = {}
    for f in findings:
        out.setdefault((f.bug_id, f.version), []).append(f)
    return out


def what_would_fill(reproducers: Sequence[str], version: str) -> str:
    """What a *not run* cell needs: a reproducer run with that version."""
    if not reproducers:
        return f"no reproducer case is named: add one and run it with stedgeai {version}"
    names = ", ".join(reproducers[:3]) + (f" (or {len(reproducers) - 3} more)" if len(reproducers) > 3 else "")
    return (
        f"no reproducer ran with {version}: run {names} with stedgeai {version} "
        f"(pytest corpus --stedge-version {version}), or ingest such a run "
        f"(stedge ingest DIR --version {version} --case {reproducers[0]})"
    )

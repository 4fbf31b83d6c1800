"""The run report's known-bug statuses: per bug and version of one run, the verdict the
dashboard gives (:func:`pytest_stedge.bugs.verdict.bug_verdict`), with the reproducers read
from the registry of the run's corpus."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_stedge.bugs.verdict import FindingView


def registry_reproducers(case_paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each known bug's reproducers, from the registry of the run's corpus (if on disk)."""
    from pytest_stedge.bugs.registry import load_registry
    from pytest_stedge.errors import StedgeError

    from ..case.paths import find_corpus_root

    for path in case_paths:
        if path and Path(path).is_file():
            try:
                registry = load_registry(find_corpus_root(Path(path)) / "bugs")
            except StedgeError:
                return {}
            return {bug.id: bug.reproducers for bug in registry}
    return {}


def bug_status(
    findings: Sequence[FindingView], reproducers: Mapping[str, Sequence[str]]
) -> list[tuple[str, str, str, str, str, str]]:
    """Per bug and version in this run: the status the dashboard shows for it."""
    from pytest_stedge.bugs.verdict import SIMILAR_TEXT, bug_verdict, by_bug_and_version

    out = []
    for (bug_id, version), mine in sorted(by_bug_and_version(findings).items()):
        verdict = bug_verdict(mine, reproducers.get(bug_id, ()))
        deciding = verdict.deciding
        decided = f"{deciding.case_name} ({deciding.stage})" if deciding else "no reproducer ran"
        similar = verdict.similar_cases()
        aside = f"{SIMILAR_TEXT}: {len(similar)}" if similar else ""
        out.append((bug_id, version, verdict.status, verdict.text, decided, aside))
    return out

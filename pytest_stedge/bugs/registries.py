"""The known-bug registry of each corpus of a session, loaded once."""

from __future__ import annotations

from pathlib import Path

from ..case.model import Case
from ..errors import CaseError
from .registry import BugRegistry, check_case_bugs, load_registry


class BugRegistries:
    """The known-bug registry of each corpus, loaded once."""

    def __init__(self) -> None:
        self._registries: dict[Path, BugRegistry | CaseError] = {}  # by corpus root

    def registry(self, case: Case) -> BugRegistry:
        """The registry of the case's corpus (raises the CaseError it gave)."""
        cached = self._registries.get(case.corpus_root)
        if cached is None:
            try:
                cached = load_registry(case.corpus_root / "bugs")
            except CaseError as exc:
                cached = exc
            self._registries[case.corpus_root] = cached
        if isinstance(cached, CaseError):
            raise cached
        return cached

    def check(self, case: Case) -> None:
        """Refuse a case that names a bug its corpus's registry does not have."""
        registry = self.registry(case)  # also for a case naming none: a bad registry fails it
        if case.bugs:
            check_case_bugs(case.bugs, registry, case.path)

"""Cases as commands name them: a case.toml, its folder, a name under ./corpus, a corpus."""

from __future__ import annotations

from pathlib import Path

from pytest_stedge.errors import StedgeError

from .load import load_cases
from .model import Case
from .scan import iter_case_files


def find_case(text: str) -> Case:
    """A case by its case.toml, its folder, or its name under ./corpus.

    :raises StedgeError: none of those exists.
    """
    path = Path(text)
    for candidate in (path, path / "case.toml", Path("corpus") / text / "case.toml"):
        if candidate.suffix == ".toml" and candidate.is_file():
            return load_cases(candidate.resolve())[0]
    raise StedgeError(f"case {text!r}: no case.toml there, nor corpus/{text}/case.toml")


def load_corpus_cases(folder: str | None) -> dict[str, Case]:
    """Cases by name from ``folder`` (default ./corpus if present); {} without a corpus."""
    if folder is None:
        default = Path("corpus")
        if not default.is_dir():
            return {}
        root = default
    else:
        root = Path(folder)
        if not root.is_dir():
            raise StedgeError(f"--corpus {folder}: no such folder")
    cases: dict[str, Case] = {}
    for case_toml in iter_case_files(root):
        for case in load_cases(case_toml, root):
            cases[case.name] = case
    return cases

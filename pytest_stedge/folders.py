"""Collectors of corpus folders: thousands of case folders collect at about pytest's own
cost for as many parametrized items.

pytest's directory collector asks every plugin about every file in every folder, loads
conftests folder by folder and captures output around every file it collects. Inside a
corpus (a folder named ``corpus`` or holding ``bugs/`` or ``profiles/``), a *plain* case
folder (``case.toml`` beside models and data files: no Python, no sub-folder, no
virtualenv) is no node of its own: the corpus folder yields its items directly, with the
same node ids
(``corpus/<case>/case.toml::<stage>[<param>]``), the same ``-k`` keywords and the
conftests of the corpus folder. A malformed case still fails as its own case file. Every
other folder, Python packages and a case folder or file named on the command line are
collected as pytest would, so node ids, ``--ignore``, ``norecursedirs`` and conftests
behave as usual.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .case.scan import CASE_FILE, PathCache


def folder_collector(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The collector of ``path`` in a corpus run, or None to leave it to pytest."""
    if (path / "__init__.py").exists():
        return None  # a Python package: pytest's
    if isinstance(parent, CorpusFolder) or _is_corpus_root(path):
        return CorpusFolder.from_parent(parent, path=path)
    if (path / CASE_FILE).is_file():
        return CaseFolder.from_parent(parent, path=path)
    return None


def _is_corpus_root(path: Path) -> bool:
    # the rule of pytest_stedge.case.paths.find_corpus_root
    return path.name == "corpus" or (path / "bugs").is_dir() or (path / "profiles").is_dir()


def _sorted_entries(path: Path) -> list[os.DirEntry[str]]:
    with os.scandir(path) as entries:
        return sorted(entries, key=lambda entry: entry.name)  # pytest's order


class CorpusFolder(pytest.Directory):
    """A corpus folder: each plain case folder in it gives its case file directly."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        config, ihook, session = self.config, self.ihook, self.session
        rules = PytestIgnores(self)
        for entry in _sorted_entries(self.path):
            path = Path(entry.path)
            if entry.is_dir():
                if not session.isinitpath(path, with_parents=True):
                    scan = self._paths.take_scan(entry.path)
                    files = None if scan is None else scan.plain
                    if files is not None:
                        if rules.ignores_folder(entry.path):
                            continue
                        if not entry.is_symlink():
                            self._paths.saw_folder(entry.path, files)
                        yield from self._case(path / CASE_FILE, rules)
                        continue
                    if ihook.pytest_ignore_collect(collection_path=path, config=config):
                        continue
                folder = ihook.pytest_collect_directory(path=path, parent=self)
                if folder is not None:
                    yield folder
            elif entry.is_file():
                if not session.isinitpath(path) and ihook.pytest_ignore_collect(
                    collection_path=path, config=config
                ):
                    continue
                yield from ihook.pytest_collect_file(file_path=path, parent=self)

    @property
    def _paths(self) -> PathCache:
        from .state import path_cache

        return path_cache(self.config)

    def _case(self, path: Path, rules: PytestIgnores) -> Iterator[pytest.Item | pytest.Collector]:
        """The items of a plain case folder's case file, as children of this folder."""
        from .errors import CaseError
        from .items import case_file, case_items
        from .report.visible import visible

        if rules.ignores_file(str(path)):
            return
        # a folder named with bidi controls: ids show them too (as pytest_collect_file)
        text, root = str(path), str(self.config.rootpath)
        if text.startswith(root) and text[len(root):len(root) + 1] == os.sep:
            file_id: str | None = visible(text[len(root) + 1:].replace(os.sep, "/"))
        else:
            try:
                file_id = visible(path.relative_to(self.config.rootpath).as_posix())
            except ValueError:  # outside the rootdir: pytest names it, as a node of its own
                file_id = None
        if file_id is not None:
            try:
                yield from case_items(self, path, file_id)
                return
            except CaseError:
                pass  # reported by the case file's own node, which fails the same way
        yield case_file(self, path, hooks_from=self.path)


class CaseFolder(pytest.Directory):
    """A case folder collected as a node (named on the command line, or outside a corpus
    folder): its case file, Python files and sub-folders, without asking every plugin
    about each model and profile file."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        from .items import case_file

        config, ihook, session = self.config, self.ihook, self.session
        for entry in _sorted_entries(self.path):
            path = Path(entry.path)
            if entry.is_dir():
                if not session.isinitpath(path, with_parents=True) and ihook.pytest_ignore_collect(
                    collection_path=path, config=config
                ):
                    continue
                folder = ihook.pytest_collect_directory(path=path, parent=self)
                if folder is not None:
                    yield folder
            elif entry.name == CASE_FILE or entry.name.endswith(".py"):
                if not session.isinitpath(path) and ihook.pytest_ignore_collect(
                    collection_path=path, config=config
                ):
                    continue
                if entry.name == CASE_FILE:
                    yield case_file(self, path)
                else:
                    yield from ihook.pytest_collect_file(file_path=path, parent=self)


class PytestIgnores:
    """Whether pytest would ignore a plain case folder of one corpus folder, or its case
    file: the answer of the ``pytest_ignore_collect`` hook, worked out once per folder.

    Asking the hook twice per case cost 0.23 ms a case, a fifth of collecting it: pytest's
    rule (``_pytest.main``) looks up the conftests' ``collect_ignore`` lists and converts
    the path for every ``norecursedirs`` pattern on every call, though for every entry of
    one folder the conftests are the same (a plain case folder holds none). Where another
    plugin or a conftest implements the hook, every question goes to the hook too.
    """

    def __init__(self, folder: pytest.Directory) -> None:
        self._config = config = folder.config
        self._hook = folder.ihook.pytest_ignore_collect
        # pytest's rule alone (and the pytest whose conftest look-up this uses, which
        # tests/test_collection.py checks against the hook): it can be answered here
        listed = getattr(config, "_getconftest_pathlist", None)
        self._own = listed is not None and all(
            impl.function.__module__ == "_pytest.main" for impl in self._hook.get_hookimpls()
        )
        # _pytest.main.pytest_ignore_collect, for the children of ``folder.path``
        paths = (listed and listed("collect_ignore", path=folder.path)) or []
        self._paths = {str(path) for path in paths}
        self._paths.update(os.path.abspath(x) for x in config.getoption("ignore") or [])
        globs = (listed and listed("collect_ignore_glob", path=folder.path)) or []
        self._globs = [str(glob) for glob in globs]
        self._globs += [os.path.abspath(x) for x in config.getoption("ignore_glob") or []]
        names: list[str] = []  # norecursedirs matched on the name (fnmatch_ex's rule) ...
        self._full: list[str] = []  # ... and those with a separator, on the whole path
        for pattern in config.getini("norecursedirs"):
            if sys.platform.startswith("win") and os.sep not in pattern and "/" in pattern:
                pattern = pattern.replace("/", os.sep)
            if os.sep not in pattern:
                names.append(pattern)
            else:
                self._full.append(pattern if os.path.isabs(pattern) else f"*{os.sep}{pattern}")
        # fnmatch.fnmatch is normcase + the pattern's regex: one regex for all the names
        self._names = (
            re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in names))
            if names else None
        )

    def _ask(self, path: str) -> bool:
        return bool(self._hook(collection_path=Path(path), config=self._config))

    def _listed(self, path: str, name: str) -> bool:
        if name == "__pycache__" or path in self._paths:
            return True
        return any(fnmatch.fnmatch(path, glob) for glob in self._globs)

    def ignores_folder(self, path: str) -> bool:
        """Whether pytest ignores ``path``, a plain case folder (not a virtualenv) in it."""
        if not self._own:
            return self._ask(path)
        name = os.path.basename(path)
        if self._listed(path, name):
            return True
        if self._names is not None and self._names.match(os.path.normcase(name)):
            return True
        return any(fnmatch.fnmatch(path, p) for p in self._full)

    def ignores_file(self, path: str) -> bool:
        """Whether pytest ignores ``path``, the case file of a plain case folder in it.

        pytest's hook alone would miss a ``collect_ignore`` naming the file: it reads the
        conftests of the file's folder, which were never loaded (no node of its own)."""
        return self._listed(path, os.path.basename(path)) or (not self._own and self._ask(path))

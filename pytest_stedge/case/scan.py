"""Folder listings of a corpus: each case folder listed once per session, and the paths
resolved once per collection (thousands of cases share a few folders)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

CASE_FILE = "case.toml"
_VENV_MARK = "pyvenv.cfg"  # a virtualenv: pytest skips it by rules of its own


@dataclass(frozen=True)
class FolderScan:
    """One listing of a folder, with what collection and the recordings search need."""

    files: frozenset[str]  # names of the entries that are no folder
    subfolders: tuple[str, ...]  # paths of the sub-folders that are no symlink
    #: a plain case folder (a case.toml, no Python, no sub-folder, no virtualenv): the
    #: names of its regular files that are no symlink; None for any other folder
    plain: tuple[str, ...] | None


def scan_folder(folder: str) -> FolderScan | None:
    """List ``folder`` once (None if it cannot be read)."""
    files, subfolders, regular = set(), [], []
    has_case, plain = False, True
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    is_folder = entry.is_dir()
                except OSError:
                    is_folder = False
                link = entry.is_symlink()
                if is_folder:
                    plain = False
                    if not link:
                        subfolders.append(entry.path)
                    continue
                name = entry.name
                files.add(name)
                if name.endswith(".py") or name == _VENV_MARK:
                    plain = False
                elif name == CASE_FILE and not has_case:
                    has_case = entry.is_file()
                if not link:
                    regular.append(name)
    except OSError:
        return None
    return FolderScan(frozenset(files), tuple(subfolders),
                      tuple(regular) if plain and has_case else None)


@dataclass(frozen=True)
class ScannedFolder:
    """A case folder (no symlink) a folder scan saw: where it really is, its regular files."""

    real: Path
    names: frozenset[str]


@dataclass
class PathCache:
    """Paths resolved once per collection (thousands of cases share a few folders).

    Keys are paths as strings: building and hashing a ``Path`` a few times per case was a
    tenth of collecting it.
    """

    real: dict[str, Path] = field(default_factory=dict)  # folder -> without symlinks
    roots: dict[str, Path] = field(default_factory=dict)  # folder above a case -> root
    scanned: dict[str, ScannedFolder] = field(default_factory=dict)  # case folder -> scan
    inside: dict[tuple[Path, Path], bool] = field(default_factory=dict)  # (folder, root)
    #: listings the session's recordings search made (pytest_stedge.case.recordings), each
    #: taken once by the collection that follows instead of listing the folder again
    scans: dict[str, FolderScan] = field(default_factory=dict)

    def take_scan(self, folder: str) -> FolderScan | None:
        """The listing of ``folder``: the search's, else a new one."""
        scan = self.scans.pop(folder, None)
        return scan if scan is not None else scan_folder(folder)

    def real_folder(self, folder: str | Path) -> Path:
        """``folder`` without symlinks (resolved once)."""
        key = os.fspath(folder)
        real = self.real.get(key)
        if real is None:
            real = self.real[key] = Path(os.path.realpath(key))
        return real

    def saw_folder(self, folder: str, files: Iterable[str]) -> None:
        """A folder scan found ``folder`` (absolute, no symlink) holding these regular files."""
        above, name = os.path.split(folder)
        self.scanned[folder] = ScannedFolder(self.real_folder(above) / name, frozenset(files))

    def is_inside(self, folder: Path, root: Path) -> bool:
        """Whether ``folder`` (without symlinks) is ``root`` or below it."""
        key = (folder, root)
        inside = self.inside.get(key)
        if inside is None:
            inside = self.inside[key] = folder.is_relative_to(root)
        return inside


def iter_case_files(root: Path) -> Iterator[Path]:
    """Every case.toml under ``root``, sorted."""
    yield from sorted(Path(root).rglob("case.toml"))

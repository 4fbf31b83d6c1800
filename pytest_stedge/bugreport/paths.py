"""Keeping a report folder self-contained: relative paths only, nothing from elsewhere.

The runs are made inside the folder, so every path the tool writes starts with the
folder's own path: it becomes ``.``. The install's own path (the tool prints where its
compiler lives) becomes ``<stedgeai>``. What is left that looks like an absolute path of
this machine is reported, so that the report is never shipped with one.
"""

from __future__ import annotations

import re
from pathlib import Path

# Generated code and memory images: ST regenerates them from the commands; they are large.
DROPPED_SUFFIXES = frozenset({".c", ".h", ".raw", ".hex", ".bin", ".o", ".a", ".elf", ".so",
                              ".dll"})
TEXT_SUFFIXES = frozenset({".txt", ".json", ".log", ".md", ".ini", ".mpool", ".csv", ".toml",
                           ".sh", ""})
_ABSOLUTE = re.compile(r"(?<![\w.:/\\<])(/(?:home|root|tmp|Users|opt|var|mnt|usr|work|srv)/"
                       r"[^\s\"',;)]*|[A-Za-z]:[\\/][^\s\"',;)]*)")


def rewrite_text(path: Path, folder: Path, replacements: dict[str, str]) -> None:
    """Replace each key of ``replacements`` in a text file (the folder's own prefix
    first, as the longest)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
    new = text
    for old in sorted(replacements, key=len, reverse=True):
        for form in {old, old.replace("\\", "/"), old.replace("/", "\\")}:
            new = new.replace(form, replacements[old])
    if new != text:
        path.write_text(new, encoding="utf-8")


def prune(folder: Path) -> list[str]:
    """Drop generated code and memory images; returns what was dropped (relative)."""
    dropped = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in DROPPED_SUFFIXES:
            dropped.append(path.relative_to(folder).as_posix())
            path.unlink()
    return dropped


def absolute_paths(folder: Path) -> list[str]:
    """``file: path`` for every absolute path of a machine left in the folder's text
    files, and every symlink (which would point outside)."""
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found.append(f"{rel}: a symbolic link")
            continue
        if not path.is_file() or path.suffix.lower() not in TEXT_SUFFIXES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{rel}: {m.group(1)}" for m in _ABSOLUTE.finditer(text)]
    return found


def relative_argv(argv: list[str], folder: Path, install_root: Path) -> list[str]:
    """A command line as it runs from the folder: ``stedgeai`` first, the folder's paths
    relative (``./model/x.onnx``), the install's written ``<stedgeai>``."""
    prefix = str(folder)
    out = ["stedgeai"]
    for word in argv[1:]:
        text = str(word).replace(prefix + "/", "./").replace(prefix, ".")
        out.append(text.replace(str(install_root), "<stedgeai>"))
    return out

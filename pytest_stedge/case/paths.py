"""Paths named by case files: resolved, and kept inside the corpus (a case file is
untrusted input: no path of it may lead out of its corpus)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import CaseError
from .model import ONNX_LIGHT_PREFIX
from .scan import PathCache

_PROJECT_MARKERS = ("pyproject.toml", ".git", "pytest.ini", "setup.cfg", "tox.ini", "setup.py")


def find_corpus_root(case_toml: Path) -> Path:
    """The corpus root of a case: the nearest ancestor named ``corpus`` or holding ``bugs/``
    or ``profiles/``, never above the project (a folder with ``pyproject.toml``, ``.git``,
    ``pytest.ini`` ...); else the case folder's parent."""
    # Walk up from where the case sits, not from where a symlinked case folder leads: a
    # folder linked in from outside must not bring its own surroundings as the corpus.
    folder = Path(os.path.abspath(case_toml)).parent
    for parent in folder.parents:
        if parent.name == "corpus" or (parent / "bugs").is_dir() or (parent / "profiles").is_dir():
            return parent
        if any((parent / marker).exists() for marker in _PROJECT_MARKERS):
            break
    return folder.parent

def real_case_path(case_toml: Path, cache: PathCache | None) -> Path:
    """The case file's path without symlinks: the folder above the case folder resolved
    once per collection, then a look at the case folder and the file themselves."""
    if cache is None or not case_toml.is_absolute():
        return Path(os.path.realpath(case_toml))
    folder = cache.real_folder(case_toml.parent.parent) / case_toml.parent.name
    if os.path.islink(folder) or os.path.islink(case_toml):
        return Path(os.path.realpath(case_toml))
    return folder / case_toml.name

def resolve_model(
    path: Path, root: Path, ref: str, key: str, local: frozenset[str] = frozenset()
) -> Path:
    """Resolve a model reference: a file inside the corpus, or an onnx test-data model.

    :param local: names of regular files a folder scan has just seen in the case's (real)
        folder, itself inside the corpus: such a name needs no look again.
    """
    if ref.startswith(ONNX_LIGHT_PREFIX):
        name = ref[len(ONNX_LIGHT_PREFIX) :]
        light = onnx_light_dir()
        candidates = sorted(p.stem.removeprefix("light_") for p in light.glob("light_*.onnx"))
        model = light / f"light_{name}.onnx"
        if name not in candidates:
            raise CaseError(
                path, key, f"{ref!r}: no such model in {light}; accepted: {', '.join(candidates)}"
            )
        return model
    if ref in local:
        return path.parent / ref
    model = inside_corpus(path, root, ref, key)
    if not os.path.isfile(model):  # False, not ENAMETOOLONG, for a name too long
        raise CaseError(path, key, f"model file {shown(ref)} not found (looked for "
                                   f"{shown(str(model))})")
    return model


def shown(ref: str, limit: int = 120) -> str:
    """A path as a message quotes it: a hostile 5,000-character one is cut, its length said."""
    if len(ref) <= limit:
        return repr(ref)
    return f"{ref[:limit]!r}... ({len(ref):,} characters)"


def onnx_light_dir() -> Path:
    """Folder of the real architectures the onnx package ships as test data."""
    import importlib.util

    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the onnx package is not installed")
    return Path(spec.origin).parent / "backend" / "test" / "data" / "light"


def inside_corpus(path: Path, root: Path, ref: Any, key: str) -> Path:
    if not isinstance(ref, str) or not ref:
        raise CaseError(path, key, f"expected a relative path string, got {ref!r}")
    if "\0" in ref:
        raise CaseError(path, key, f"path {shown(ref)} holds a NUL character; expected a relative path")
    if Path(ref).is_absolute():
        raise CaseError(path, key, f"path {shown(ref)} is absolute; expected a path relative to "
                                   "the case folder, inside the corpus")
    candidate = path.parent / ref
    try:
        if os.sep in ref or "/" in ref or ref in (".", "..") or candidate.is_symlink():
            candidate = candidate.resolve()  # a plain name in the (resolved) folder is final
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop
        raise CaseError(
            path, key, f"path {shown(ref)} cannot be resolved: {os_reason(exc)}"
        ) from None
    if not candidate.is_relative_to(root):
        raise CaseError(
            path, key, f"path {shown(ref)} leaves the corpus ({root}); keep case files inside it"
        )
    return candidate


def resolved_root(case_toml: Path, root: Path) -> Path:
    try:
        return Path(root).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise CaseError(case_toml, None, f"corpus root {root} cannot be resolved: "
                                         f"{os_reason(exc)}") from None


def os_reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)

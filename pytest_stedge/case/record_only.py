"""Record-only cases: a case that names its model by hash and public source, without
shipping it (its licence is unknown, or it is too large for the corpus).

In ``case.toml``::

    model = { file = "baseline_conv2d_1x1_int8.tflite",
              sha256 = "1f0c...", md5 = "c85b2bb9...", size = 2_136,
              source = "https://github.com/<owner>/<repo>/blob/<commit>/<path>",
              licence = "unknown" }

At least one of ``sha256`` and ``md5`` is required (the tool itself prints the md5 of the
model it compiled; some public runs survive without their model, so only that md5 is
known). The file is looked for in the ``--stedge-models DIR`` folders (ini
``stedge_models``) and matched by hash, never by name alone: the oracle runs when it is
found and skips, saying where it looked, when it is not. Toolchain items replay the
case's recordings (:mod:`pytest_stedge.case.recordings`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CaseError
from .suggest import did_you_mean

MODEL_KEYS = ("file", "sha256", "md5", "size", "source", "licence")
_HEX = {"sha256": re.compile(r"^[0-9a-f]{64}$"), "md5": re.compile(r"^[0-9a-f]{32}$")}
_FILE_RE = re.compile(r"^[\w.+\-]+$")
MAX_INDEXED_BYTES = 256 << 20  # a folder scan never hashes files larger than this


@dataclass(frozen=True)
class ModelSource:
    """Where a model that the corpus does not ship comes from, and how to recognise it."""

    file: str
    source: str
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    licence: str = "unknown"

    def identity(self) -> str:
        """The model's identity in the store: its sha256, else ``md5:<hex>``."""
        return self.sha256 if self.sha256 else f"md5:{self.md5}"

    def matches(self, sha256: str, md5: str) -> bool:
        """Whether a file with these digests is this model (every declared digest agrees)."""
        if self.sha256 and self.sha256 != sha256:
            return False
        return not (self.md5 and self.md5 != md5)

    def describe(self) -> str:
        """One line for skip reasons: the file, its hash and where to get it."""
        digest = f"sha256 {self.sha256}" if self.sha256 else f"md5 {self.md5}"
        return f"{self.file} ({digest}; {self.source}; licence {self.licence})"


def parse_model_table(path: Path, key: str, raw: Mapping[str, Any]) -> ModelSource:
    """Validate a ``model = { ... }`` table; raise :class:`CaseError` naming the key."""
    unknown = sorted(set(raw) - set(MODEL_KEYS))
    if unknown:
        raise CaseError(
            path, f"{key}.{unknown[0]}",
            f"unknown key{did_you_mean(unknown[0], MODEL_KEYS)}; accepted: {', '.join(MODEL_KEYS)}"
        )

    def text(name: str, required: bool = False) -> str | None:
        value = raw.get(name)
        if value is None:
            if required:
                raise CaseError(path, f"{key}.{name}", "missing; " + _HELP[name])
            return None
        if not isinstance(value, str) or not value:
            raise CaseError(path, f"{key}.{name}", f"expected {_HELP[name]}, got {value!r}")
        return value

    file = text("file", required=True)
    assert file is not None
    if not _FILE_RE.match(file):
        raise CaseError(path, f"{key}.file", f"expected {_HELP['file']}, got {file!r}")
    source = text("source", required=True)
    assert source is not None
    if not source.startswith("https://"):
        raise CaseError(path, f"{key}.source", f"expected {_HELP['source']}, got {source!r}")
    digests = {}
    for name in ("sha256", "md5"):
        value = text(name)
        if value is not None:
            value = value.lower().removeprefix("0x")
            if not _HEX[name].match(value):
                raise CaseError(path, f"{key}.{name}", f"expected {_HELP[name]}, got {raw[name]!r}")
        digests[name] = value
    if not digests["sha256"] and not digests["md5"]:
        raise CaseError(path, key, "a model the corpus does not ship needs sha256 or md5")
    size = raw.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise CaseError(path, f"{key}.size", f"expected {_HELP['size']}, got {size!r}")
    return ModelSource(
        file=file,
        source=source,
        sha256=digests["sha256"],
        md5=digests["md5"],
        size=size,
        licence=text("licence") or "unknown",
    )


_HELP = {
    "file": "the model's file name (letters, digits, '.', '_', '-', '+')",
    "source": "an https:// URL where the model is published",
    "sha256": "64 hex digits",
    "md5": "32 hex digits (the tool's model_hash, with or without 0x)",
    "size": "the file size in bytes, a positive integer",
    "licence": "the model's licence as its source states it, or 'unknown'",
}


def digests(path: Path) -> tuple[str, str]:
    """(sha256, md5) of a file, read once in blocks."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
            md5.update(block)
    return sha.hexdigest(), md5.hexdigest()


@dataclass
class ModelFinder:
    """Finds record-only models in folders by hash (files of the declared size first)."""

    folders: list[Path] = field(default_factory=list)
    _found: dict[ModelSource, Path | None] = field(default_factory=dict)
    _files: list[Path] | None = None

    def find(self, source: ModelSource) -> Path | None:
        """The file under one of the folders whose digests match ``source``, or None."""
        if source not in self._found:
            self._found[source] = self._search(source)
        return self._found[source]

    def describe(self) -> str:
        """The folders searched, for skip reasons."""
        if not self.folders:
            return "no --stedge-models folder given"
        return "searched " + ", ".join(str(f) for f in self.folders)

    def _search(self, source: ModelSource) -> Path | None:
        files = self._all_files()
        # the same name first, then any file of the declared size: hashing stays cheap
        ranked = sorted(files, key=lambda p: (p.name != source.file, str(p)))
        for candidate in ranked:
            try:
                size = candidate.stat().st_size
            except OSError:
                continue
            if size > MAX_INDEXED_BYTES or (source.size is not None and size != source.size):
                continue
            if source.size is None and candidate.name != source.file:
                continue
            try:
                sha, md5 = digests(candidate)
            except OSError:
                continue
            if source.matches(sha, md5):
                return candidate
        return None

    def _all_files(self) -> list[Path]:
        if self._files is None:
            self._files = sorted(_walk(self.folders))
        return self._files


def _walk(folders: Iterable[Path]) -> Iterable[Path]:
    for folder in folders:
        if folder.is_file():
            yield folder
            continue
        for path in folder.rglob("*"):
            if path.is_file() and not any(part.startswith(".") for part in path.parts[-2:]):
                yield path

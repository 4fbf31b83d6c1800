"""The provenance of a recorded file: the SOURCE.txt entry that says where it was published.

record.py and public_runs.py both read SOURCE.txt files: the hand-written real cases'
``Files`` sections here, the public runs' and samples' layouts in public_runs.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote


@dataclass
class SourceFile:
    """One file entry of a SOURCE.txt."""

    repository: str
    path: str
    commit: str
    size: int
    md5: str
    command: str = ""
    tool: str = ""


def read_source_txt(folder: Path) -> dict[str, SourceFile]:
    """The Files section of ``folder/SOURCE.txt``, by path relative to the folder."""
    entries: dict[str, SourceFile] = {}
    current: str | None = None
    fields: dict[str, str] = {}

    def close() -> None:
        if current and {"repo", "path", "commit", "size"} <= set(fields):
            size, md5 = re.match(r"(\d+) bytes; md5: ([0-9a-f]{32})", fields["size"]).groups()  # type: ignore[union-attr]
            entries[current] = SourceFile(
                fields["repo"], fields["path"], fields["commit"], int(size), md5,
                fields.get("command stated", ""), fields.get("tool version stated", ""),
            )

    text = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    for line in text.split("Files\n-----\n", 1)[1].splitlines():
        if line and not line.startswith(" "):
            close()
            current, fields = line.strip(), {}
        elif line.startswith("  ") and ":" in line:
            key, value = line.strip().split(":", 1)
            fields.setdefault(key, value.strip())
    close()
    return entries


def blob_url(entry: SourceFile) -> str:
    return f"{entry.repository}/blob/{entry.commit}/{quote(entry.path)}"

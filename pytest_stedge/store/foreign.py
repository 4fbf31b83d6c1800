"""A store file another DuckDB release wrote: which release, and how to convert it.

A DuckDB reads only the storage versions it knows: a store written by a newer release
(README command 1 once installed DuckDB 2.0.1, command 2 the extras' 1.5.5) fails to open
with "version number 999, but we can only read versions between 64 and 68". The file's
main header names the release that wrote it; the message names it, the running one, and
the commands that carry the runs across (a Parquet bundle both releases read).
"""

from __future__ import annotations

import duckdb


def written_by(path: str) -> str | None:
    """The DuckDB release that wrote a store file, from its header (``v1.5.5``), if stated."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(128)
    except OSError:
        return None
    # main header after the 8-byte checksum: "DUCK", the storage version (8 bytes), flags,
    # then from 1.2 on the library version string (32 bytes) at offset 52
    if header[8:12] != b"DUCK":
        return None
    text = header[52:84].split(b"\0", 1)[0].decode("ascii", "replace").strip()
    return text or None


def is_other_release(lower_text: str) -> bool:
    """Whether a DuckDB error (lower-cased) says the file's storage version is unknown."""
    return "version number" in lower_text and (
        "can only read" in lower_text or "database file" in lower_text
    )


def other_release_message(path: str, first: str) -> str:
    """Why a store another DuckDB wrote cannot be read, and the commands that convert it."""
    writer = written_by(path) or "another DuckDB release"
    return (
        f"store {path} was written by DuckDB {writer}; this environment runs DuckDB "
        f"{duckdb.__version__}, which cannot read it ({first}). Convert it: with DuckDB "
        f"{writer} installed, `stedge export --db {path} --out bundle/`; then here, "
        f"`stedge import bundle/ --db NEW.duckdb`"
    )

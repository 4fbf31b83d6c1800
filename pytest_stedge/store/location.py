"""Where a store lives: a local DuckDB file, or a shared PostgreSQL server.

``--stedge-db`` and ``--db`` take either a file path or a PostgreSQL connection string
(``postgresql://user@host:5432/dbname`` or libpq's ``postgres:host=... dbname=...``).
Kept free of DuckDB: the pytest flow and the CLI parse the option with it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

SERVER_PREFIXES = ("postgresql://", "postgres://")
LIBPQ_PREFIX = "postgres:"
DUCKLAKE_PREFIX = "ducklake:"

Location = Path | str
"""A store location: a Path for a DuckDB file, a str for a server (or ``":memory:"``)."""


def is_server(location: Location) -> bool:
    """Whether ``location`` names a PostgreSQL server rather than a file."""
    return isinstance(location, str) and location.startswith(SERVER_PREFIXES + (LIBPQ_PREFIX,))


def parse_location(text: str) -> Location:
    """The store a ``--db`` / ``--stedge-db`` value names: a server stays a string,
    anything else is a file path (``":memory:"`` stays the in-memory store).

    :raises ValueError: for a DuckLake location (see the README: the shared store is
        PostgreSQL), with what is accepted instead.
    """
    if text.startswith(DUCKLAKE_PREFIX):
        raise ValueError(
            f"{text!r}: DuckLake stores are not supported; a shared store is a PostgreSQL "
            "database, given as postgresql://USER@HOST:PORT/DBNAME (see the README's "
            "'Team store')"
        )
    if text == ":memory:" or text.startswith(SERVER_PREFIXES + (LIBPQ_PREFIX,)):
        return text
    return Path(text)


def libpq_dsn(location: str) -> str:
    """The connection string libpq takes (it reads URIs itself; ``postgres:`` is cut)."""
    if location.startswith(LIBPQ_PREFIX) and not location.startswith(SERVER_PREFIXES):
        return location[len(LIBPQ_PREFIX):].strip()
    return location


def display(location: Location) -> str:
    """``location`` as messages show it: a password in it is masked."""
    text = str(location)
    text = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", text)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", text, flags=re.IGNORECASE)


def journal_dir_of(location: Location) -> Path:
    """The folder of this machine's journals for ``location``.

    A file store keeps them beside itself; a server store keeps them on the machine that
    wrote them (the server may be the thing that failed), under ``.stedge/`` of the
    current folder, one folder per server and database.
    """
    if not is_server(location):
        return Path(f"{location}.journal")
    digest = hashlib.sha256(display(location).encode()).hexdigest()[:12]
    return Path(".stedge").resolve() / f"server-{digest}.journal"

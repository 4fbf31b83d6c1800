"""One view of the store for a long read (the dashboard: every page from the same data),
without holding the file while pages render.

A server store gives it by a transaction (its snapshot: other machines keep writing). A
DuckDB file cannot: a read holds the file's lock, and eight sessions writing it waited out
their 5 s behind a dashboard rendering for 20 s (their runs never started). So a file is
copied under one brief read hold (no writer changes it meanwhile) and read from the copy.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_stedge.errors import StoreError

from .database import Store
from .files import MEMORY


@contextmanager
def one_view(store: Store) -> Iterator[Store]:
    """``store`` as it is now, for every read of the block, whatever is committed meanwhile."""
    if store.server or store.path == MEMORY:
        with store.snapshot():
            yield store
        return
    with tempfile.TemporaryDirectory(prefix="stedge-view-") as tmp:
        copy = Path(tmp) / "view.duckdb"
        with store.attached():  # a read hold: no writer changes the file meanwhile
            try:
                shutil.copyfile(store.path, copy)
                wal = Path(f"{store.path}.wal")
                if wal.exists():
                    shutil.copyfile(wal, f"{copy}.wal")
                copied = True
            except OSError:  # no room for a copy: the pages are read with the file held
                copied = False
        view = _open(copy) if copied else None
        if view is None:
            with store.snapshot():
                yield store
            return
        with view:
            yield view


def _open(copy: Path) -> Store | None:
    try:
        return Store.open(copy, create=False, read_only=True)
    except StoreError:
        return None

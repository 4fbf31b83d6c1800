"""A session's writes: each finished item goes to the journal at once, then to the store
in small batches from a thread, so the store holds it within a fraction of a second and
the file is held only while a batch is written (readers take turns with it).

Rows the store could not take (a full disk, a store held by someone else past the wait,
a damaged file) stay in the journal, which the next session merges.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

from pytest_stedge.errors import StoreBusyError, StoreError

from .connection import StoreFullError
from .database import Store
from .journal import Journal
from .rows import ItemRow

BATCH_WINDOW_S = 0.2
MAX_BATCH = 2000
_STOP = object()


@dataclass
class WriteReport:
    """How the session's writes went."""

    stored: int = 0
    unstored: list[ItemRow] = field(default_factory=list)
    full: bool = False
    errors: list[str] = field(default_factory=list)


class SessionWriter:
    """Journal first, then the store: see the module docstring."""

    def __init__(
        self, store: Store, run_id: int, journal: Journal | None, *,
        window_s: float = BATCH_WINDOW_S,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.journal = journal
        self.window_s = window_s
        self.report = WriteReport()
        self._queue: queue.Queue[object] = queue.Queue()
        self._backlog: list[ItemRow] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="stedge-store-writer", daemon=True)
        self._thread.start()

    def put(self, row: ItemRow) -> None:
        """Hand over one finished item (journaled before this returns)."""
        if self.journal is not None:
            self.journal.add(row)
        self._queue.put(row)

    def close(self) -> WriteReport:
        """Write what is left, stop the thread, and say how it went."""
        self._queue.put(_STOP)
        self._thread.join()
        with self._lock:
            if self._backlog and not self.report.full:
                self._write([])
            self.report.unstored = list(self._backlog)
        return self.report

    def _loop(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                return
            assert isinstance(first, ItemRow)
            batch = [first]
            deadline = time.monotonic() + self.window_s
            while len(batch) < MAX_BATCH:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    more = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
                if more is _STOP:
                    stop = True
                    break
                assert isinstance(more, ItemRow)
                batch.append(more)
            with self._lock:
                self._write(batch)

    def _write(self, batch: list[ItemRow]) -> None:
        rows = self._backlog + batch
        self._backlog = []
        if self.report.full:  # the store's disk is full: the journal keeps them
            self._backlog = rows
            return
        try:
            self.store.add_items(self.run_id, rows)
        except StoreFullError as exc:
            self.report.full = True
            self.report.errors.append(str(exc))
            self._backlog = rows
        except StoreBusyError:
            self._backlog = rows  # another process holds the file: next batch, or the journal
        except StoreError as exc:
            self.report.errors.append(str(exc))
            self._backlog = rows
        else:
            self.report.stored += len(rows)

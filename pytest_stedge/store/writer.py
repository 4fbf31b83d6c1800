"""A session's writes: each finished item goes to the journal at once, then to the store
in small batches from a thread, so the store holds it within a fraction of a second.

While items keep arriving the file stays attached between batches (attaching and
detaching, with its checkpoint, cost ~100 ms of CPU per batch against ~30 ms for the
write); it is released when no item came for :data:`IDLE_RELEASE_S`, after
:data:`MAX_HOLD_S`, or as soon as someone says it waits for the file (a reader, an ingest,
another session: the store's waiting flag, see
:meth:`~pytest_stedge.store.connection.StoreConnection.someone_waiting`), so they all take
turns with a session that writes.

Rows the store could not take (a full disk, a store held by someone else past the wait,
a damaged file) stay in the journal, which the next session merges.
"""

from __future__ import annotations

import queue
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from pytest_stedge.errors import StoreBusyError, StoreError

from .connection import StoreFullError
from .database import Store
from .journal import Journal
from .rows import ItemRow

BATCH_WINDOW_S = 0.2
MAX_BATCH = 2000
IDLE_RELEASE_S = 1.0  # no item for this long: let the file go
MAX_HOLD_S = 5.0  # never hold it longer in one go
READER_LOOK_S = 0.05  # while holding, how often to look for a waiting reader
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
                hold = _Hold(self.store)
                try:
                    self._write([], hold)
                finally:
                    self._release(hold)
            self.report.unstored = list(self._backlog)
        return self.report

    def _loop(self) -> None:
        hold = _Hold(self.store)
        try:
            self._serve(hold)
        finally:
            self._release(hold)

    def _serve(self, hold: _Hold) -> None:
        stop = False
        while not stop:
            try:
                first = self._queue.get(timeout=READER_LOOK_S if hold.held else None)
            except queue.Empty:
                if hold.due():
                    self._release(hold)
                continue
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
                self._write(batch, hold)
            if hold.held and hold.due():
                self._release(hold)

    def _write(self, batch: list[ItemRow], hold: _Hold) -> None:
        rows = self._backlog + batch
        self._backlog = []
        if self.report.full:  # the store's disk is full: the journal keeps them
            self._backlog = rows
            return
        try:
            hold.take()
            self.store.add_items(self.run_id, rows)
        except StoreFullError as exc:
            self.report.full = True
            self.report.errors.append(str(exc))
            self._backlog = rows
            hold.drop()
        except StoreBusyError:
            self._backlog = rows  # another process holds the file: next batch, or the journal
            hold.drop()
        except StoreError as exc:
            self.report.errors.append(str(exc))
            self._backlog = rows
            hold.drop()
        else:
            self.report.stored += len(rows)
            hold.wrote()

    def _release(self, hold: _Hold) -> None:
        try:
            hold.release()
        except StoreError as exc:  # the rows are committed; the file's checkpoint failed
            self.report.errors.append(str(exc))


class _Hold:
    """The store's file held for writing across batches (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._hold: AbstractContextManager[object] | None = None
        self.since = 0.0  # wall clock, for the reader flag's time
        self._taken = 0.0  # monotonic
        self._last_write = 0.0

    @property
    def held(self) -> bool:
        return self._hold is not None

    def take(self) -> None:
        """Attach the file for writing, unless it is held already."""
        if self._hold is None:
            hold = self.store.attached(write=True)
            hold.__enter__()
            self._hold = hold
            self.since, self._taken = time.time(), time.monotonic()

    def wrote(self) -> None:
        self._last_write = time.monotonic()

    def due(self) -> bool:
        """Whether to let the file go: idle, held long enough, or someone waits."""
        now = time.monotonic()
        return (
            now - self._last_write >= IDLE_RELEASE_S
            or now - self._taken >= MAX_HOLD_S
            or self.store.someone_waiting(since=self.since)
        )

    def release(self) -> None:
        """Detach (DuckDB checkpoints the file on the way)."""
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.__exit__(None, None, None)

    def drop(self) -> None:
        """Let the file go after a failed write (the connection is reset)."""
        hold, self._hold = self._hold, None
        if hold is not None:
            failure = StoreError("a write failed")
            try:
                hold.__exit__(StoreError, failure, None)
            except StoreError:
                pass

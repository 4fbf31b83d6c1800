"""The end of a session's writes: one more, more patient try for what the writer could not
store, and the account of what is still only in the journal.

During the session the writer gives up on a busy store after the usual wait (the rows wait
in the journal for the next batch) and stops trying once the disk is full. At the end that
is too early: eight sessions writing one file can hold it past a reader's wait, and a disk
the journal's reserve filled may have room once the reserve is given back. Whatever still
is not stored after this is said by :func:`not_stored_lines`, and the session's exit status
says it too (see :mod:`pytest_stedge.session`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_stedge.errors import StoreBusyError, StoreError

from .connection import StoreFullError
from .database import Store
from .journal import Journal
from .location import Location
from .writer import WriteReport

END_WAIT_S = 30.0  # how long the end waits for a store other sessions hold (default)


@dataclass
class Ending:
    """How the session's end went: whether the store holds the whole run."""

    finished: bool = False  # the run's end (status, exit status) is in the store
    complete: bool = False  # ... and every finished item


def finish_writes(
    store: Store, run_id: int, kept: WriteReport, journal: Journal, *, status: str,
    exitstatus: int, wait_s: float = END_WAIT_S,
) -> Ending:
    """Store what the writer left (``kept.unstored``) and the run's end, waiting up to
    ``wait_s`` for a busy store; on a full disk, once more after giving the journal's
    unused reserve back. Updates ``kept``; the journal is closed (and deleted when the
    store holds everything)."""
    journal.finish(status, exitstatus)
    ending = Ending()
    patient = max(store.wait_s, wait_s)
    store.wait_s, before = patient, store.wait_s
    try:
        for attempt in range(2):
            if attempt:
                if not kept.full:
                    break
                journal.release()  # the reserve must not take the store's room
            try:
                if kept.unstored:
                    store.add_items(run_id, kept.unstored)
                    kept.stored += len(kept.unstored)
                    kept.unstored = []
                store.finish_run(run_id, status=status, exitstatus=exitstatus)
            except StoreFullError as exc:
                kept.full = True
                kept.errors.append(str(exc))
                continue
            except StoreBusyError as exc:
                kept.errors.append(str(exc))
                break
            except StoreError as exc:
                kept.errors.append(str(exc))
                break
            kept.full = False
            ending.finished = True
            break
    finally:
        store.wait_s = before
        if kept.full:
            journal.reserve_again()  # lines still to come (a report, a note) need room
    if kept.unstored:
        _drop_stored(store, run_id, kept)
    ending.complete = ending.finished and not kept.unstored and not journal.full
    journal.close(delete=ending.complete)
    return ending


def _drop_stored(store: Store, run_id: int, kept: WriteReport) -> None:
    """Take out of ``kept.unstored`` the items the store holds after all: on a full disk
    DuckDB may commit the rows and fail after (the write-ahead log or its checkpoint), so
    the summary would count stored items as missing. Unreadable store: left as it is."""
    try:
        held = store.item_nodeids(run_id)
    except StoreError:
        return
    stored = [row for row in kept.unstored if row.nodeid in held]
    if stored:
        kept.unstored = [row for row in kept.unstored if row.nodeid not in held]
        kept.stored += len(stored)


def not_stored_lines(
    store: Location, journal: Path, kept: WriteReport, *, journal_full: bool = False
) -> list[str]:
    """What the summary says when the store could not take everything: why, how many
    items, where they are, and the command that merges them now."""
    count = len(kept.unstored)
    why = "the disk is full" if kept.full else "; ".join(dict.fromkeys(kept.errors)) or "busy"
    lost = (
        " The journal's disk is full too: items finished after it filled are lost."
        if journal_full else ""
    )
    missing = (f"{count} finished item(s) and the end of the run are" if count
               else "the end of the run (every finished item is stored) is")
    return [
        (
            f"{store}: {why}. {missing} not in the store; they are kept in the journal "
            f"{journal}, merged by the next session on this store or now by "
            f"`stedge import {journal} --db {store}`.{lost}"
        )
    ]

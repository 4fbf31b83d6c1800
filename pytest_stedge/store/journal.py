"""The journal beside the store: every finished item, written the moment it arrives.

A session appends one JSON line per event to ``<store>.journal/<run uuid>.jsonl``
(the run, each finished item, the end of the run) before the store gets it, and
deletes the file once the store holds everything. So a session killed at any moment,
or one that met a full disk or a store it could not write, leaves its items in the
journal; the next session on the store (or ``stedge import <journal>``) merges them.

The journal reserves disk space ahead of its lines (``fallocate`` without growing the
file: 1 MiB at the start, then as much again as it holds, at most 8 MiB ahead), so the
lines of a session that fills the disk still fit; a session whose store found the disk full
gives the unused reserve back for one more try of the store (:meth:`Journal.release`): the
reserve must not take the store's room. A live session holds
an exclusive ``flock`` on its file: a journal nobody holds belongs to a stopped
session. Kept free of DuckDB: :func:`merge` takes a Store.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.errors import StoreError

from .location import journal_dir_of
from .rows import ItemRow

if TYPE_CHECKING:
    from .database import Store

SUFFIX = ".jsonl"
RESERVE_BYTES = 8 << 20  # the most reserved ahead at once
FIRST_RESERVE_BYTES = 1 << 20  # reserved at the start; then as much again as was written
_KEEP_SIZE = 1  # FALLOC_FL_KEEP_SIZE
_NOT_STORED = ("changes", "update", "baseline_version", "placement_moves")  # ItemRow fields the store never holds


_ROW_FIELDS = set(ItemRow.__dataclass_fields__)


def journal_dir(store_path: Path | str) -> Path:
    """The folder of journals of the store ``store_path``: beside a file store; on this
    machine for a server store (see :func:`.location.journal_dir_of`)."""
    return journal_dir_of(store_path)


class Journal:
    """This session's journal, held (flock) until the session ends."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._written = 0
        self._reserved = 0
        self.full = False  # a line could not be written: the disk is full even here

    @classmethod
    def create(cls, store_path: Path | str, run: dict[str, Any]) -> Journal:
        """Start the journal of ``run`` (``run_uuid``, ``argv``, ``versions``, ...)."""
        folder = journal_dir(store_path)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{run['run_uuid']}{SUFFIX}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write the journal beside {store_path}: {exc}") from None
        _lock(fd)
        journal = cls(path, fd)
        journal._reserve()
        journal._append({"run": run})
        return journal

    def add(self, row: ItemRow) -> None:
        """Append one finished item."""
        data = {k: v for k, v in row.to_dict().items() if k not in _NOT_STORED}
        self._append({"item": data})

    def finish(self, status: str, exitstatus: int | None) -> None:
        """Append the end of the run (what the store would say of it)."""
        self._append({"finish": {"status": status, "exitstatus": exitstatus}})

    def close(self, *, delete: bool) -> None:
        """Release the journal; ``delete`` it when the store holds everything in it."""
        if self._fd < 0:
            return
        os.close(self._fd)  # releases the flock
        self._fd = -1
        if delete:
            try:
                self.path.unlink()
                self.path.parent.rmdir()  # only when no other journal is left
            except OSError:
                pass

    def _append(self, event: dict[str, Any]) -> None:
        line = (json.dumps(event, default=str, separators=(",", ":")) + "\n").encode()
        if self._written + len(line) > self._reserved * 3 // 4:
            self._reserve()
        try:
            os.write(self._fd, line)
        except OSError:
            self.full = True
            return
        self._written += len(line)

    def release(self) -> None:
        """Give back the disk reserved past the lines written (the store needs the room)."""
        if self._fd < 0 or self._reserved <= self._written:
            return
        try:
            os.ftruncate(self._fd, os.fstat(self._fd).st_size)  # frees blocks past the end
        except OSError:
            return
        self._reserved = self._written

    def reserve_again(self) -> None:
        """Reserve ahead once more, as much as the disk still has (after :meth:`release`)."""
        if self._fd >= 0:
            self._reserve()

    def _reserve(self) -> None:
        """Reserve the next stretch of disk for this file (Linux; elsewhere a no-op): as
        much as was written so far (1 MiB at first, at most RESERVE_BYTES) as the disk
        still has, down to 64 KiB."""
        step = min(RESERVE_BYTES, max(FIRST_RESERVE_BYTES, self._written))
        while step >= 64 << 10:
            want = self._written + step
            if want <= self._reserved or _fallocate(self._fd, want):
                self._reserved = max(self._reserved, want)
                return
            step //= 2


def _lock(fd: int) -> None:
    """Take the journal's exclusive lock without waiting (OSError when it is held);
    where there is no flock (Windows) a live journal cannot be told from a stopped one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _fallocate(fd: int, length: int) -> bool:
    name = ctypes.util.find_library("c")
    if not name or not hasattr(os, "posix_fallocate"):
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fallocate = libc.fallocate
    except (OSError, AttributeError):
        return False
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    return int(fallocate(fd, _KEEP_SIZE, 0, length)) == 0


@dataclass
class Recovered:
    """What a journal holds: its run, its finished items, and how the run ended."""

    path: Path
    run: dict[str, Any]
    items: list[ItemRow] = field(default_factory=list)
    finish: dict[str, Any] | None = None


def read(path: Path) -> Recovered:
    """Read a journal; a last line cut by a kill (or a full disk) is ignored."""
    run: dict[str, Any] | None = None
    items: dict[str, ItemRow] = {}
    finish = None
    with open(path, "rb") as handle:
        for raw in handle:
            raw = raw.rstrip(b"\0\n")
            if not raw:
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # the line being written when the session stopped
            if "run" in event:
                run = event["run"]
            elif "item" in event:
                known = {k: v for k, v in event["item"].items() if k in _ROW_FIELDS}
                row = ItemRow.from_dict(known)  # a journal of another version: its fields
                items[row.nodeid] = row
            elif "finish" in event:
                finish = event["finish"]
    if run is None or "run_uuid" not in run:
        raise StoreError(f"{path} is not a pytest-stedge journal (no run line)")
    return Recovered(path=path, run=run, items=list(items.values()), finish=finish)


def stopped_journals(store_path: Path | str) -> Iterator[Path]:
    """Journals beside the store whose session has stopped (nobody holds their flock)."""
    folder = journal_dir(store_path)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            _lock(fd)
        except OSError:
            continue  # a live session
        finally:
            os.close(fd)
        yield path


def merge(store: Store, path: Path) -> dict[str, Any]:
    """Put a stopped session's journal into ``store`` and delete the journal.

    Items the store already has are kept as stored; a run that never said how it ended
    is marked ``killed``. Merging twice changes nothing.

    :returns: ``{"run_id", "added", "status"}``.
    """
    recovered = read(path)
    run = recovered.run
    with store.attached(write=True):
        run_id = store.run_id_of(run["run_uuid"])
        if run_id is None:
            started = run.get("started_at")
            run_id = store.begin_run(
                argv=run.get("argv") or [],
                versions=run.get("versions") or [],
                baseline=run.get("baseline"),
                host=run.get("host"),
                run_uuid=run["run_uuid"],
                run_group=run.get("run_group"),
                shard=run.get("shard"),
                started_at=datetime.fromisoformat(started) if started else None,
            )
        before = store.item_nodeids(run_id)
        store.add_items(run_id, recovered.items, replace=False)
        added = len({r.nodeid for r in recovered.items} - before)
        finish = recovered.finish or {"status": "killed", "exitstatus": None}
        status = _stored_status(store, run_id)
        if status == "running" or recovered.finish is not None:
            store.finish_run(run_id, status=finish["status"], exitstatus=finish["exitstatus"])
            status = finish["status"]
    path.unlink()
    try:
        path.parent.rmdir()
    except OSError:
        pass
    return {"run_id": run_id, "added": added, "status": status}


def _stored_status(store: Store, run_id: int) -> str:
    rows = store.dicts("SELECT status FROM runs WHERE run_id = ?", [run_id])
    return str(rows[0]["status"]) if rows else "running"


def merge_stopped(store: Store) -> list[str]:
    """Merge every stopped session's journal beside ``store``; one line per journal."""
    lines = []
    for path in stopped_journals(store.path):
        try:
            done = merge(store, path)
        except StoreError as exc:
            lines.append(f"journal {path} not merged: {exc}")
            continue
        except OSError as exc:
            lines.append(f"journal {path} not merged: {exc}")
            continue
        lines.append(
            f"merged journal {path.name}: run {done['run_id']} ({done['status']}), "
            f"{done['added']} item(s) the store did not have"
        )
    return lines

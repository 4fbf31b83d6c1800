"""Cross-process board locks: one file lock per board, shared by every process of a session.

A validate-target item takes a board with :func:`acquire_board` and gives it back with
:meth:`BoardLock.release`. The lock files live in :func:`lock_dir` (one per board, named after
:func:`lock_key`), so the controller and every xdist worker see the same locks; the operating
system drops the lock of a process that dies. Each holding period is appended to
``journal.jsonl`` beside the locks.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .errors import BoardBusyError
from .specs import BoardSpec

if TYPE_CHECKING:
    import pytest

_POLL = 0.1  # seconds between two rounds of tries on busy boards


def lock_dir(config: pytest.Config) -> Path:
    """``<rootdir>/.stedge/locks``: shared by the controller and every xdist worker."""
    return Path(config.rootpath) / ".stedge" / "locks"


def lock_key(spec: BoardSpec) -> str:
    """What identifies a board: its socket URL or its device (symlinks resolved, so
    ``/dev/serial/by-id/...`` and ``/dev/ttyACM0`` share one lock)."""
    port = str(spec.port)
    if spec.kind == "serial" and os.path.exists(port):
        port = os.path.realpath(port)
    return port


def lock_file_name(spec: BoardSpec) -> str:
    """The lock file of a board in :func:`lock_dir`: its :func:`lock_key`, file-name safe."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", lock_key(spec)).strip("_") + ".lock"


class BoardLock:
    """One board held by this process until :meth:`release` (or until it exits: the
    operating system drops the lock of a dead process)."""

    def __init__(self, spec: BoardSpec, path: Path, handle: IO[str], owner: str) -> None:
        self.spec, self.path, self.owner = spec, path, owner
        self._handle: IO[str] | None = handle
        self.acquired = time.time()

    def release(self) -> None:
        """Unlock, and append the holding period to ``journal.jsonl`` beside the locks."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        entry = {"port": lock_key(self.spec), "owner": self.owner, "pid": os.getpid(),
                 "acquired": self.acquired, "released": time.time()}
        try:
            with open(self.path.parent / "journal.jsonl", "a", encoding="utf-8") as journal:
                journal.write(json.dumps(entry) + "\n")
        finally:
            _unlock(handle)
            handle.close()


def acquire_board(specs: Sequence[BoardSpec], directory: Path, *, owner: str,
                  wait: float) -> BoardLock:
    """Take the first free board of ``specs`` (each tried without blocking, then again
    every 0.1 s); raise :class:`BoardBusyError` naming the holders after ``wait`` s."""
    directory.mkdir(parents=True, exist_ok=True)
    unique = list({lock_key(s): s for s in specs}.values())
    deadline = time.monotonic() + wait
    while True:
        for spec in unique:
            path = directory / lock_file_name(spec)
            handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
            if not _try_lock(handle):
                handle.close()
                continue
            handle.seek(0)
            handle.truncate()
            handle.write(owner + "\n")
            handle.flush()
            return BoardLock(spec, path, handle, owner)
        if time.monotonic() >= deadline:
            holders = "; ".join(f"{lock_key(s)} held by {_holder(directory, s)}" for s in unique)
            raise BoardBusyError(f"no board free after {wait:g} s ({holders}); raise ini "
                                 "stedge_board_wait or give more --stedge-board")
        time.sleep(_POLL)


def _holder(directory: Path, spec: BoardSpec) -> str:
    try:
        return (directory / lock_file_name(spec)).read_text(encoding="utf-8").strip() or "an unknown process"
    except OSError:
        return "an unknown process"


def _try_lock(handle: IO[str]) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _unlock(handle: IO[str]) -> None:
    if sys.platform == "win32":
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

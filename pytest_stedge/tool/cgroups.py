"""A cgroup (v2) per tool run, where this process may make them.

The kernel keeps the list of every process of a cgroup, and a process cannot leave it by
``setsid``, by double-forking, or by clearing its environment (which drops the token
:mod:`.proctree` otherwise follows): only a write to the cgroup files moves it. So where
our own cgroup is writable (root in a container or a CI VM, a user session under systemd's
delegation), each tool run is born in a cgroup of its own, ``<our cgroup>/stedge-<pid>-
<hex>/run-<n>``, and its end kills every member (``cgroup.kill``, Linux 5.14+, else one
SIGKILL per member until none is left). If pytest itself is killed, its reaper kills every
run cgroup under the process's folder (see :mod:`.proctree`).

The tool is born inside by moving this process into the run's cgroup for the moment of
the spawn and back (a child starts in its parent's cgroup; Python's subprocess cannot
spawn into another one, and a move after the spawn would miss what the tool forks first).
Anything going wrong turns cgroups off for the process: :mod:`.proctree`'s walk remains.
"""

from __future__ import annotations

import atexit
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DISABLE_ENV = "STEDGE_PROCTREE"  # "subreaper": no cgroups (to test the fallback)
_ROUNDS = 200
_state: dict[str, object] = {}  # "base", "home": Path; "off": True
_runs: dict[str, Path] = {}  # token -> the run's cgroup


def _cgroup2_mount() -> Path | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return Path(left.split(" ")[4])
    except OSError:
        return None
    return None


def _own_cgroup(mount: Path) -> Path | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("0::"):
                    return mount / line[3:].strip().lstrip("/")
    except OSError:
        return None
    return None


def base() -> Path | None:
    """This process's folder of run cgroups (made on first use); None where cgroups
    cannot be used here."""
    if _state.get("off"):
        return None
    if "base" in _state:
        return _state["base"]  # type: ignore[return-value]
    found = _make_base()
    if found is None:
        _state["off"] = True
    return found


def _make_base() -> Path | None:
    if os.environ.get(DISABLE_ENV) == "subreaper" or not os.path.isdir("/proc/self"):
        return None
    mount = _cgroup2_mount()
    home = _own_cgroup(mount) if mount else None
    if home is None or not os.access(home / "cgroup.procs", os.W_OK):
        return None
    try:  # a threaded cgroup cannot hold domain children
        if (home / "cgroup.type").read_text().strip() not in ("domain", "domain threaded"):
            return None
    except OSError:
        pass  # the root cgroup has no cgroup.type
    folder = home / f"stedge-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        folder.mkdir()
    except OSError:
        return None
    if not os.access(folder / "cgroup.procs", os.W_OK):
        _rmdir(folder)
        return None
    _state["base"], _state["home"] = folder, home
    atexit.register(_remove_base)
    return folder


@contextmanager
def born_in(token: str) -> Iterator[None]:
    """Processes this process starts in the block are born in ``token``'s cgroup (made
    here); a no-op where cgroups cannot be used."""
    folder = base()
    if folder is None:
        yield
        return
    run = folder / f"run-{len(_runs) + 1}-{token.rsplit('-', 1)[-1]}"
    home = _state["home"]
    assert isinstance(home, Path)
    try:
        run.mkdir()
        _move_self(run)
    except OSError:
        _rmdir(run)
        _state["off"] = True
        yield
        return
    _runs[token] = run
    try:
        yield
    finally:
        try:
            _move_self(home)
        except OSError:  # stuck in the run's cgroup: never kill it whole, stop using them
            _state["off"] = True


def _move_self(cgroup: Path) -> None:
    with open(cgroup / "cgroup.procs", "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))


def members(token: str) -> set[int]:
    """The live processes of ``token``'s run (empty without a cgroup)."""
    run = _runs.get(token)
    return _procs(run) if run is not None else set()


def kill(token: str) -> set[int]:
    """SIGKILL every process of ``token``'s run until none is left, remove its cgroup;
    return the pids seen (for the caller to collect the ones that are its children)."""
    run = _runs.pop(token, None)
    if run is None:
        return set()
    return kill_cgroup(run)


def kill_cgroup(run: Path) -> set[int]:
    """SIGKILL every member of the cgroup ``run`` until it is empty, then remove it."""
    seen: set[int] = set()
    me = os.getpid()
    for _ in range(_ROUNDS):
        pids = _procs(run)
        seen |= pids
        if not pids:
            break
        if me not in pids and _write(run / "cgroup.kill", "1"):
            pass  # the kernel kills them all, forks included
        else:
            for pid in pids - {me}:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if pids == {me}:
                break
        time.sleep(0.002)
    _rmdir(run)
    return seen - {me}


def _procs(cgroup: Path) -> set[int]:
    try:
        return {int(x) for x in (cgroup / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def _write(path: Path, text: str) -> bool:
    try:
        with open(path, "w", encoding="ascii") as handle:
            handle.write(text)
    except OSError:
        return False
    return True


def _rmdir(folder: Path) -> None:
    for _ in range(50):  # a killed process leaves its cgroup a moment after the kill
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.002)


def _remove_base() -> None:
    folder = _state.get("base")
    if not isinstance(folder, Path):
        return
    for run in list(_runs.values()):
        kill_cgroup(run)
    _runs.clear()
    try:
        leftovers = [p for p in folder.iterdir() if p.is_dir()]
    except OSError:
        leftovers = []
    for run in leftovers:
        kill_cgroup(run)
    _rmdir(folder)

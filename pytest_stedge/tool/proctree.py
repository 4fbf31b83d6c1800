"""No tool process outlives its item: find a tool's whole process tree and kill it.

A process group is not enough: a compiler's helpers may call ``setsid`` or double-fork
away from their parent, and clear their environment too. What holds, strongest first:

1. Where this process may make cgroups (cgroup v2, writable: :mod:`.cgroups`), each tool
   run is born in a cgroup of its own, and its end kills every member: no helper leaves
   it by setsid, double-fork or a cleared environment.
2. Else (Linux): this process is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a
   helper whose parent exits is re-parented to us, not to init. The tree is the tool, our
   children started since the tool did (adopted orphans, token or not), every process
   that carries the run's token in its environment, and all their descendants.
3. Elsewhere: the tool's process group.

If pytest itself is killed (SIGKILL leaves it no chance), a small reaper process that
each pytest process starts beside its first tool run notices (its pipe from pytest
closes) and kills every run cgroup of that process and every process carrying its
tokens. Without cgroups, a helper that cleared its environment and whose parent is gone
is then init's child with nothing left to tell it by: that one case is not covered.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path

from . import cgroups

TOKEN_ENV = "STEDGE_TOOL_TOKEN"
_PROC = Path("/proc")
_KILL_ROUNDS = 50
_prefix = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
_counter = 0
_reaper_pid = 0
_subreaper = False
_PR_SET_CHILD_SUBREAPER = 36


def supported() -> bool:
    """Whether whole trees can be found here (Linux ``/proc``)."""
    return sys.platform.startswith("linux") and (_PROC / "self" / "stat").exists()


def new_token() -> str:
    """A token for one tool run of this process (its prefix names this process)."""
    global _counter
    _counter += 1
    return f"{_prefix}-{_counter}"


def tool_env(env: dict[str, str] | None, token: str) -> dict[str, str]:
    """The tool's environment: ``env`` (default ours) with the run's token."""
    out = dict(os.environ if env is None else env)
    out[TOKEN_ENV] = token
    return out


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of ``pid``; None when it is gone."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _has_token(pid: int, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return False
    return f"{TOKEN_ENV}={token}".encode() in environ.split(b"\0")


def tree(root: int, token: str, *, since: int = 0) -> set[int]:
    """Live processes of one tool run: ``root``, its descendants, and any process that
    carries ``token`` (started at or after clock tick ``since``).

    This process is a child subreaper (see :func:`ensure_reaper`), so a helper whose
    parent died is re-parented to us, not to init: walking down from ``root`` and from
    our own children that carry the token finds the whole tree in a few reads. Where
    ``/proc/<pid>/task/<tid>/children`` is missing, every process is scanned.
    """
    me = os.getpid()
    if not _subreaper or not (_PROC / "self" / "task" / str(me) / "children").exists():
        return _scan(root, token, since)
    stack = [root] if _stat(root) is not None else []
    # our children: the tool's orphans were re-parented to us, whatever their environment
    stack += [c for c in _children(me) if c != _reaper_pid and _ours(c, token, since)]
    found: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in found or pid == me:
            continue
        found.add(pid)
        stack += _children(pid)
    return found


def _ours(child: int, token: str, since: int) -> bool:
    """Whether our child ``child`` belongs to the run: it carries the token, or it started
    since the tool did (an orphan of the tool adopted by us; tool runs of a process do
    not overlap)."""
    if _has_token(child, token):
        return True
    info = _stat(child)
    return since > 0 and info is not None and info[1] >= since


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                out += [int(x) for x in handle.read().split()]
        except OSError:
            pass
    return out


def _scan(root: int, token: str, since: int) -> set[int]:
    """Every process's parent link and token, read from the whole of ``/proc``."""
    parents: dict[int, int] = {}
    found: set[int] = set()
    me = os.getpid()
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        pid = int(name)
        info = _stat(pid)
        if info is None or pid == me:
            continue
        parents[pid] = info[0]
        if info[1] >= since and _has_token(pid, token):
            found.add(pid)
    if root in parents:
        found.add(root)
    changed = True
    while changed:
        children = {p for p, parent in parents.items() if parent in found and p not in found}
        found |= children
        changed = bool(children)
    return found


def start_tick(pid: int) -> int:
    """The clock tick ``pid`` started at (0 when unknown)."""
    info = _stat(pid)
    return info[1] if info else 0


def kill_tree(root: int, token: str, *, since: int = 0) -> int:
    """SIGKILL the tool run's whole tree until none of it is left; return how many
    processes were killed. A descendant that forks while we kill is caught next round."""
    if not supported():
        return _kill_group(root)
    killed = cgroups.kill(token)  # the run's cgroup, where there is one: all of it
    _reap(killed)
    if root in killed:
        root = -1  # killed and collected: its pid may be another process's by now
    for _ in range(_KILL_ROUNDS):
        pids = tree(root, token, since=since) - {os.getpid(), _reaper_pid}
        alive = {p for p in pids if not _zombie(p)}
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed |= alive
        _reap(alive)
        time.sleep(0.005)
    _reap(killed)
    return len(killed)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return True
    return text[text.rindex(")") + 2 :].split()[0] in ("Z", "X")


def _reap(pids: set[int]) -> None:
    """Collect our own dead children, so they do not stay zombies."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _kill_group(root: int) -> int:
    try:
        if os.name == "posix":
            os.killpg(root, signal.SIGKILL)
        else:  # pragma: no cover
            os.kill(root, signal.SIGTERM)
    except (ProcessLookupError, PermissionError, OSError):
        return 0
    return 1


def born_confined(token: str) -> AbstractContextManager[None]:
    """Around the tool's spawn: it is born in a cgroup of its run's own, where it can be."""
    return cgroups.born_in(token)


def ensure_reaper() -> None:
    """Start this process's reaper once (Linux): it outlives us only to kill our tools.

    Spawned without a :class:`subprocess.Popen` object: one would warn at our exit that
    its process is still running, which for the reaper is the point (an error where
    ResourceWarning is one, as in a test run under ``filterwarnings = error``)."""
    global _reaper_pid
    if _reaper_pid and _running_child(_reaper_pid):
        return
    if not supported():
        return
    read_end, write_end = os.pipe()  # both ends not inherited (PEP 446), but as stdin
    try:
        _reaper_pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-S", "-c", _REAPER_CODE, _prefix, str(cgroups.base() or "")],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()),  # close_fds
            ],
            setsid=True,  # a signal to pytest's process group spares it
        )
    except (OSError, NotImplementedError):  # no posix_spawn setsid on this libc
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    _keep.append(write_end)  # held open until this process ends, however it ends
    _become_subreaper()


def _inherited_fds() -> list[int]:
    """Our descriptors above stderr that a spawned process would inherit."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                fds.append(fd)
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return fds


def _running_child(pid: int) -> bool:
    """Whether our child ``pid`` still runs (a dead one is collected)."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _become_subreaper() -> None:
    """Orphaned descendants of our tools are re-parented to us (Linux prctl), so the
    tree stays findable by parent links; we reap the ones we kill."""
    global _subreaper
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        _subreaper = False


_keep: list[int] = []

# The reaper, as a script of its own (no import of this package: it must start fast and
# work whatever state the package is in). It waits for its stdin (a pipe from pytest) to
# close, then kills every process in pytest's run cgroups (argv[2], when there are any)
# and every process whose environment carries this pytest process's tokens.
_REAPER_CODE = r"""
import os, signal, sys, time
prefix = ("STEDGE_TOOL_TOKEN=" + sys.argv[1] + "-").encode()
base = sys.argv[2]
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while os.read(0, 4096):
    pass
def members(run):
    try:
        with open(os.path.join(run, "cgroup.procs")) as handle:
            return [int(x) for x in handle.read().split()]
    except (OSError, ValueError):
        return []
runs = []
if base:
    try:
        runs = [os.path.join(base, n) for n in os.listdir(base)]
    except OSError:
        pass
for run in runs:
    if not os.path.isdir(run):
        continue
    for _ in range(200):
        pids = members(run)
        if not pids:
            break
        try:
            with open(os.path.join(run, "cgroup.kill"), "w") as handle:
                handle.write("1")
        except OSError:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.005)
    for _ in range(100):
        try:
            os.rmdir(run)
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.005)
if base:
    try:
        os.rmdir(base)
    except OSError:
        pass
def tools():
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as handle:
                if prefix in handle.read():
                    found.append(int(name))
        except OSError:
            pass
    return found
for _ in range(50):
    pids = tools()
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.02)
"""

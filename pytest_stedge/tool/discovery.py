"""Find ``stedgeai`` installs and run them (argv lists, a timeout, the tail of the output).

Discovery order (DESIGN.md §5): ``--stedge-root DIR`` (repeatable), ``STEDGEAI_CORE_DIR``,
then the usual install places. A root may be one install (``<root>/Utilities/<os>/stedgeai``)
or a folder of installs side by side (``/opt/ST/STEdgeAI/3.0``, ``.../4.0``).
"""

from __future__ import annotations

import math
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ToolchainError, ToolchainNotFound
from . import proctree

TAIL_LINES = 40
# The tool's output is read from its log up to this many bytes from the end: a run that
# prints megabytes of errors costs a bounded time to read after it stops (the log keeps all).
OUTPUT_TAIL_BYTES = 1024 * 1024
VERSION_TIMEOUT_S = 60.0
EXECUTABLE_NAMES = ("stedgeai", "stedgeai.exe", "stm32ai", "stm32ai.exe")

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Install:
    """One ``stedgeai`` install found on this machine."""

    version: str
    build: str
    revision: str
    root: Path
    executable: Path
    components: tuple[str, ...] = field(default=())
    found_by: str = ""

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable form (for xdist workers and ``stedge toolchains --json``)."""
        data = asdict(self)
        data["root"] = str(self.root)
        data["executable"] = str(self.executable)
        data["components"] = list(self.components)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Install:
        """Inverse of :meth:`to_dict`."""
        return cls(
            version=str(data["version"]),
            build=str(data["build"]),
            revision=str(data.get("revision", "")),
            root=Path(str(data["root"])),
            executable=Path(str(data["executable"])),
            components=_strings(data.get("components")),
            found_by=str(data.get("found_by", "")),
        )


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else ()


@dataclass
class Discovery:
    """What discovery found and every place it looked (for error messages)."""

    installs: list[Install]
    searched: list[str]
    problems: list[str]

    def describe_search(self) -> str:
        """Human-readable list of the places searched."""
        return "; ".join(self.searched) if self.searched else "nowhere"

    def pick(self, versions: Sequence[str]) -> list[Install]:
        """The installs for ``versions``; raise :class:`ToolchainNotFound` listing what exists."""
        by_version = {i.version: i for i in self.installs}
        missing = [v for v in versions if v not in by_version]
        if missing:
            found = (
                ", ".join(f"{i.version} ({i.root})" for i in self.installs) or "no install at all"
            )
            raise ToolchainNotFound(
                f"stedgeai {', '.join(missing)} not installed. Found: {found}. "
                f"Looked in: {self.describe_search()}. "
                "Point to an install with --stedge-root DIR or STEDGEAI_CORE_DIR, "
                "or replay a recording (stedge ingest)."
            )
        return [by_version[v] for v in versions]


def os_folder() -> str:
    """The ``Utilities/<os>`` folder name of this platform."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        import platform

        return "macarm" if platform.machine() == "arm64" else "mac"
    return "linux"


def default_roots(env: dict[str, str] | None = None) -> list[tuple[Path, str]]:
    """The usual install places, with the reason each is searched."""
    env = dict(os.environ) if env is None else env
    roots: list[tuple[Path, str]] = []
    if env.get("STEDGEAI_CORE_DIR"):
        roots.append((Path(env["STEDGEAI_CORE_DIR"]), "STEDGEAI_CORE_DIR"))
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    roots += [
        (Path("/opt/ST/STEdgeAI"), "usual place"),
        (Path("C:/ST/STEdgeAI"), "usual place"),
        (home / "STM32Cube/Repository/Packs/STMicroelectronics/X-CUBE-AI", "X-CUBE-AI packs"),
    ]
    return roots


def _executables_under(root: Path) -> Iterable[Path]:
    """Executables of the install at ``root`` or of installs one level below it."""
    for base in (root, *sorted(p for p in _safe_iterdir(root) if p.is_dir())):
        utilities = base / "Utilities"
        for os_dir in (os_folder(), "linux", "windows", "mac", "macarm"):
            for name in EXECUTABLE_NAMES:
                exe = utilities / os_dir / name
                if exe.is_file() and os.access(exe, os.X_OK):
                    yield exe
                    break
            else:
                continue
            break


def _safe_iterdir(path: Path) -> list[Path]:
    try:
        return list(path.iterdir())
    except OSError:
        return []


def parse_banner(text: str) -> dict[str, str] | None:
    """Version, build and revision from ``stedgeai --version`` or a report's first lines."""
    from ..parsers.common import parse_version_banner

    info = parse_version_banner(text)
    if info is None:
        return None
    return {
        "version": str(info["version"]),
        "build": str(info.get("build", "")),
        "revision": str(info.get("revision", "")),
    }


def probe(executable: Path, found_by: str = "") -> Install:
    """Run ``executable --version`` and describe the install it belongs to."""
    argv = [str(executable), "--version"]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolchainError(argv, timed_out=VERSION_TIMEOUT_S, reason="--version hung") from None
    except OSError as exc:
        raise ToolchainError(argv, reason=str(exc)) from None
    output = proc.stdout + proc.stderr
    banner = parse_banner(output)
    if proc.returncode != 0 or banner is None:
        raise ToolchainError(
            argv,
            returncode=proc.returncode,
            output_tail=tail(output),
            reason="no version banner in the output",
        )
    components = tuple(
        line.strip()
        for line in _ANSI_RE.sub("", output).splitlines()[1:]
        if line.startswith((" ", "\t")) and line.strip()
    )
    return Install(
        version=banner["version"],
        build=banner["build"],
        revision=banner["revision"],
        root=executable.parents[2],
        executable=executable,
        components=components,
        found_by=found_by,
    )


def discover(
    roots: Sequence[Path | str] = (),
    *,
    env: dict[str, str] | None = None,
    defaults: bool = True,
    root_flag: str = "--stedge-root",
) -> Discovery:
    """Find every install under ``roots`` then the usual places; one install per version
    (the first found wins, so ``--stedge-root`` overrides the usual places).

    :param root_flag: how the caller's user gives ``roots`` (``--root`` in ``stedge``).
    """
    places = [(Path(r).expanduser().resolve(), root_flag) for r in roots]
    if defaults:
        places += default_roots(env)
    installs: dict[str, Install] = {}
    searched: list[str] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for root, why in places:
        searched.append(f"{root} ({why})")
        for exe in _executables_under(root):
            if exe.resolve() in seen:
                continue
            seen.add(exe.resolve())
            try:
                install = probe(exe, found_by=why)
            except ToolchainError as exc:
                problems.append(f"{exe}: {exc}")
                continue
            installs.setdefault(install.version, install)
    ordered = sorted(installs.values(), key=lambda i: _version_key(i.version))
    return Discovery(installs=ordered, searched=searched, problems=problems)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``, without ANSI colours or progress bars."""
    clean = [
        line
        for line in _ANSI_RE.sub("", text).replace("\r", "\n").splitlines()
        if line.strip() and not re.match(r"^\s*(PASS|STM\.IO):\s+\d+%\|", line)
    ]
    return "\n".join(clean[-lines:])


@dataclass
class ToolRun:
    """How one ``stedgeai`` invocation went."""

    argv: list[str]
    returncode: int
    seconds: float
    output: str
    log: Path


def run_tool(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> ToolRun:
    """Run ``argv`` (never through a shell) in ``cwd``, its output teed to ``cwd/stedgeai.log``.

    Raises :class:`ToolchainError` on timeout or when the program cannot start; a non-zero
    exit is returned, not raised, so the caller can still read what the tool wrote.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    log = cwd / "stedgeai.log"
    argv = [str(a) for a in argv]
    token = proctree.new_token()
    proctree.ensure_reaper()  # kills the tool should this process be killed itself
    start = time.perf_counter()
    with open(log, "wb") as sink:
        try:
            # A session of its own (Ctrl-C in the terminal is ours to handle), and a token
            # in its environment that marks every process of its tree.
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=proctree.tool_env(env, token),
                start_new_session=(os.name == "posix"),
            )
        except OSError as exc:
            raise ToolchainError(argv, reason=f"cannot start: {exc}") from None
        since = proctree.start_tick(proc.pid)
        try:
            returncode = wait_for_exit(proc, timeout)
        except subprocess.TimeoutExpired:
            _kill(proc, token, since)
            raise ToolchainError(
                argv, timed_out=timeout, output_tail=tail(_read(log))
            ) from None
        except BaseException:  # Ctrl-C, SIGTERM: do not leave the tool running
            _kill(proc, token, since)
            raise
        _kill(proc, token, since)  # helpers it left behind do not outlive the item
    seconds = time.perf_counter() - start
    return ToolRun(argv=argv, returncode=returncode, seconds=seconds, output=_read(log), log=log)


def wait_for_exit(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The exit status of ``proc``, as soon as it exits; :class:`subprocess.TimeoutExpired`
    after ``timeout`` seconds (the process is left running: the caller kills its tree).

    ``Popen.wait(timeout=...)`` polls (sleeps of up to 50 ms between looks), which cost a
    run of a short tool 15-36 ms. Here the wait wakes when the process exits: on Linux the
    kernel signals a pidfd; elsewhere a blocking wait with a timer that ends it.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            pidfd = pidfd_open(proc.pid)
        except OSError:  # ENOSYS (kernel < 5.3) or refused by a sandbox
            pidfd = None
        if pidfd is not None:
            try:
                return _wait_pidfd(proc, pidfd, timeout)
            finally:
                os.close(pidfd)
    return _wait_blocking(proc, timeout)


def _wait_pidfd(proc: subprocess.Popen[bytes], pidfd: int, timeout: float) -> int:
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        # a signal handler that raises (Ctrl-C, SIGTERM) ends the wait; others resume it
        if poller.poll(math.ceil(left * 1000)):
            return proc.wait()  # readable: the process has exited; reap it


def _wait_blocking(proc: subprocess.Popen[bytes], timeout: float) -> int:
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        try:
            proc.kill()  # the tool alone: the caller kills what it spawned
        except OSError:  # pragma: no cover - it exited meanwhile
            pass

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        returncode = proc.wait()
    finally:
        timer.cancel()
    if expired.is_set():
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return returncode


def _read(path: Path, limit: int = OUTPUT_TAIL_BYTES) -> str:
    """The log's last ``limit`` bytes (all of it when smaller), from a line start."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            data = handle.read(limit)
    except OSError:
        return ""
    if size > limit:
        data = data[data.find(b"\n") + 1 :]
        return f"[... first {size - len(data):,} bytes of output not read; see {path}]\n" + (
            data.decode("utf-8", errors="replace")
        )
    return data.decode("utf-8", errors="replace")


def _kill(proc: subprocess.Popen[bytes], token: str, since: int) -> None:
    """Kill the tool's whole tree (see :mod:`.proctree`) and collect the tool."""
    root = proc.pid if proc.poll() is None else -1  # an exited tool's pid may be reused
    proctree.kill_tree(root, token, since=since)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass

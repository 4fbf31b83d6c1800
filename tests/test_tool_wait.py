"""Waiting for the tool: the wait ends when the tool exits (no polling), a time limit leaves
the tool to its caller, and platforms without pidfds wait the same way."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from pytest_stedge.tool import discovery
from pytest_stedge.tool.discovery import wait_for_exit


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.fixture(params=["pidfd", "blocking"])
def wait_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pidfd":
        if not hasattr(os, "pidfd_open"):
            pytest.skip("no os.pidfd_open on this platform (Linux 5.3+ with Python 3.9+)")
        try:
            os.close(os.pidfd_open(os.getpid()))
        except OSError as exc:
            pytest.skip(f"pidfd_open refused here: {exc}")
    else:  # a platform without pidfds (macOS, Windows)
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    return str(request.param)


def test_the_exit_status_is_returned(wait_path: str) -> None:
    assert wait_for_exit(_python("raise SystemExit(7)"), timeout=30) == 7
    assert wait_for_exit(_python("pass"), timeout=30) == 0


def test_a_process_that_already_exited_is_reaped(wait_path: str) -> None:
    proc = _python("raise SystemExit(3)")
    time.sleep(0.5)  # most likely exited (a zombie) before the wait starts
    assert wait_for_exit(proc, timeout=30) == 3
    assert proc.returncode == 3


def test_the_time_limit_raises_and_the_caller_gets_the_process(wait_path: str) -> None:
    proc = _python("import time; time.sleep(60)")
    try:
        with pytest.raises(subprocess.TimeoutExpired) as caught:
            wait_for_exit(proc, timeout=0.3)
        assert caught.value.timeout == 0.3
        if wait_path == "pidfd":
            assert proc.poll() is None  # still running: run_tool kills its whole tree
    finally:
        proc.kill()
        proc.wait()


def test_the_wait_never_polls(wait_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Popen.wait(timeout=...) sleeps between looks: up to 50 ms lost after every tool run
    naps: list[float] = []
    real_sleep = time.sleep

    def counted(seconds: float) -> None:
        naps.append(seconds)
        real_sleep(seconds)

    proc = _python("import time; time.sleep(0.3)")
    monkeypatch.setattr(time, "sleep", counted)
    assert wait_for_exit(proc, timeout=30) == 0
    assert naps == []


def test_a_refused_pidfd_falls_back_to_the_blocking_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "pidfd_open", refused, raising=False)
    used: list[Any] = []
    real = discovery._wait_blocking
    monkeypatch.setattr(discovery, "_wait_blocking", lambda p, t: used.append(p) or real(p, t))
    assert wait_for_exit(_python("raise SystemExit(5)"), timeout=30) == 5
    assert len(used) == 1


def test_a_tool_run_ends_when_the_tool_exits(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    naps: list[float] = []
    real_sleep = time.sleep
    argv = [sys.executable, "-c", "import time; time.sleep(0.3); print('done')"]

    def counted(seconds: float) -> None:
        naps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", counted)
    run = discovery.run_tool(argv, cwd=tmp_path / "work", timeout=30)
    assert run.returncode == 0 and "done" in run.output
    assert naps == [], "run_tool slept while the tool ran (a polling wait)"

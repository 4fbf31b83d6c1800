"""No tool process outlives its item: helpers that call setsid or double-fork included,
and also when pytest itself is killed (the reaper). Processes are counted in /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.errors import ToolchainError
from pytest_stedge.tool import proctree
from pytest_stedge.tool.discovery import run_tool

pytestmark = pytest.mark.skipif(not proctree.supported(), reason="needs Linux /proc")
MARK = "fake-stedgeai-helper"


def _mark(tmp_path: Path) -> str:
    """A helper mark of this test's own: tests on other xdist workers kill theirs by mark."""
    return f"{MARK}-{os.getpid()}-{tmp_path.name}"


def _with_mark(mark: str) -> list[int]:
    """Live processes whose command line holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mark.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_none(mark: str, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _with_mark(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _fake(tmp_path: Path, faults: dict[str, object]) -> Path:
    from fake_stedgeai import make_install

    make_install(tmp_path / "inst", "4.0.1", config={"*": faults})
    return tmp_path / "inst" / "Utilities" / "linux" / "stedgeai"


SPAWNER = (
    "import os, subprocess, sys, time\n"
    "code = 'import os, sys, time\\nos.setsid()\\nif sys.argv[1] == \"detach\" and os.fork():\\n"
    "    os._exit(0)\\ntime.sleep(60)'\n"
    "for how in ('setsid', 'detach'):\n"
    "    p = subprocess.Popen([sys.executable, '-c', code, how, sys.argv[1]])\n"
    "    if how == 'detach': p.wait()\n"
    "print('spawned', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def test_helpers_that_left_the_session_die_with_a_tool_that_exits(tmp_path: Path) -> None:
    mark = f"stedge-test-{os.getpid()}-exit"
    run = run_tool([sys.executable, "-c", SPAWNER, mark, "0"], cwd=tmp_path, timeout=30)
    assert run.returncode == 0 and "spawned" in run.output
    assert _wait_none(mark, 2.0) == []


def test_a_timed_out_tool_dies_with_its_setsid_and_double_forked_helpers(tmp_path: Path) -> None:
    mark = f"stedge-test-{os.getpid()}-timeout"
    with pytest.raises(ToolchainError, match="timed out after 1 s"):
        run_tool([sys.executable, "-c", SPAWNER, mark, "60"], cwd=tmp_path, timeout=1)
    assert _wait_none(mark, 2.0) == []


def _settled_helpers(pids: Path, count: int, seconds: float = 120.0) -> list[int]:
    """The pids the fake's helpers wrote once settled (their own session, forks done).
    The fake tool waits for them before it goes on; the deadline is generous because a
    loaded machine can take many seconds to start three Pythons (10 s failed once in CI)."""
    deadline = time.monotonic() + seconds
    while len(list(pids.iterdir())) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return sorted(int(f.name) for f in pids.iterdir())


def _pytest_with_helpers(tmp_path: Path, make_corpus: CorpusFactory, mark: str, pids: Path,
                         spawn: str) -> subprocess.Popen[bytes]:
    """A `pytest` of one case whose fake tool starts helpers (``spawn`` or ``spawn_clean``)
    that write their pid files into ``pids`` once settled, then sleeps 300 s."""
    from fake_stedgeai import make_install

    pids.mkdir()
    make_install(tmp_path / "inst" / "4.0", "4.0.1",
                 config={"*": {spawn: 300, "sleep": 300, "spawn_mark": mark,
                               "spawn_pids": str(pids)}})
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", str(corpus), "-p", "no:cacheprovider",
         "--stedge-root", str(tmp_path / "inst"), "--stedge-db", str(tmp_path / "db.duckdb"),
         f"--rootdir={tmp_path}"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _alive_with(pid: int, mark: str) -> bool:
    """Whether ``pid`` runs and is still the helper carrying ``mark`` (not a reused pid)."""
    try:
        return _running(pid) and mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.timeout(600)  # two tool runs of up to 120 s each to settle on a loaded machine
def test_the_fake_tool_helpers_are_real_and_do_not_outlive_the_item(tmp_path: Path) -> None:
    """The fake's helpers escape a plain kill of the tool (sessions of their own, one
    re-parented), so the other tests here prove something; run as an item's tool run
    (run_tool), none of them is left once the run has ended."""
    mark = _mark(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    faults = {"spawn": 300, "spawn_clean": 300, "sleep": 300, "spawn_mark": mark,
              "spawn_pids": str(pids)}
    exe = _fake(tmp_path / "plain", faults)
    proc = subprocess.Popen([str(exe), "generate", "--model", "x.onnx"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers: list[int] = []
    try:
        helpers = _settled_helpers(pids, 3)
        assert len(helpers) == 3, f"the fake tool started {len(helpers)} helpers of 3"
        assert all(os.getsid(p) != os.getsid(proc.pid) for p in helpers)
    finally:
        proc.kill()
        proc.wait()
        time.sleep(0.5)  # what a plain kill ends, it ends at once
        alive = [p for p in helpers if _alive_with(p, mark)]
        for pid in set(alive) | set(_with_mark(mark)):
            os.kill(pid, signal.SIGKILL)
    assert alive == helpers  # a plain kill of the tool leaves them all running
    assert _wait_none(mark) == []

    item_mark = f"{mark}-item"
    item_pids = tmp_path / "item-pids"
    item_pids.mkdir()
    exe = _fake(tmp_path / "item", dict(faults, sleep=0, error=True, spawn_mark=item_mark,
                                        spawn_pids=str(item_pids)))
    run = run_tool([str(exe), "generate", "--model", "x.onnx"], cwd=tmp_path / "run",
                   timeout=300)
    assert run.returncode == 1  # the injected error, after the helpers settled
    helpers = sorted(int(f.name) for f in item_pids.iterdir())
    assert len(helpers) == 3, f"the fake tool started {len(helpers)} helpers of 3"
    deadline = time.monotonic() + 10
    while any(_alive_with(p, item_mark) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in helpers if _alive_with(p, item_mark)] == []


@pytest.mark.timeout(600)  # up to 120 s to settle and 2 x 60 s to die, loaded
def test_a_killed_pytest_leaves_no_tool_process(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    """SIGKILL of pytest while the tool runs: its reaper kills the tool and its helpers."""
    mark = _mark(tmp_path)

    pids = tmp_path / "pids"
    proc = _pytest_with_helpers(tmp_path, make_corpus, mark, pids, "spawn")
    try:
        helpers = _settled_helpers(pids, 2)  # the tool sleeps once they are settled
        assert len(helpers) == 2, f"the fake tool started {len(helpers)} helpers of 2"
        assert all(_alive_with(p, mark) for p in helpers)
        tools = _with_mark("stedgeai")
        assert tools
    finally:
        proc.kill()
        proc.wait()
    assert _wait_none(mark, 60) == []  # the reaper's kill may wait for a loaded CPU
    assert _wait_none(str(tmp_path / "inst"), 60) == []  # the fake tool itself


def test_a_process_with_a_reaper_exits_quietly_and_its_reaper_follows() -> None:
    """The reaper outlives every tool run by design: starting it must not leave a
    "subprocess is still running" ResourceWarning at exit (an error message at the end of
    every test run under filterwarnings = error), and it ends once its parent has."""
    code = ("from pytest_stedge.tool import proctree\n"
            "proctree.ensure_reaper()\n"
            "first = proctree._reaper_pid\n"
            "proctree.ensure_reaper()\n"
            "assert proctree._reaper_pid == first, 'a second reaper'\n"
            "print(first)\n")
    done = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", code],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    reaper = int(done.stdout)
    deadline = time.monotonic() + 10
    while _running(reaper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(reaper), "the reaper outlived its parent"


def _running(pid: int) -> bool:
    """Whether ``pid`` runs: neither gone nor a zombie (an orphan may be re-parented to
    this process, a child subreaper once it ran a tool, and wait here to be collected)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] not in "ZX"


# A helper that leaves every trace of the run: double-fork, setsid, and an exec with a
# cleared environment (so without the run's token), as in the attack.
CLEAN_SPAWNER = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execve(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)',"
    " sys.argv[1]], {'PATH': '/usr/bin:/bin'})\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "print('spawned', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def _clean_env_helper_dies_with_its_item(tmp_path: Path, mark: str, seconds: str) -> None:
    try:
        run = run_tool([sys.executable, "-c", CLEAN_SPAWNER, mark, seconds], cwd=tmp_path,
                       timeout=1 if seconds != "0" else 30)
        assert "spawned" in run.output
    except ToolchainError as exc:
        assert "timed out" in str(exc)
    assert _wait_none(mark, 2.0) == []


@pytest.mark.parametrize("seconds", ["0", "60"], ids=["tool-exits", "tool-times-out"])
def test_a_helper_that_clears_its_environment_dies_with_its_item(
    tmp_path: Path, seconds: str
) -> None:
    from pytest_stedge.tool import cgroups

    mark = f"stedge-test-{os.getpid()}-clean-{seconds}"
    _clean_env_helper_dies_with_its_item(tmp_path, mark, seconds)
    if cgroups.base() is not None:  # a cgroup per run here: none left behind
        assert [p.name for p in cgroups.base().iterdir() if p.is_dir()] == []


@pytest.mark.parametrize("seconds", ["0", "60"], ids=["tool-exits", "tool-times-out"])
def test_without_cgroups_the_subreaper_walk_finds_a_clean_environment_helper(
    tmp_path: Path, seconds: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_stedge.tool import cgroups

    monkeypatch.setitem(cgroups._state, "off", True)  # as where no cgroup is writable
    proctree.ensure_reaper()
    assert proctree._subreaper, "PR_SET_CHILD_SUBREAPER refused here"
    mark = f"stedge-test-{os.getpid()}-clean-walk-{seconds}"
    _clean_env_helper_dies_with_its_item(tmp_path, mark, seconds)


@pytest.mark.timeout(600)  # up to 120 s to settle and 2 x 60 s to die, loaded
def test_a_killed_pytest_leaves_no_helper_that_cleared_its_environment(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    """The reaper matched tokens only: a helper without one outlived pytest (2 of 2)."""
    from pytest_stedge.tool import cgroups

    if cgroups.base() is None:
        pytest.skip("no writable cgroup v2 here: this case is not covered (see the README)")
    mark = _mark(tmp_path)
    pids = tmp_path / "pids"
    proc = _pytest_with_helpers(tmp_path, make_corpus, mark, pids, "spawn_clean")
    try:
        helpers = _settled_helpers(pids, 1)
        assert len(helpers) == 1, "the fake tool never started its helper"
        environ = Path(f"/proc/{helpers[0]}/environ").read_bytes()
        assert proctree.TOKEN_ENV.encode() not in environ  # it really has no token
    finally:
        proc.kill()
        proc.wait()
    assert _wait_none(mark, 60) == []  # the reaper's kill may wait for a loaded CPU
    assert _wait_none(str(tmp_path / "inst"), 60) == []

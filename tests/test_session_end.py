"""The session's end: an incomplete store never ends green, signals never cut the end, and
a stop that hangs is visible and ends (its journal kept for the next session)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory, mounted_tmpfs

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store
from pytest_stedge.store.journal import journal_dir

NOT_STORED = 3  # pytest's INTERNAL_ERROR: the harness, not a test, failed


def _argv(corpus: Path, installs: Path, db: Path, tmp: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", str(corpus), "-v", "-p", "no:cacheprovider",
            "-p", "no:hypothesispytest", "--stedge-root", str(installs), "--stedge-db", str(db),
            "--stedge-version", "4.0.1", "--stedge-workdir", str(tmp / "work"),
            "--stedge-report", "none", f"--rootdir={tmp}", *args]


def _run(corpus: Path, installs: Path, db: Path, tmp: Path, *args: str,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_argv(corpus, installs, db, tmp, *args), cwd=tmp, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _stored(db: Path) -> dict[int, tuple[str, set[str]]]:
    with Store.open(db, create=False, read_only=True) as store:
        return {r["run_id"]: (r["status"], store.item_nodeids(r["run_id"]))
                for r in store.list_runs()}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (root only), for a disk the store fills."""
    yield from mounted_tmpfs(tmp_path / "disk", "16m")


def _leave_free(disk: Path, free: int) -> Path:
    filler = disk / "filler.bin"
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, shutil.disk_usage(disk).free - free))
    return filler


def test_the_journal_reserve_takes_no_room_the_store_needs(
    small_disk: Path, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    """The journal reserved 8 MiB up front (4 MiB when less was free): a 10-item run whose
    store grows by 2.8 MiB (measured: 1,548 -> 4,364 KiB) did not fit in 4.5 MiB."""
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(5)})
    db = small_disk / "results.duckdb"
    Store.open(db).close()
    _leave_free(small_disk, 9 << 19)  # 4.5 MiB
    done = _run(corpus, fake_installs, db, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "NOT STORED" not in done.stdout
    (status, items), = _stored(db).values()
    assert status == "passed" and len(items) == 10
    assert not journal_dir(db).exists()


def test_a_full_disk_exits_non_zero_saying_where_the_items_are_and_how_to_merge(
    small_disk: Path, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(5)})
    (corpus / "conftest.py").write_text(FILL_AFTER_THE_START)
    db = small_disk / "results.duckdb"
    done = _run(corpus, fake_installs, db, tmp_path)
    filler = small_disk / "filler.bin"
    out = done.stdout
    assert done.returncode == NOT_STORED, out[-3000:]
    assert "10 passed" in out and "INTERNALERROR" not in out and "Traceback" not in out
    journals = list(journal_dir(db).glob("*.jsonl"))
    assert len(journals) == 1
    line = next(x for x in out.splitlines() if x.startswith("NOT STORED"))
    assert "the disk is full" in line and str(journals[0]) in line
    assert f"stedge import {journals[0]} --db {db}" in line
    assert f"run 1 is incomplete in {db}" in out and "stored as run" not in out
    filler.unlink()  # room again: the command the summary gave merges everything
    assert main(["import", str(journals[0]), "--db", str(db)]) == 0
    (status, items), = _stored(db).values()
    assert status == "passed" and len(items) == 10


FILL_AFTER_THE_START = """
import shutil
from pathlib import Path
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    # the run is recorded and its journal started: now the disk fills (another job's files)
    disk = Path(session.config.getoption("stedge_db")).parent
    with open(disk / "filler.bin", "wb") as handle:
        handle.write(b"\\0" * (shutil.disk_usage(disk).free - (64 << 10)))
"""


HOLD_AT_THE_END = """
import subprocess, sys, time
import pytest

HELD = []
HOLDER = '''
import duckdb, sys, time
while True:  # the session's writer may hold it for a batch
    try:
        c = duckdb.connect(sys.argv[1])
        break
    except duckdb.IOException:
        time.sleep(0.01)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
'''


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # another session takes the store just as this one ends, for {hold} s
    db = session.config.getoption("stedge_db")
    # the holder's pid beside the store: the test ends it (no inherited stderr keeps the
    # session's output open while it holds)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, db, "{hold}"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    with open(db + ".holder", "w") as handle:
        handle.write(str(holder.pid))
    HELD.append(holder)
    assert holder.stdout.readline().strip() == "held"
"""


# held too long: longer than the end's six waits of 1 s; the test ends the holder itself
@pytest.mark.parametrize(("hold", "code"), [(4, 0), (120, NOT_STORED)],
                         ids=["released-in-time", "held-too-long"])
def test_a_store_held_by_another_session_at_the_end(
    make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path, hold: int, code: int
) -> None:
    """8 sessions on one file: one printed NOT STORED and exit 0. The end now waits six
    times stedge_db_wait (here 1 s) for its turn, and exits 3 when it never came."""
    corpus = make_corpus({"a": SIMPLE_CASE, "b": SIMPLE_CASE})
    (corpus / "conftest.py").write_text(HOLD_AT_THE_END.replace("{hold}", str(hold)))
    db = tmp_path / "results.duckdb"
    done = _run(corpus, fake_installs, db, tmp_path, "-o", "stedge_db_wait=1")
    out = done.stdout
    assert done.returncode == code, out[-3000:] + done.stderr[-3000:]
    assert "4 passed" in out
    if code == 0:
        assert "NOT STORED" not in out and "stored as run 1" in out
        (status, items), = _stored(db).values()
        assert status == "passed" and len(items) == 4
        assert not journal_dir(db).exists()
    else:
        os.kill(int(Path(f"{db}.holder").read_text()), signal.SIGKILL)  # let the store go
        assert "NOT STORED" in out and "in use by another pytest-stedge session" in out
        assert "stedge import " in out and "run 1 is incomplete" in out
        assert len(list(journal_dir(db).glob("*.jsonl"))) == 1


SIGNAL_AT = """
import os, signal, time
import pytest

def pytest_stedge_write_report(config, store, run_id, path):
    # SIGTERM inside the controller's sessionfinish (the writer is closed before this)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.3)

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    os.kill(os.getpid(), signal.SIGTERM)  # before the writer's close
    time.sleep(0.3)

def pytest_unconfigure(config):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while pytest unconfigures
    time.sleep(0.3)
"""


def test_signals_during_the_end_never_cut_it(
    make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    """A raw KeyboardInterrupt traceback, and a run of passed items recorded `killed`."""
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(3)})
    (corpus / "conftest.py").write_text(SIGNAL_AT)
    db = tmp_path / "results.duckdb"
    argv = [a for a in _argv(corpus, fake_installs, db, tmp_path) if a != "none"]
    argv[argv.index("--stedge-report")] = "--stedge-report=" + str(tmp_path / "r.html")
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False)
    text = done.stdout + done.stderr
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert done.returncode == 0, text[-3000:]
    assert "SIGTERM during the session's end: finishing it" in done.stderr
    assert "SIGINT during the session's end: finishing it" in done.stderr
    assert "stored as run 1" in done.stdout
    (status, items), = _stored(db).values()
    assert status == "passed" and len(items) == 6
    assert not journal_dir(db).exists()


STUCK_END = """
import time

def pytest_sessionfinish(session):
    time.sleep(600)  # a stop that never ends (the issue's session alive 60 s after SIGTERM)
"""


def test_a_stuck_stop_prints_every_stack_and_exits_keeping_the_journal(
    make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    from fake_stedgeai import make_install

    make_install(tmp_path / "slow" / "4.0", "4.0.1", config={"*": {"sleep": 1.0}})
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(4)})
    (corpus / "conftest.py").write_text(STUCK_END)
    db = tmp_path / "results.duckdb"
    proc = subprocess.Popen(
        # 10 s: on a loaded machine (load 14-50 on 2 cores) the hooks that run before the
        # stuck one could take 3 s, and the dump then showed another frame (failed once)
        _argv(corpus, tmp_path / "slow", db, tmp_path, "-o", "stedge_stop_timeout=10"),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    finished = []
    for line in proc.stdout:
        if " PASSED" in line:
            finished.append(line.split()[0])
            if len(finished) == 3:
                break
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    try:
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    took = time.monotonic() - start
    assert proc.returncode == 1 and took < 60, (proc.returncode, took, err[-2000:])
    assert "SIGTERM: stopping the session" in err
    assert "Timeout (0:00:10)!" in err and "Thread 0x" in err, err[-3000:]
    assert "conftest.py\", line 5 in pytest_sessionfinish" in err, err[-3000:]  # where it hung
    journals = list(journal_dir(db).glob("*.jsonl"))
    assert len(journals) == 1  # kept: the next session merges it
    with Store.open(db) as store:
        from pytest_stedge.store.journal import merge_stopped

        assert merge_stopped(store)
        items = store.item_nodeids(1)
    assert set(finished) <= items


SIGTERM_AT_THE_START = """
import os, signal
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    # the run is recorded and the stop's handler installed; the session has not yet started
    os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_signal_before_the_session_started_marks_the_run_interrupted_with_its_summary(
    make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    """A SIGTERM between the run's record and the session's start (fault trials: 1 of 15
    stopped sessions) skipped pytest's session end: the run stayed `running`, no summary,
    its journal left for the next session to call `killed`."""
    corpus = make_corpus({"c0": SIMPLE_CASE})
    (corpus / "conftest.py").write_text(SIGTERM_AT_THE_START)
    db = tmp_path / "results.duckdb"
    done = _run(corpus, fake_installs, db, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "stedge summary" in out and "Traceback" not in out, out[-3000:]
    (status, items), = _stored(db).values()
    assert (status, items) == ("interrupted", set())
    assert not journal_dir(db).exists()

"""Readers get their turn while 8 sessions write one DuckDB file: `stedge runs` and
`stedge dashboard` were refused after their 5 s wait (3 of 15 and 4 of 9), because the
writers, polling like the readers, took the file in turns and never left it free."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store

# One session's writes, without pytest: items every 20-150 ms through the session writer
# (journal-less), for SECONDS; then the end of the run, as patient as a session's end.
WRITER = r'''
import random, sys, time
from pytest_stedge.store.database import ItemRow, Store
from pytest_stedge.store.writer import SessionWriter
db, seconds, k = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
store = Store.open(db, wait_s=30)
run = store.begin_run(argv=["writer", str(k)])
store.wait_s = 5
writer = SessionWriter(store, run, None)
rng, end, i = random.Random(k), time.monotonic() + seconds, 0
while time.monotonic() < end:
    writer.put(ItemRow(nodeid=f"w{k}/c{i}::generate[4.0.1]", case_name=f"c{i}",
                       stage="generate", version="4.0.1", outcome="passed",
                       result={"pad": "x" * 2000}, metrics={f"m{j}": float(j) for j in range(20)}))
    i += 1
    time.sleep(rng.uniform(0.02, 0.15))
report = writer.close()
store.wait_s = 30
if report.unstored:
    store.add_items(run, report.unstored)
store.finish_run(run, status="passed", exitstatus=0)
print(run, i, flush=True)
'''


@pytest.mark.timeout(300)
def test_readers_get_their_turn_while_eight_sessions_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.duckdb"
    Store.open(db).close()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), "8", str(k)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(8)
    ]
    reads: list[tuple[str, int, float, str]] = []
    try:
        time.sleep(1.0)
        while any(w.poll() is None for w in writers):
            command = "dashboard" if len(reads) % 3 == 2 else "runs"
            args = [command, "--db", str(db)]
            if command == "dashboard":
                args += ["--out", str(tmp_path / "site"), "--corpus", str(tmp_path)]
            start = time.monotonic()
            code = main(args)  # the default wait: 5 s
            took = time.monotonic() - start
            reads.append((command, code, took, capsys.readouterr().err))
    finally:
        outputs = [w.communicate(timeout=120) for w in writers]
    for writer, (out, err) in zip(writers, outputs):
        assert writer.returncode == 0, err[-2000:]
    refused = [(c, e.strip()) for c, code, _, e in reads if code != 0]
    assert len(reads) >= 8, reads  # readers ran all along the writes
    assert refused == [], refused
    assert all("See also" not in e for _, _, _, e in reads)  # no DuckDB CLI advice
    with Store.open(db, create=False, read_only=True) as store:  # and no write was lost
        for out, _ in outputs:
            run_id, count = (int(x) for x in out.split())
            assert len(store.item_nodeids(run_id)) == count


# A session holding the file for a while at a time (its writes under a slow disk), again
# and again: 7 of them take the file in turns.
GREEDY = r'''
import sys, time
from pytest_stedge.store.database import Store
store = Store.open(sys.argv[1], wait_s=60)
print("ready", flush=True)
sys.stdin.readline()  # all open first, then all take turns (opening while others hold took 45 s)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    with store.attached(write=True):
        time.sleep(0.8)
'''


@pytest.mark.timeout(300)
def test_a_waiting_reader_goes_before_writers_taking_turns(tmp_path: Path) -> None:
    """When the holder lets the file go, the writers waiting too used to race the reader
    for it (each won 1 time in 8): now they let it in first."""
    from pytest_stedge.errors import StoreBusyError

    db = tmp_path / "results.duckdb"
    Store.open(db).close()
    greedy = [subprocess.Popen([sys.executable, "-c", GREEDY, str(db), "20"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
              for _ in range(7)]
    waits, refused = [], 0
    try:
        for g in greedy:
            assert g.stdout is not None
            assert g.stdout.readline().strip() == "ready", g.communicate()[1][-2000:]
        for g in greedy:
            assert g.stdin is not None
            g.stdin.write("go\n")
            g.stdin.flush()
        time.sleep(2.0)  # the writers are taking turns
        for _ in range(6):
            start = time.monotonic()
            try:
                with Store.open(db, create=False, read_only=True, wait_s=5) as store:
                    store.list_runs()
            except StoreBusyError:
                refused += 1
            waits.append(round(time.monotonic() - start, 2))
    finally:
        for g in greedy:
            g.kill()
            g.communicate()
    assert refused == 0, waits
    # a reader waits for the holder of the moment (0.8 s) twice (open, then the read)
    assert max(waits) < 4.0, waits

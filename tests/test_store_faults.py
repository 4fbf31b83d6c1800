"""The store under faults: damaged, misplaced or foreign files, read-only files, readers
while a session writes, usage errors, kills and SIGTERM; names that must not collide."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.cli.main import main
from pytest_stedge.errors import StoreError
from pytest_stedge.store.database import ItemRow, Store
from pytest_stedge.store.journal import journal_dir


def _session(corpus: Path, installs: Path, db: Path, *args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", str(corpus), "-v", "-p", "no:cacheprovider",
         "-p", "no:hypothesispytest", "--stedge-root", str(installs), "--stedge-db", str(db),
         f"--rootdir={cwd}", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def _slow_installs(tmp_path: Path, sleep: float) -> Path:
    from fake_stedgeai import make_install

    root = tmp_path / "slow"
    make_install(root / "4.0", "4.0.1", config={"*": {"sleep": sleep}})
    return root


def _stedge_runs(db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["runs", "--db", str(db)])
    out, err = capsys.readouterr()
    return code, out, err


def _big_store(path: Path, items: int = 3000) -> None:
    with Store.open(path) as store:
        run_id = store.begin_run(argv=["pytest"])
        rows = [
            ItemRow(nodeid=f"c{i}::generate[4.0.1]", case_name=f"c{i}", stage="generate",
                    version="4.0.1", outcome="passed", result={"pad": "x" * 400},
                    metrics={f"m{j}": float(i * j) for j in range(10)})
            for i in range(items)
        ]
        store.add_items(run_id, rows)


def test_a_half_truncated_store_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.duckdb"
    _big_store(db)
    os.truncate(db, db.stat().st_size // 2)
    code, _, err = _stedge_runs(db, capsys)
    code2 = main(["show", "1", "--db", str(db)])
    err2 = capsys.readouterr().err
    assert (code, code2) == (2, 2)
    for text in (err, err2):
        assert text.count("\n") == 1 and str(db) in text and "Traceback" not in text
        assert text.startswith("stedge: error: store ")


def test_a_truncated_store_stops_a_session_with_a_usage_error(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    db = tmp_path / "db.duckdb"
    _big_store(db)
    os.truncate(db, db.stat().st_size // 2)
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(fake_installs), "--stedge-db", str(db),
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "INTERNALERROR" not in text and "Traceback" not in text
    result.stderr.fnmatch_lines([f"*store {db}*"])


def test_a_store_under_a_regular_file_is_a_usage_error(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "plain.txt").write_text("not a folder\n")
    db = tmp_path / "plain.txt" / "db.duckdb"
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(fake_installs), "--stedge-db", str(db),
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "INTERNALERROR" not in text
    result.stderr.fnmatch_lines([f"*cannot create store {db}: {tmp_path / 'plain.txt'} is a file*"])
    assert main(["ingest", str(tmp_path), "--version", "4.0.1", "--case", "cnn",
                 "--corpus", str(corpus), "--db", str(db)]) == 2


def test_a_sqlite_file_is_not_a_store_and_nothing_is_fetched(tmp_path: Path) -> None:
    path = tmp_path / "results.duckdb"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"^store .*results.duckdb is not a DuckDB file"):
        Store.open(path, read_only=True)
    with Store.open(tmp_path / "ok.duckdb") as store, store.attached() as db:
        settings = dict(db.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('autoinstall_known_extensions', 'autoload_known_extensions')").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


def test_a_read_only_store_file_can_be_read(
    readonly_mount: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = readonly_mount / "db.duckdb"
    _big_store(db, items=20)
    subprocess.run(["mount", "-o", "remount,ro", str(readonly_mount)], check=True)
    code, out, err = _stedge_runs(db, capsys)
    assert code == 0, err
    assert out.splitlines()[1].split()[0] == "1" and " 20 " in out
    assert main(["report", "1", "--db", str(db), "--out", str(tmp_path / "r.html")]) == 0
    with pytest.raises(StoreError, match="cannot write store|Read-only|read-only"), \
            Store.open(db) as store:
        store.begin_run(argv=[])


def test_readers_and_an_ingest_work_while_a_session_writes(
    make_corpus: CorpusFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = make_corpus({f"c{i}": SIMPLE_CASE.replace("stm32n6", "stm32n6") for i in range(4)})
    db = tmp_path / "db.duckdb"
    proc = _session(corpus, _slow_installs(tmp_path, 1.0), db, "--stedge-report", "none",
                    cwd=tmp_path)
    seen = []
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if db.exists():
                code = main(["runs", "--db", str(db), "--json"])
                out, err = capsys.readouterr()
                assert code == 0, err
                runs = json.loads(out)
                if runs:
                    seen.append((runs[0]["status"], runs[0]["items"]))
            time.sleep(0.3)
    finally:
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output
    running = [n for status, n in seen if status == "running"]
    assert running and max(running) > 0, seen  # read mid-session, with items already in
    assert seen[-1] == ("passed", 8) or main(["runs", "--db", str(db)]) == 0


def test_a_usage_error_leaves_no_run_and_no_install_is_no_version(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    db = tmp_path / "db.duckdb"
    common = [str(corpus), "--stedge-db", str(db), "-p", "no:cacheprovider",
              f"--rootdir={pytester.path}"]
    bad = pytester.runpytest_subprocess(*common, "--stedge-root", str(fake_installs),
                                        "--stedge-version", "9.9.9")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    missing = pytester.runpytest_subprocess(*common, "--stedge-root", str(fake_installs),
                                            "--stedge-baseline", "2.0.0")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    with Store.open(db, read_only=True) as store:
        assert store.list_runs() == []
    # no install at all: toolchain items skip under the placeholder, which is no version
    empty = tmp_path / "nothing"
    empty.mkdir()
    none = pytester.runpytest_subprocess(*common, "--stedge-root", str(empty),
                                         "--stedge-version", "", "-o", "stedge_roots=")
    with Store.open(db, read_only=True) as store:
        runs = store.list_runs()
        assert store.versions() == []
    assert len(runs) == 1 or none.ret == pytest.ExitCode.USAGE_ERROR
    assert main(["diff", "3.0.0", "4.0.1", "--db", str(db)]) == 2
    assert "versions with results: none" in capsys.readouterr().err


def _after_items(proc: subprocess.Popen[str], count: int, stop: Callable[[], None]) -> list[str]:
    """Read the session's verbose lines; after ``count`` items finished, ``stop`` it.
    Returns the finished node ids."""
    assert proc.stdout is not None
    finished = []
    for line in proc.stdout:
        if " PASSED" in line or " FAILED" in line:
            finished.append(line.split()[0])
            if len(finished) == count:
                stop()
                break
    return finished

def test_sigterm_finishes_like_ctrl_c(make_corpus: CorpusFactory, tmp_path: Path) -> None:
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(4)})
    db = tmp_path / "db.duckdb"
    proc = _session(corpus, _slow_installs(tmp_path, 1.5), db, cwd=tmp_path)
    finished = _after_items(proc, 3, lambda: proc.send_signal(signal.SIGTERM))
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "stedge summary" in output and "stored as run 1" in output
    with Store.open(db, read_only=True) as store:
        run = store.get_run(1)
    assert run["status"] == "interrupted"
    stored = {i["nodeid"] for i in run["items"]}
    assert set(finished) <= stored
    assert not journal_dir(db).exists()  # everything is in the store: no journal left


def test_a_killed_session_keeps_its_finished_items_and_the_next_one_merges_them(
    make_corpus: CorpusFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = make_corpus({f"c{i}": SIMPLE_CASE for i in range(4)})
    db = tmp_path / "db.duckdb"
    proc = _session(corpus, _slow_installs(tmp_path, 1.5), db, cwd=tmp_path)
    finished = _after_items(proc, 3, proc.kill)
    proc.communicate(timeout=60)
    with Store.open(db, read_only=True) as store:
        direct = store.item_nodeids(1)
    code, _, err = _stedge_runs(db, capsys)
    assert code == 0 and "journal(s) of stopped sessions" in err
    with Store.open(db) as store:  # a writer (the next session, stedge import) merges
        from pytest_stedge.store.journal import merge_stopped

        lines = merge_stopped(store)
        run = store.get_run(1)
    assert lines and "run 1 (killed)" in lines[0]
    assert run["status"] == "killed"
    assert set(finished) <= {i["nodeid"] for i in run["items"]}
    assert direct <= {i["nodeid"] for i in run["items"]}


def test_names_that_used_to_collide(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    # case a_b, and variant b of case a: one folder each
    corpus = make_corpus({
        "a_b": SIMPLE_CASE,
        "a": SIMPLE_CASE + "[variants.b]\n[variants.c]\n",
    })
    common = [str(corpus), "--stedge-root", str(fake_installs), "--stedge-version", "4.0.1",
              "-p", "no:cacheprovider", f"--rootdir={pytester.path}"]
    one = pytester.runpytest_subprocess(*common, "--stedge-db", str(tmp_path / "one.duckdb"))
    one.assert_outcomes(passed=6)
    two = pytester.runpytest_subprocess(*common, "--stedge-db", str(tmp_path / "two.duckdb"))
    two.assert_outcomes(passed=6)
    work = pytester.path / ".stedge" / "work"
    runs = sorted(p.name for p in work.iterdir())
    assert len(runs) == 2 and all(r.startswith("run-1-") for r in runs)  # run 1 of each store
    folders = {p.relative_to(work / runs[0]).as_posix() for p in (work / runs[0]).glob("**/generate-4.0.1")}
    assert folders == {"a_b/generate-4.0.1", "a/@b/generate-4.0.1", "a/@c/generate-4.0.1"}
    reports = sorted(p.name for p in (pytester.path / "reports").glob("run-1-*.html"))
    assert len(reports) == 2


def test_duplicate_ids_are_collection_errors(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE.replace('["generate"]', '["generate", "generate"]')})
    other = make_corpus({"same": SIMPLE_CASE}, root=tmp_path / "elsewhere" / "corpus")
    (other / "same").rename(other / "cnn2")
    twin = make_corpus({"cnn2": SIMPLE_CASE}, root=tmp_path / "third" / "corpus")
    result = pytester.runpytest_subprocess(
        str(corpus), str(other), str(twin), "--stedge-root", str(fake_installs),
        "--stedge-version", "4.0.1", "--stedge-db", str(tmp_path / "db.duckdb"),
        "-p", "no:cacheprovider", f"--rootdir={tmp_path}",
    )
    text = result.stdout.str()
    assert "[stages]: stage 'generate' is listed twice" in text
    assert "case name 'cnn2' is also the name of" in text
    assert result.ret != 0

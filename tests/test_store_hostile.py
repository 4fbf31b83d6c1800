"""Hostile store paths: a new store in a read-only folder, a FIFO, a device, a name too
long. Each is one line naming the path, for a session (a usage error) and for every
reader; none hangs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.cli.main import main
from pytest_stedge.errors import StoreError
from pytest_stedge.store.database import Store


def _session(pytester: pytest.Pytester, corpus: Path, installs: Path, db: Path):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db),
        "--stedge-version", "4.0.1", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        timeout=120,
    )


def test_a_new_store_in_a_read_only_folder_is_a_usage_error_naming_it(
    readonly_mount: Path, pytester: pytest.Pytester, make_corpus: CorpusFactory,
    fake_installs: Path,
) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(readonly_mount)], check=True)
    db = readonly_mount / "results.duckdb"
    with pytest.raises(StoreError, match=rf"^cannot create store {db}: Read-only file system"):
        Store.open(db)
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = _session(pytester, corpus, fake_installs, db)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "INTERNALERROR" not in text and "Traceback" not in text
    result.stderr.fnmatch_lines([f"*cannot create store {db}: Read-only file system*"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_the_store_is_refused_at_once_by_readers_and_sessions(
    tmp_path: Path, pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path,
) -> None:
    fifo = tmp_path / "results.duckdb"
    os.mkfifo(fifo)
    expected = f"store {fifo} is a FIFO (named pipe), not a regular file"
    # each reader in a process of its own, with a deadline: the old code waited for ever
    # for a writer on the FIFO (602 s until interrupted)
    for command in (["runs"], ["show", "latest"], ["dashboard", "--out", str(tmp_path / "s")]):
        done = subprocess.run(
            [sys.executable, "-m", "pytest_stedge.cli.main", *command, "--db", str(fifo)],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = _session(pytester, corpus, fake_installs, fifo)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{expected}*"])


def test_a_device_and_a_name_too_long_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--db", "/dev/null"]) == 2
    assert "store /dev/null is a character device, not a regular file" in capsys.readouterr().err
    long = tmp_path / ("x" * 300 + ".duckdb")
    assert main(["runs", "--db", str(long)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "File name too long" in err and "Traceback" not in err

"""The end of a session's writes on a full disk: what the summary counts as missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_stedge.store.connection import StoreFullError
from pytest_stedge.store.database import Store
from pytest_stedge.store.ending import finish_writes, not_stored_lines
from pytest_stedge.store.journal import Journal
from pytest_stedge.store.rows import ItemRow
from pytest_stedge.store.writer import WriteReport


def _row(n: int) -> ItemRow:
    return ItemRow(nodeid=f"corpus/cnn/case.toml::generate[{n}]", case_name="cnn",
                   stage="generate", version="4.0.1", outcome="passed",
                   result={"schema": "stedge.result/1"}, metrics={"macc": float(n)})


def test_items_the_store_took_before_the_disk_filled_are_not_counted_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault trials' full disk: DuckDB stored all 16 items and failed after, and the
    summary said "15 finished item(s) ... are not in the store". What the store holds is
    read back: 0 items missing, only the run's end, and the journal stays for the merge."""
    db = tmp_path / "results.duckdb"
    store = Store.open(db)
    run_id = store.begin_run(argv=["pytest", "corpus"], versions=["4.0.1"])
    journal = Journal.create(db, {"run_uuid": "u", "argv": ["pytest"], "versions": ["4.0.1"]})
    rows = [_row(n) for n in range(3)]
    real_add = store.add_items

    def commits_then_fails(run: int, items: list[ItemRow]) -> None:
        real_add(run, items)  # the rows are in, then the disk is full
        raise StoreFullError(f"{db}: No space left on device")

    def cannot_finish(*_args: object, **_kwargs: object) -> None:
        raise StoreFullError(f"{db}: No space left on device")

    monkeypatch.setattr(store, "add_items", commits_then_fails)
    monkeypatch.setattr(store, "finish_run", cannot_finish)
    kept = WriteReport(unstored=list(rows))
    try:
        ending = finish_writes(store, run_id, kept, journal, status="passed", exitstatus=0)
    finally:
        store.close()
    assert not ending.finished and not ending.complete  # the run's end is not stored
    assert kept.unstored == [] and kept.stored == 3 and kept.full
    line = not_stored_lines(db, journal.path, kept)[0]
    assert "the disk is full" in line and "finished item(s)" not in line
    assert "the end of the run (every finished item is stored) is not in the store" in line
    assert journal.path.exists() and f"stedge import {journal.path} --db {db}" in line


def test_items_the_store_does_not_hold_are_still_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "results.duckdb"
    store = Store.open(db)
    run_id = store.begin_run(argv=["pytest", "corpus"], versions=["4.0.1"])
    journal = Journal.create(db, {"run_uuid": "v", "argv": ["pytest"], "versions": ["4.0.1"]})

    def full(*_args: object, **_kwargs: object) -> None:
        raise StoreFullError(f"{db}: No space left on device")

    monkeypatch.setattr(store, "add_items", full)
    monkeypatch.setattr(store, "finish_run", full)
    kept = WriteReport(unstored=[_row(1), _row(2)])
    try:
        finish_writes(store, run_id, kept, journal, status="passed", exitstatus=0)
    finally:
        store.close()
    assert len(kept.unstored) == 2 and kept.stored == 0
    assert "2 finished item(s) and the end of the run are not in the store" in (
        not_stored_lines(db, journal.path, kept)[0])

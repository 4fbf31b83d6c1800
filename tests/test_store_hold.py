"""A session's writer keeps the store attached while items keep arriving, and lets it go
when idle, after a while, or as soon as a reader waits; every column goes to Arrow typed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_stedge.store import connection, writer
from pytest_stedge.store.database import ItemRow, Store


def _row(i: int) -> ItemRow:
    return ItemRow(nodeid=f"c{i}::generate[4.0.1]", case_name=f"c{i}", stage="generate",
                   version="4.0.1", outcome="passed", result={"i": i},
                   metrics={"activations_bytes": float(1000 + i)})


def _attaches(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    calls: list[bool] = []
    real = connection.attach

    def counted(db: object, path: str, *, read_only: bool, wait_s: float) -> None:
        calls.append(read_only)
        real(db, path, read_only=read_only, wait_s=wait_s)  # type: ignore[arg-type]

    monkeypatch.setattr(connection, "attach", counted)
    return calls


def test_items_arriving_one_by_one_share_one_attach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.duckdb"
    store = Store.open(db)
    run_id = store.begin_run(argv=["pytest"])
    calls = _attaches(monkeypatch)
    session = writer.SessionWriter(store, run_id, None)
    for i in range(6):  # a slow tool: each item is a batch of its own (window 0.2 s)
        session.put(_row(i))
        time.sleep(0.3)
    report = session.close()
    assert report.stored == 6 and not report.unstored
    assert calls == [False], "one write hold for six batches"
    assert len(store.item_nodeids(run_id)) == 6  # the held writes reached the file
    store.close()


def test_an_idle_writer_lets_the_file_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "IDLE_RELEASE_S", 0.3)
    db = tmp_path / "s.duckdb"
    store = Store.open(db)
    run_id = store.begin_run(argv=["pytest"])
    calls = _attaches(monkeypatch)
    session = writer.SessionWriter(store, run_id, None)
    session.put(_row(1))
    time.sleep(1.2)  # idle past IDLE_RELEASE_S: released
    session.put(_row(2))
    time.sleep(0.4)
    session.close()
    assert calls == [False, False]
    store.close()


_OTHER = """
import sys, time
from pytest_stedge.store.database import Store
start = time.monotonic()
reading = sys.argv[3] == "read"
with Store.open(sys.argv[1], read_only=reading, wait_s=float(sys.argv[2])) as store:
    if not reading:  # an ingest or another session: a run of its own
        store.begin_run(argv=["other"])
    runs = store.list_runs()
print(len(runs), round(time.monotonic() - start, 3))
"""


@pytest.mark.parametrize("other", ["read", "write"])
def test_a_reader_or_another_writer_gets_its_turn_while_items_keep_arriving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str
) -> None:
    # a long hold and a short reader wait: only the reader flag can let the reader in
    monkeypatch.setattr(writer, "MAX_HOLD_S", 600.0)
    monkeypatch.setattr(writer, "IDLE_RELEASE_S", 600.0)
    db = tmp_path / "s.duckdb"
    store = Store.open(db)
    run_id = store.begin_run(argv=["pytest"])
    session = writer.SessionWriter(store, run_id, None)
    reader = None
    try:
        for i in range(80):  # 8 s of items; the reader waits at most 3 s
            session.put(_row(i))
            if i == 3:  # the file is held by now
                reader = subprocess.Popen([sys.executable, "-c", _OTHER, str(db), "3", other],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
            time.sleep(0.1)
    finally:
        report = session.close()
        store.close()
    assert reader is not None
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err  # not StoreBusyError after its 3 s wait
    assert out.split()[0] == ("1" if other == "read" else "2")
    assert report.stored == 80


def test_every_column_is_typed_so_arrow_infers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # pyarrow's inference tries to import pandas and dateutil on every call where absent
    import pyarrow as pa

    from pytest_stedge.store import bulk

    inferred: list[object] = []
    real = pa.array

    def spy(values: object, *args: object, **kwargs: object) -> object:
        if kwargs.get("type") is None:
            inferred.append(values)
        return real(values, *args, **kwargs)

    monkeypatch.setattr(pa, "array", spy)
    store = Store.open(":memory:")
    run_id = store.begin_run(argv=["pytest"])
    store.add_items(run_id, [_row(i) for i in range(5)])
    assert inferred == []
    assert len(store.item_nodeids(run_id)) == 5
    assert str(bulk.arrow_type(pa, "value")) == "double"
    with pytest.raises(ValueError, match="column 'value' holds str"):
        bulk.insert_columns(store.db, "metrics", {"value": ["x"]})
    store.close()

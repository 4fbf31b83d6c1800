"""A store another DuckDB release wrote is refused naming both releases and the commands
that convert it (issue 30: README command 2 used to downgrade DuckDB under command 1's store).

The file is a real store this DuckDB wrote, whose main header is then made to say what a
newer release writes: storage version 999 (the number the issue's error message showed for
DuckDB 2.0.1) and the library version "v2.0.1", with the header checksum recomputed as
DuckDB computes it (a 64-bit multiply-xor over the header's words; checked below against
the checksum DuckDB itself wrote).
"""

from __future__ import annotations

import struct
from pathlib import Path

import duckdb
import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store
from pytest_stedge.store.foreign import written_by

HEADER = 4096  # DuckDB's main file header block


def _checksum(block: bytes) -> int:
    result = 5381
    for (word,) in struct.iter_unpack("<Q", block):
        result ^= (word * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    return result


def _as_written_by_another(path: Path, storage: int, library: bytes) -> None:
    data = bytearray(path.read_bytes())
    assert struct.unpack_from("<Q", data, 0)[0] == _checksum(bytes(data[8:HEADER]))
    struct.pack_into("<Q", data, 12, storage)
    data[52:84] = library.ljust(32, b"\0")
    struct.pack_into("<Q", data, 0, _checksum(bytes(data[8:HEADER])))
    path.write_bytes(bytes(data))


def test_the_writing_release_is_read_from_the_header(tmp_path: Path) -> None:
    db = tmp_path / "results.duckdb"
    Store.open(db).close()
    assert written_by(str(db)) == f"v{duckdb.__version__}"


def test_a_store_of_a_newer_duckdb_is_refused_with_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.duckdb"
    Store.open(db).close()
    _as_written_by_another(db, 999, b"v2.0.1")
    assert main(["runs", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"written by DuckDB v2.0.1; this environment runs DuckDB {duckdb.__version__}" in err
    assert f"`stedge export --db {db} --out bundle/`" in err
    assert "`stedge import bundle/ --db NEW.duckdb`" in err
    assert "Traceback" not in err

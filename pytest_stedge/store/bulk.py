"""Column-wise bulk inserts: rows become one NumPy array per column, scanned by DuckDB.

DuckDB plans a multi-row ``VALUES`` statement in time proportional to its parameters
(90% of the old write path); a registered dict of NumPy arrays is scanned like a table,
at the speed of an Arrow insert, with no dependency beyond NumPy (already ours).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

_VIEW = "_stedge_bulk"


def insert_rows(
    db: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    on_conflict: str = "replace",
) -> None:
    """Insert ``rows`` (tuples in ``columns`` order) into ``table`` in one statement.

    :param table: one of the store's tables (never user input).
    :param on_conflict: ``replace`` (INSERT OR REPLACE), ``ignore`` (INSERT OR IGNORE) or
        ``error`` (plain INSERT).
    """
    if not rows:
        return
    insert_columns(db, table, dict(zip(columns, zip(*rows))), on_conflict=on_conflict)


def insert_columns(
    db: duckdb.DuckDBPyConnection,
    table: str,
    data: dict[str, Sequence[Any]],
    *,
    on_conflict: str = "replace",
) -> None:
    """Insert columns (``name -> values``, all of one length) into ``table`` by name.

    Values may be None (NULL). Types are cast to the table's own by DuckDB.
    """
    verb = {"replace": "INSERT OR REPLACE INTO", "ignore": "INSERT OR IGNORE INTO",
            "error": "INSERT INTO"}[on_conflict]
    with frames(db, **{_VIEW: data}):
        db.execute(f"{verb} {table} BY NAME SELECT * FROM {_VIEW}")


@contextmanager
def frames(db: duckdb.DuckDBPyConnection, **tables: dict[str, Sequence[Any]]) -> Iterator[None]:
    """Register each ``name={column: values}`` as a view for the block (then unregister)."""
    import numpy as np

    arrays = {name: {c: _array(np, v) for c, v in data.items()} for name, data in tables.items()}
    longest = max((len(a) for t in arrays.values() for a in t.values()), default=0)
    # DuckDB types an object column from a sample of its values (1,000 by default); DuckDB
    # 1.5 fails on a column with no value in the sample ("no attribute first_valid_index":
    # it asks the array a pandas question). A sample as long as the columns always finds one
    # or knows the column is all NULL; the sample's cost is linear (0.3 s per 200,000 rows).
    db.execute(f"SET pandas_analyze_sample = {max(longest, 1000)}")
    try:
        with _pandas_not_searched():
            for name, columns in arrays.items():
                db.register(name, columns)
            yield
    finally:
        for name in tables:
            db.unregister(name)
        db.execute("RESET pandas_analyze_sample")


_PANDAS_ABSENT: bool | None = None


@contextmanager
def _pandas_not_searched() -> Iterator[None]:
    """Without pandas installed, DuckDB tries ``import pandas`` for every value of an
    object column it scans (8,804 searches of sys.path for 3,300 rows: 0.4 s of a 0.45 s
    insert). While pandas is absent, a ``None`` in ``sys.modules`` makes each attempt
    fail at once, as it would anyway; an installed pandas is imported once and untouched."""
    global _PANDAS_ABSENT
    if _PANDAS_ABSENT is None:
        import importlib.util

        _PANDAS_ABSENT = "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None
    if not _PANDAS_ABSENT or "pandas" in sys.modules:
        yield
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


def _array(np: Any, values: Sequence[Any]) -> Any:
    """A typed array for plain numbers (DuckDB infers object columns from a sample, so a
    column of ints that later holds a float must not be left to inference)."""
    items = list(values)
    kinds = {type(v) for v in items}
    if items and kinds <= {int, float}:
        return np.array(items, dtype=np.float64 if float in kinds else np.int64)
    column = np.empty(len(items), dtype=object)
    column[:] = items
    return column

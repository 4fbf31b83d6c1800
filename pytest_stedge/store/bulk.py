"""Column-wise bulk inserts: rows become one Arrow table per statement, scanned by DuckDB.

DuckDB plans a multi-row ``VALUES`` statement in time proportional to its parameters
(90% of the old write path); a registered Arrow table is scanned like a table, in C++.
pyarrow is a dependency for this: NumPy object columns cost a Python call per value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

_VIEW = "_stedge_bulk"

# The Arrow type of each column the store writes, by name (every other column is text).
# Typed columns skip pyarrow's type inference, which tries `import pandas` and
# `import dateutil` on every call where they are absent (~10 ms per batch).
_INT_COLUMNS = frozenset(("run_id", "item", "name", "id"))
_FLOAT_COLUMNS = frozenset(("value", "duration_s", "tool_seconds"))
_BOOL_COLUMNS = frozenset(("recorded",))
_TIME_COLUMNS = frozenset(("finished_at",))


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
    """Register each ``name={column: values}`` as a view for the block (then unregister).

    Each becomes an Arrow table: DuckDB scans Arrow in C++, while NumPy object columns
    (text, numbers with NULLs) cost it a Python call per value, and an ``import pandas``
    attempt per value when pandas is absent (50 items: 414 ms, of which 0.4 s imports).
    """
    import pyarrow as pa

    try:
        for name, data in tables.items():
            db.register(name, pa.table({c: _column(pa, c, v) for c, v in data.items()}))
        yield
    finally:
        for name in tables:
            db.unregister(name)


def arrow_type(pa: Any, name: str) -> Any:
    """The Arrow type of the store's column ``name``."""
    if name in _INT_COLUMNS:
        return pa.int64()
    if name in _FLOAT_COLUMNS:
        return pa.float64()
    if name in _BOOL_COLUMNS:
        return pa.bool_()
    if name in _TIME_COLUMNS:
        return pa.timestamp("us")
    return pa.string()


def _column(pa: Any, name: str, values: Sequence[Any]) -> Any:
    """An Arrow array of ``values`` with the column's own type (ints are floats in a float
    column, as in the table)."""
    items = values if isinstance(values, list) else list(values)
    kind = arrow_type(pa, name)
    try:
        return pa.array(items, type=kind, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        shown = next((v for v in items if v is not None), None)
        raise ValueError(
            f"column {name!r} holds {type(shown).__name__} {shown!r:.60}, not {kind} ({exc})"
        ) from None

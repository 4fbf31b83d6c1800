"""The store: DuckDB file with runs, cases, results, metrics and findings; its named
migrations, the rows items hand over, Parquet bundles, and the queries reports need.

All SQL lives here. May import ``errors`` and ``result``; the pytest flow and the CLI
import it, never the other way round. ``rows`` is free of DuckDB so xdist workers can
build rows without loading it; ``Store`` and ``DEFAULT_PATH`` are exported lazily (they
were ``pytest_stedge.store.Store`` before the wings, and hook implementations receive a
``Store``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_PATH", "Store"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import database

        return getattr(database, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

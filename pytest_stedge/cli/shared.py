"""What several ``stedge`` commands share, and nothing else: how a figure prints, which
store a command reads, the ``--band`` option. Logic two commands share lives in a wing."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_stedge.store.location import Location


def fmt_figure(value: float | None) -> str:
    """``2,107,392`` for whole numbers (every digit, thousands separated), six significant
    digits otherwise (``0.998712``), ``inf``/``nan`` as they are, ``-`` when unknown."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 2**63:
        return f"{int(value):,}"
    return f"{value:.6g}"


def db_path(args: argparse.Namespace) -> Location:
    """The store a ``stedge`` command reads: --db (a file or a PostgreSQL server), else
    .stedge/results.duckdb."""
    from pytest_stedge.errors import StoreError
    from pytest_stedge.store.database import DEFAULT_PATH
    from pytest_stedge.store.location import parse_location

    if not getattr(args, "db", None):
        return DEFAULT_PATH
    try:
        return parse_location(args.db)
    except ValueError as exc:
        raise StoreError(f"--db: {exc}") from None


def add_band_option(parser: argparse.ArgumentParser) -> None:
    """``--band [METRIC=]BAND`` (repeatable), as ``stedge diff`` reads it."""
    parser.add_argument(
        "--band",
        metavar="[METRIC=]BAND",
        action="append",
        default=[],
        help="Band of metrics a case does not band ('+3%%', '+1024', '0'); METRIC=BAND sets one "
        "metric's (repeatable). Default: ini stedge_baseline_band, else 0; validation metrics "
        "have their own (ini stedge_metric_bands, README 'Bands')",
    )

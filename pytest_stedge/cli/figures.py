"""How ``stedge`` commands print a figure: the way the tables do."""

from __future__ import annotations

import math


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

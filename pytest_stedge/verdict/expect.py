"""Check a case's ``[expect]`` bounds against measured metrics, and explain misses.

The failure message follows pytest-regressions: one table with every metric that
missed, its expectation, the measured value and the difference, so a reader sees
the whole picture from one failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..case.model import Bound
from ..result import METRICS


@dataclass(frozen=True)
class Miss:
    """A metric that did not meet its expectation (``measured`` None: not measured)."""

    bound: Bound
    measured: float | None

    @property
    def metric(self) -> str:
        """Name of the metric."""
        return self.bound.metric

    def expected_text(self) -> str:
        """The expectation as a person reads it: ``<= 2,700,000``, ``== 5 ± 1%``."""
        b = self.bound
        tol = _tolerance_text(b)
        if b.exact is not None:
            return f"== {fmt_value(b.metric, b.exact)}{tol}"
        parts = []
        if b.min is not None:
            parts.append(f">= {fmt_value(b.metric, b.min)}")
        if b.max is not None:
            parts.append(f"<= {fmt_value(b.metric, b.max)}")
        return " and ".join(parts) + tol

    def difference_text(self) -> str:
        """Distance from the nearest bound, absolute and relative."""
        if self.measured is None:
            return "not measured"
        if math.isnan(self.measured):
            return "measured NaN"
        b = self.bound
        if b.exact is not None:
            target = b.exact
        elif b.max is not None and self.measured > b.max:
            target = b.max
        else:
            target = b.min if b.min is not None else self.measured
        delta = self.measured - target
        text = f"{'+' if delta >= 0 else '-'}{fmt_value(b.metric, abs(delta))}"
        if target:
            text += f" ({delta / abs(target) * 100:+.1f}%)"
        return text


def _tolerance_text(bound: Bound) -> str:
    parts = []
    if bound.rel:
        parts.append(f"{bound.rel * 100:g}%")
    if bound.abs:
        parts.append(fmt_value(bound.metric, bound.abs))
    return f" ± {' + '.join(parts)}" if parts else ""


def fmt_value(metric: str, value: float) -> str:
    """Format a metric value with thousands separators for counts, 6 digits otherwise."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    spec = METRICS.get(metric)
    if value == int(value) and abs(value) < 1e15:
        text = f"{int(value):,}"
    else:
        text = f"{value:.6g}"
    if spec and spec.unit in ("B",):
        text += " B"
    return text


def check(bounds: Sequence[Bound], metrics: Mapping[str, float]) -> list[Miss]:
    """Every bound that ``metrics`` misses (a missing metric is a miss)."""
    misses = []
    for bound in bounds:
        measured = metrics.get(bound.metric)
        if measured is None or not _meets(bound, measured):
            misses.append(Miss(bound, measured))
    return misses


def _meets(bound: Bound, value: float) -> bool:
    if math.isnan(value):
        return False
    if bound.exact is not None:
        # numpy.isclose semantics: |a - b| <= abs + rel * |b|
        return abs(value - bound.exact) <= bound.abs + bound.rel * abs(bound.exact)
    slack_min = bound.abs + bound.rel * abs(bound.min) if bound.min is not None else 0.0
    slack_max = bound.abs + bound.rel * abs(bound.max) if bound.max is not None else 0.0
    if bound.min is not None and value < bound.min - slack_min:
        return False
    return not (bound.max is not None and value > bound.max + slack_max)


def format_misses(title: str, misses: Sequence[Miss], *, hint: str | None = None) -> str:
    """The failure message: a header, then one row per missed metric."""
    lines = [(f"{title}: {len(misses)} metric{'s' if len(misses) != 1 else ''} missed "
              "their expectations.")]
    if hint:
        lines.append(hint)
    lines.append("")
    rows = [("metric", "expected", "measured", "difference")]
    for miss in misses:
        measured = "-" if miss.measured is None else fmt_value(miss.metric, miss.measured)
        rows.append((miss.metric, miss.expected_text(), measured, miss.difference_text()))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def summarize_miss(miss: Miss) -> str:
    """One line for the terminal summary."""
    measured = "not measured" if miss.measured is None else fmt_value(miss.metric, miss.measured)
    return f"{miss.metric}: expected {miss.expected_text()}, measured {measured}"

"""Server-side charts as inline SVG: grouped bars, stacked bars and line charts.

Every chart is a self-contained ``<svg>`` string (:class:`markupsafe.Markup`) with a
``<title>``, labelled axes with units, a legend, and a ``<title>`` tooltip on every
mark. All text that reaches the SVG (case names, versions) is escaped here: names come
from model and case files and are untrusted.

Colours come from :data:`PALETTE`, one colour per kind (epoch kinds, version roles,
metrics, change kinds, bug statuses), so the same thing has the same colour on every
page; the pages' CSS is generated from the same table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from markupsafe import Markup

from pytest_stedge.parsers.epoch_kinds import HYBRID_TEXT
from pytest_stedge.report.visible import escape_visible as escape

# Okabe-Ito based: distinguishable with the common colour-vision deficiencies.
PALETTE: dict[str, str] = {
    # epoch kinds
    "hw": "#0072B2",
    "ec": "#56B4E9",
    "sw": "#D55E00",
    "hybrid": "#E69F00",
    # the two sides of a diff
    "base": "#9A9A9A",
    "head": "#332288",
    # metric histories
    "activations": "#117733",
    "weights": "#882255",
    "lower_bound": "#444444",
    "ratio": "#AA4499",
    # time measured on a board (per epoch block)
    "board": "#009E73",
    # change kinds (diff.ChangeKind values)
    "regressed": "#C62828",
    "improved": "#2E7D32",
    "newly failing": "#8E0000",
    "fixed": "#1565C0",
    "changed": "#6A1B9A",
    "not comparable": "#6D6D6D",
    "unchanged": "#BDBDBD",
    # bug x version statuses
    "reproduced": "#C62828",
    "not-reproduced": "#2E7D32",
    "not-run": "#E0E0E0",
    "unknown": "#F9A825",
}

EPOCH_KINDS = ("hw", "ec", "sw", "hybrid")
EPOCH_LABELS = {"hw": "HW", "ec": "EC", "sw": "SW", "hybrid": "hybrid (??)"}
# What the tool's own "??" means, said wherever hybrid epochs are shown.
HYBRID_NOTE = f"hybrid (??): {HYBRID_TEXT}"
LOG_RATIO = 50.0  # a bar chart switches to a log axis when its largest value is this many
# times its smallest positive one: one big case must not turn every other bar into a sliver

_WIDTH = 760
_FONT = 'font-family="system-ui,sans-serif" font-size="12"'


@dataclass(frozen=True)
class Series:
    """One named series of values (None = not known, drawn as a gap)."""

    name: str
    values: Sequence[float | None]
    color: str  # a PALETTE key
    dashed: bool = False


@dataclass(frozen=True)
class Scale:
    """How values of one unit are shown: divided by ``factor`` and suffixed ``label``."""

    factor: float
    label: str


def scale_for(unit: str, peak: float) -> Scale:
    """Pick a readable display unit for values up to ``peak`` (bytes become KiB/MiB)."""
    if unit == "B":
        if peak >= 1024 * 1024:
            return Scale(1024 * 1024, "MiB")
        if peak >= 1024:
            return Scale(1024, "KiB")
        return Scale(1, "B")
    return Scale(1, unit)


def nice_ticks(peak: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``peak`` (steps of 1, 2 or 5 x 10^k)."""
    if not peak or peak <= 0 or math.isnan(peak) or math.isinf(peak):
        return [0.0, 1.0]
    raw = peak / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < peak - 1e-12 * peak:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def fmt_num(value: float) -> str:
    """A compact number for chart labels: integers with separators, else 4 digits."""
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:.4g}"


def _text_width(text: str) -> float:
    """Approximate width in pixels of ``text`` at the charts' 12 px font."""
    return 6.8 * len(text) + 4


def _legend(items: Sequence[tuple[str, str, bool]], y: float, x0: float = 10) -> list[str]:
    out = []
    x = x0
    for name, color, dashed in items:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        out.append(
            f'<rect x="{x:.0f}" y="{y - 9:.0f}" width="12" height="10" fill="{PALETTE[color]}"'
            f"{dash}/>"
            f'<text x="{x + 16:.0f}" y="{y:.0f}">{escape(name)}</text>'
        )
        x += 16 + 7 * len(name) + 18
    return out


def _axis_label(quantity: str, scale: Scale) -> str:
    if not scale.label or scale.label in quantity.split():
        return quantity
    return f"{quantity} ({scale.label})"


def _svg(title: str, height: float, body: list[str], css_class: str, width: float = _WIDTH) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" {_FONT}>'
        f"<title>{escape(title)}</title>"
    )
    return Markup(head + "".join(body) + "</svg>")


def _x_axis(
    left: float, right: float, top: float, bottom: float, ticks: list[float], scale: Scale
) -> list[str]:
    out = []
    span = ticks[-1] or 1.0
    for tick in ticks:
        x = left + (right - left) * tick / span
        out.append(
            f'<line x1="{x:.1f}" y1="{top:.0f}" x2="{x:.1f}" y2="{bottom:.0f}" stroke="#e3e3e3"/>'
            f'<text x="{x:.1f}" y="{bottom + 14:.0f}" text-anchor="middle">'
            f"{fmt_num(tick / scale.factor)}</text>"
        )
    return out


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str,
    quantity: str,
) -> Markup:
    """Horizontal grouped bars: one row per category, one bar per series.

    :param categories: row labels (untrusted text; escaped).
    :param unit: the values' unit (``"B"`` is shown as B/KiB/MiB).
    :param quantity: what the axis measures, e.g. ``"activations"``.
    """
    values = [v for s in series for v in s.values if v is not None and not math.isnan(v)]
    peak = max(values, default=0.0)
    scale = scale_for(unit, peak)
    positive = [v for v in values if v > 0]
    log = bool(positive) and peak / min(positive) >= LOG_RATIO
    if log:
        low_exp = math.floor(math.log10(min(positive) / scale.factor))
        high_exp = math.ceil(math.log10(peak / scale.factor))
        ticks = [10.0**e * scale.factor for e in range(low_exp, max(high_exp, low_exp + 1) + 1)]
    else:
        ticks = [t * scale.factor for t in nice_ticks(peak / scale.factor)]
    label_w = max((_text_width(c) for c in categories), default=60.0)
    left = max(120.0, label_w + 12)
    width = left + 560.0
    right, top = width - 40.0, 40.0
    bar_h, gap = 9.0, 8.0
    row_h = bar_h * max(len(series), 1) + gap
    bottom = top + row_h * len(categories)
    body = _legend([(s.name, s.color, s.dashed) for s in series], 16)

    def xfrac(value: float) -> float:
        if log:
            lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
            return (math.log10(max(value, ticks[0])) - lo) / ((hi - lo) or 1.0)
        return value / (ticks[-1] or 1.0)

    for tick in ticks:
        x = left + (right - left) * xfrac(tick)
        body.append(
            f'<line x1="{x:.1f}" y1="{top:.0f}" x2="{x:.1f}" y2="{bottom:.0f}" stroke="#e3e3e3"/>'
            f'<text x="{x:.1f}" y="{bottom + 14:.0f}" text-anchor="middle">'
            f"{fmt_num(tick / scale.factor)}</text>"
        )
    for row, category in enumerate(categories):
        y0 = top + row * row_h + gap / 2
        body.append(
            f'<text x="{left - 6:.0f}" y="{y0 + row_h / 2:.1f}" text-anchor="end">'
            f"<title>{escape(category)}</title>{escape(category)}</text>"
        )
        for k, s in enumerate(series):
            value = s.values[row] if row < len(s.values) else None
            y = y0 + k * bar_h
            if value is None or math.isnan(value):
                body.append(
                    f'<text x="{left + 3:.0f}" y="{y + bar_h - 1:.1f}" font-size="9" '
                    f'fill="#777">{escape(s.name)}: not known</text>'
                )
                continue
            bar = max((right - left) * xfrac(value), 0.5) if value > 0 else 0.5
            tip = f"{category} · {s.name}: {fmt_num(value)} {unit}".rstrip()
            body.append(
                f'<rect x="{left:.0f}" y="{y:.1f}" width="{bar:.1f}" height="{bar_h - 1:.0f}" '
                f'fill="{PALETTE[s.color]}"><title>{escape(tip)}</title></rect>'
            )
    axis = _axis_label(quantity, scale) + (" — log scale" if log else "")
    body.append(
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 32:.0f}" text-anchor="middle" '
        f'font-weight="bold">{escape(axis)}</text>'
    )
    return _svg(title, bottom + 42, body, "bars" + (" log" if log else ""), width=width)


def stacked_chart(
    title: str,
    rows: Sequence[tuple[str, str]],
    parts: Sequence[Series],
    *,
    unit: str,
    quantity: str,
) -> Markup:
    """Horizontal stacked bars: one bar per ``(group, label)`` row, one segment per part.

    Rows sharing a group (a case) are drawn together under the group's name; the label
    (a version) is written beside each bar.
    """
    columns = [_known(p.values) for p in parts]
    by_row = list(zip(*columns)) if columns else [() for _ in rows]
    totals = [sum(v for v in row if v is not None) for row in by_row]
    peak = max(totals, default=0.0)
    scale = scale_for(unit, peak)
    ticks = [t * scale.factor for t in nice_ticks(peak / scale.factor)]
    label_w = max((_text_width(label) for _g, label in rows), default=60.0)
    left = max(90.0, label_w + 12)
    width = max(_WIDTH, left + 560.0, max((_text_width(g) + 16 for g, _l in rows), default=0.0))
    right, top = width - 30.0, 40.0
    bar_h, head_h = 12.0, 18.0
    body = _legend([(p.name, p.color, False) for p in parts], 16)
    # Each group (a case) gets a heading line, then one bar per label (a version).
    y = top
    heads: list[tuple[float, str]] = []
    bars: list[tuple[float, int]] = []
    previous: str | None = None
    for index, (group, _label) in enumerate(rows):
        if group != previous:
            heads.append((y, group))
            y += head_h
            previous = group
        bars.append((y, index))
        y += bar_h + 2
    bottom = y + 2
    body += _x_axis(left, right, top, bottom, ticks, scale)
    span = ticks[-1] or 1.0
    for y, group in heads:
        name = _escaped(group)
        body.append(f'<text x="8" y="{y + 13:.1f}" font-weight="bold"><title>{name}</title>{name}</text>')
    label_x = f"{left - 6:.0f}"
    unknown_x = f"{left + 3:.0f}"
    marks = [f'" height="12" fill="{PALETTE[p.color]}"><title>' for p in parts]
    names = [f" · {_escaped(p.name)}: " for p in parts]
    suffix = _escaped(f" {unit}") + "</title></rect>"
    length = right - left
    for y, index in bars:
        group, label = rows[index]
        text = _escaped(label)
        where = f"{_escaped(group)} · {text}"
        body.append(
            f'<text x="{label_x}" y="{y + bar_h - 2:.1f}" text-anchor="end" fill="#555">{text}</text>'
        )
        x = left
        known = False
        bar_y = f'" y="{y:.1f}" width="'
        for k, value in enumerate(by_row[index]):
            if value is None:
                continue
            known = True
            if value <= 0:
                continue
            size = length * value / span
            number = (  # fmt_num, inlined: this runs for every segment of every case page
                f"{int(value):,}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
            )
            body.append(f'<rect x="{x:.1f}{bar_y}{size:.1f}{marks[k]}{where}{names[k]}{number}{suffix}')
            x += size
        if not known:
            body.append(
                f'<text x="{unknown_x}" y="{y + bar_h - 2:.1f}" font-size="9" fill="#777">'
                "not known</text>"
            )
    axis = _axis_label(quantity, scale)
    body.append(
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 32:.0f}" text-anchor="middle" '
        f'font-weight="bold">{escape(axis)}</text>'
    )
    if any(p.color == "hybrid" for p in parts):
        body.append(
            f'<text x="8" y="{bottom + 50:.0f}" fill="#555">{escape(HYBRID_NOTE)}</text>'
        )
    return _svg(title, bottom + 58, body, "stacked", width=width)


def line_chart(
    title: str,
    xlabels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str,
    quantity: str,
    zero_based: bool = True,
) -> Markup:
    """Lines over categorical x values (toolchain versions); None values leave gaps."""
    columns = [_known(s.values) for s in series]
    values = [v for c in columns for v in c if v is not None]
    peak = max(values, default=0.0)
    low = 0.0 if zero_based or not values else min(values)
    scale = scale_for(unit, peak)
    ticks = [t * scale.factor for t in nice_ticks(peak / scale.factor)]
    if not zero_based and values:
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        base = math.floor(low / step) * step
        ticks = [t for t in ticks if t >= base] or ticks
        low = min(base, ticks[0])
    top, bottom = _LINE_TOP, _LINE_BOTTOM
    span = (ticks[-1] - low) or 1.0
    body = _legend([(s.name, s.color, s.dashed) for s in series], 16)
    body.append(_y_axis(tuple(ticks), low, span, scale))
    xs, labels, axis_labels = _line_frame(tuple(xlabels))
    body.append(axis_labels)
    suffix = _escaped(f" {unit}".rstrip())
    height = bottom - top
    for s, column in zip(series, columns):
        color = PALETTE[s.color]
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        mark = f'" r="3" fill="{color}"><title>{_escaped(s.name)} · '
        segment: list[str] = []
        points: list[str] = []
        for i, value in enumerate(column):
            if value is None:
                if len(segment) > 1:
                    points.insert(0, _polyline(segment, color, dash))
                segment = []
                continue
            x, y = xs[i], f"{bottom - height * (value - low) / span:.1f}"
            segment.append(f"{x},{y}")
            number = (
                f"{int(value):,}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
            )  # fmt_num, inlined: this runs for every point of every case page
            points.append(
                f'<circle cx="{x}" cy="{y}{mark}{labels[i]}: {number}{suffix}</title></circle>'
            )
        if len(segment) > 1:
            points.insert(0, _polyline(segment, color, dash))
        body += points
    body.append(_line_axis_titles(_axis_label(quantity, scale)))
    return _svg(title, bottom + 44, body, "lines")


_LINE_LEFT, _LINE_RIGHT, _LINE_TOP, _LINE_BOTTOM = 80.0, _WIDTH - 20.0, 36.0, 250.0


def _known(values: Sequence[float | None]) -> list[float | None]:
    """``values`` as floats, None where unknown (None or NaN)."""
    isnan = math.isnan
    return [None if v is None or isnan(v) else float(v) for v in values]


@lru_cache(maxsize=4096)
def _escaped(text: str) -> str:
    """Escaped text, cached: the same names and versions recur on every chart."""
    return str(escape(text))


@lru_cache(maxsize=64)
def _line_frame(xlabels: tuple[str, ...]) -> tuple[list[str], list[str], str]:
    """A line chart's x positions (formatted), escaped labels and x-axis labels: the same
    for every chart over the same versions."""
    left, right, bottom = _LINE_LEFT, _LINE_RIGHT, _LINE_BOTTOM
    count = max(len(xlabels), 1)
    step_x = (right - left) / max(count - 1, 1)
    xs = [f"{left + (step_x * i if count > 1 else (right - left) / 2):.1f}" for i in range(len(xlabels))]
    labels = [_escaped(label) for label in xlabels]
    every = max(1, math.ceil(count / 16))  # keep version labels from overlapping
    shown = "".join(
        f'<text x="{xs[i]}" y="{bottom + 16:.0f}" text-anchor="middle">{labels[i]}</text>'
        for i in range(len(xlabels))
        if (count - 1 - i) % every == 0  # counted from the newest, which is always shown
    )
    return xs, labels, shown


@lru_cache(maxsize=256)
def _y_axis(ticks: tuple[float, ...], low: float, span: float, scale: Scale) -> str:
    left, right, top, bottom = _LINE_LEFT, _LINE_RIGHT, _LINE_TOP, _LINE_BOTTOM
    out = []
    for tick in ticks:
        if tick < low:
            continue
        y = bottom - (bottom - top) * (tick - low) / span
        out.append(
            f'<line x1="{left:.0f}" y1="{y:.1f}" x2="{right:.0f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6:.0f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{fmt_num(tick / scale.factor)}</text>"
        )
    return "".join(out)


@lru_cache(maxsize=64)
def _line_axis_titles(axis: str) -> str:
    left, right, top, bottom = _LINE_LEFT, _LINE_RIGHT, _LINE_TOP, _LINE_BOTTOM
    return (
        f'<text x="14" y="{(top + bottom) / 2:.0f}" text-anchor="middle" font-weight="bold" '
        f'transform="rotate(-90 14 {(top + bottom) / 2:.0f})">{escape(axis)}</text>'
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 34:.0f}" text-anchor="middle" '
        'font-weight="bold">toolchain version</text>'
    )


def _polyline(points: list[str], color: str, dash: str) -> str:
    return (
        f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" '
        f'stroke-width="2"{dash}/>'
    )

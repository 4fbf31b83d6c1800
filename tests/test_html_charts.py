"""Inline SVG charts: scales, units, gaps, escaping and shared colours."""

from __future__ import annotations

import re

from pytest_stedge.report.charts import (
    PALETTE,
    Series,
    bar_chart,
    line_chart,
    nice_ticks,
    scale_for,
    stacked_chart,
)

SCRIPT = "<script>alert(1)</script>"


def test_ticks_are_round_and_cover_the_peak() -> None:
    assert nice_ticks(245_760) == [0, 50_000, 100_000, 150_000, 200_000, 250_000]
    assert nice_ticks(56) == [0, 20, 40, 60]
    assert nice_ticks(1.2288) == [0, 0.5, 1, 1.5]
    assert nice_ticks(0) == [0, 1]


def test_bytes_are_scaled_to_kib_and_mib() -> None:
    assert scale_for("B", 900).label == "B"
    assert scale_for("B", 245_760).label == "KiB"
    assert scale_for("B", 11_064_337).label == "MiB"
    assert scale_for("epochs", 56).label == "epochs"


def test_bar_chart_draws_one_bar_per_known_value_with_units() -> None:
    svg = bar_chart(
        "Activation RAM",
        ["a", "b"],
        [Series("3.0.0", [245_760, None], "base"), Series("4.0.1", [270_336, 1024], "head")],
        unit="B",
        quantity="activations",
    )
    assert svg.count("<rect") == 3 + 2  # three bars and two legend swatches
    assert "3.0.0: not known" in svg
    assert "activations (KiB)" in svg
    assert "a · 4.0.1: 270,336 B" in svg
    assert svg.count(f'fill="{PALETTE["head"]}"') == 3  # legend + 2 bars


def test_stacked_chart_segments_add_up_to_the_total() -> None:
    svg = stacked_chart(
        "Epochs",
        [("case", "2.2.0"), ("case", "3.0.0")],
        [Series("HW", [68, 55], "hw"), Series("SW", [26, 1], "sw"), Series("hybrid", [1, 0], "hybrid")],
        unit="epochs",
        quantity="number of epochs",
    )
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="12"', svg)]
    assert len(widths) == 5  # zero-sized segments are not drawn
    first, second = sum(widths[:3]), sum(widths[3:])
    assert abs(first / second - 95 / 56) < 0.01
    assert svg.count("<title>case</title>case</text>") == 1  # one heading per group
    assert "number of epochs" in svg and "(epochs)" not in svg


def test_stacked_chart_is_as_wide_as_its_bars() -> None:
    # the chart once took the width of its last segment (13 px) and clipped every bar
    svg = stacked_chart(
        "Epochs", [("a-case", "2.2.0"), ("a-case", "3.0.0")],
        [Series("HW", [68, 55], "hw"), Series("SW", [26, 1], "sw")],
        unit="epochs", quantity="number of epochs",
    )
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    ends = [float(x) + float(w) for x, w in re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)]
    assert width >= 760 and max(ends) <= width


def test_line_chart_leaves_gaps_for_missing_versions() -> None:
    svg = line_chart(
        "history",
        ["2.1.0", "2.2.0", "3.0.0", "4.0.1"],
        [Series("weights", [1.0, 2.0, None, 4.0], "weights")],
        unit="B",
        quantity="weights",
    )
    assert svg.count("<polyline") == 1  # 2.1.0-2.2.0; 4.0.1 stands alone
    assert svg.count("<circle") == 3
    assert "toolchain version" in svg


def test_untrusted_labels_are_escaped() -> None:
    quote = '" onmouseover="x'
    for svg in (
        bar_chart("t", [SCRIPT, quote], [Series(quote, [1, 2], "base")], unit="B", quantity=SCRIPT),
        stacked_chart("t", [(SCRIPT, quote)], [Series("HW", [1], "hw")], unit="epochs", quantity="n"),
        line_chart(SCRIPT, [quote], [Series(SCRIPT, [1.0], "ratio")], unit="x", quantity="r"),
    ):
        assert SCRIPT not in svg and quote not in svg
        assert "&lt;script&gt;" in svg

"""[expect] bounds at their edges: min floors, rel/abs tolerances, NaN and infinity, the table.

Every figure is computed by hand in the comment beside it; the boundary values are exact
binary fractions, so "at the bound" means exactly at it.
"""

from __future__ import annotations

import math

import pytest

from pytest_stedge.case.model import Bound
from pytest_stedge.verdict.expect import Miss, check, fmt_value, format_misses, summarize_miss

INF = float("inf")
NAN = float("nan")


def _missed(bound: Bound, value: float | None) -> bool:
    metrics = {} if value is None else {bound.metric: value}
    return [m.metric for m in check([bound], metrics)] == [bound.metric]


# -- min: the accuracy floor users rely on (val_cos >= 0.99) ------------------------------


@pytest.mark.parametrize(
    ("value", "missed"),
    [(0.98, True), (0.989999, True), (0.99, False), (0.995, False), (1.0, False)],
)
def test_min_bound_is_a_floor_that_holds_at_equality(value: float, missed: bool) -> None:
    assert _missed(Bound("val_cos", min=0.99), value) is missed


def test_min_miss_row_reads_like_the_floor_it_missed() -> None:
    (miss,) = check([Bound("val_cos", min=0.99)], {"val_cos": 0.95})
    assert miss.expected_text() == ">= 0.99"
    # 0.95 - 0.99 = -0.04, and -0.04 / 0.99 = -4.04 %
    assert miss.difference_text() == "-0.04 (-4.0%)"


def test_min_and_max_together_name_the_bound_that_was_crossed() -> None:
    bound = Bound("activations_bytes", min=1_000, max=2_000)
    assert check([bound], {"activations_bytes": 1_500}) == []
    (low,) = check([bound], {"activations_bytes": 750})
    (high,) = check([bound], {"activations_bytes": 2_500})
    assert low.expected_text() == high.expected_text() == ">= 1,000 B and <= 2,000 B"
    assert low.difference_text() == "-250 B (-25.0%)"  # from the min
    assert high.difference_text() == "+500 B (+25.0%)"  # from the max


# -- tolerances near a bound ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("bound", "value", "missed"),
    [
        # min 200 with rel 0.25: slack 0.25 * 200 = 50, floor 150
        (Bound("macc", min=200, rel=0.25), 150, False),
        (Bound("macc", min=200, rel=0.25), 149.5, True),
        # max 200 with rel 0.25: ceiling 250
        (Bound("macc", max=200, rel=0.25), 250, False),
        (Bound("macc", max=200, rel=0.25), 250.5, True),
        # abs adds to rel: max 1000, rel 0.5 (500) + abs 24 -> ceiling 1524
        (Bound("macc", max=1000, rel=0.5, abs=24), 1524, False),
        (Bound("macc", max=1000, rel=0.5, abs=24), 1525, True),
        # abs alone on a floor: min 100, abs 5 -> floor 95
        (Bound("macc", min=100, abs=5), 95, False),
        (Bound("macc", min=100, abs=5), 94.5, True),
        # a negative bound takes its tolerance from |bound|: min -200 rel 0.25 -> floor -250
        (Bound("val_snr", min=-200, rel=0.25), -250, False),
        (Bound("val_snr", min=-200, rel=0.25), -250.5, True),
        (Bound("val_snr", max=-200, rel=0.25), -150, False),
        (Bound("val_snr", max=-200, rel=0.25), -149.5, True),
        # exact: numpy.isclose, |v - e| <= abs + rel * |e|: 64 +- (2 + 0.125 * 64 = 10)
        (Bound("epochs_total", exact=64, rel=0.125, abs=2), 74, False),
        (Bound("epochs_total", exact=64, rel=0.125, abs=2), 54, False),
        (Bound("epochs_total", exact=64, rel=0.125, abs=2), 74.5, True),
        (Bound("epochs_total", exact=64, rel=0.125, abs=2), 53.5, True),
        (Bound("epochs_total", exact=-64, rel=0.125), -72, False),
        (Bound("epochs_total", exact=-64, rel=0.125), -72.5, True),
        # no tolerance: exact is exact
        (Bound("epochs_sw", exact=0), 0, False),
        (Bound("epochs_sw", exact=0), 1, True),
    ],
)
def test_tolerances_widen_a_bound_by_exactly_abs_plus_rel_times_the_bound(
    bound: Bound, value: float, missed: bool
) -> None:
    assert _missed(bound, value) is missed


def test_tolerance_is_shown_with_the_expectation() -> None:
    assert Miss(Bound("weights_bytes", exact=3, rel=0.01), 9).expected_text() == "== 3 B ± 1%"
    assert Miss(Bound("val_cos", min=0.99, abs=0.005), 0.9).expected_text() == ">= 0.99 ± 0.005"
    both = Miss(Bound("activations_bytes", max=1024, rel=0.1, abs=64), 9999)
    assert both.expected_text() == "<= 1,024 B ± 10% + 64 B"


# -- NaN and infinity -------------------------------------------------------------------------


def test_nan_never_meets_a_bound_and_says_so() -> None:
    for bound in (Bound("val_cos", min=0.5), Bound("val_cos", max=2), Bound("val_cos", exact=1)):
        (miss,) = check([bound], {"val_cos": NAN})
        assert miss.difference_text() == "measured NaN"
    text = format_misses("t", [Miss(Bound("val_cos", min=0.5), NAN)])
    assert "  val_cos  >= 0.5    nan       measured NaN" in text.splitlines()


def test_infinite_snr_of_identical_outputs_meets_a_floor_and_fails_a_ceiling() -> None:
    # identical outputs: the tool prints snr=inf (real 4.0.0 Developer Cloud logs)
    assert check([Bound("val_snr", min=40)], {"val_snr": INF}) == []
    (miss,) = check([Bound("val_snr", max=80)], {"val_snr": INF})
    assert miss.difference_text() == "+inf (+inf%)"
    (exact,) = check([Bound("val_snr", exact=60, rel=0.5)], {"val_snr": INF})
    assert exact.difference_text() == "+inf (+inf%)"
    (low,) = check([Bound("val_snr", min=0)], {"val_snr": -INF})
    assert low.difference_text() == "-inf"  # no percentage of a zero bound
    text = format_misses("cnn validate-host[4.0.1]", [miss])
    assert text.splitlines()[-1] == "  val_snr  <= 80     inf       +inf (+inf%)"
    assert summarize_miss(miss) == "val_snr: expected <= 80, measured inf"


def test_a_missing_metric_is_a_miss_that_says_not_measured() -> None:
    (miss,) = check([Bound("val_cos", min=0.99)], {"val_snr": 30.0})
    assert miss.measured is None
    assert miss.difference_text() == "not measured"
    assert summarize_miss(miss) == "val_cos: expected >= 0.99, measured not measured"


# -- the values and the table -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value", "text"),
    [
        ("activations_bytes", 2_700_000, "2,700,000 B"),
        ("activations_bytes", 0, "0 B"),
        ("activations_bytes", -1_024, "-1,024 B"),
        ("epochs_sw", 3, "3"),
        ("val_cos", 0.9974531234, "0.997453"),
        ("val_rmse", 0.000166509, "0.000166509"),
        ("macc", 1e15, "1e+15"),  # too large for a grouped integer
        ("macc", 999_999_999_999_999, "999,999,999,999,999"),
        ("val_snr", INF, "inf"),
        ("val_snr", -INF, "-inf"),
        ("val_cos", NAN, "nan"),
        ("my_hook_metric", 12.5, "12.5"),  # a name the table does not know
    ],
)
def test_fmt_value(metric: str, value: float, text: str) -> None:
    assert fmt_value(metric, value) == text


def test_a_bound_met_exactly_at_zero_difference_prints_plus_zero() -> None:
    # a Miss can carry any value; the sign of a zero difference is "+"
    assert Miss(Bound("epochs_sw", exact=2), 2).difference_text() == "+0 (+0.0%)"
    assert Miss(Bound("epochs_sw", exact=0), 0).difference_text() == "+0"
    # neither bound crossed (a min-only miss reported at its bound): difference from the min
    assert Miss(Bound("macc", min=10), 10).difference_text() == "+0 (+0.0%)"
    # max only and below it: measured is its own reference
    assert Miss(Bound("macc", max=10), 4).difference_text() == "+0 (+0.0%)"


def test_the_failure_table_lists_every_miss_aligned() -> None:
    misses = check(
        [
            Bound("activations_bytes", max=10),
            Bound("weights_bytes", exact=3, rel=0.01),
            Bound("val_cos", min=0.99),
            Bound("epochs_sw", max=0),
        ],
        {"activations_bytes": 4_106, "weights_bytes": 3, "val_cos": 0.5, "epochs_sw": 2},
    )
    text = format_misses("cnn generate[4.0.1]", misses, hint="To accept, rerun.")
    assert text.splitlines() == [
        "cnn generate[4.0.1]: 3 metrics missed their expectations.",
        "To accept, rerun.",
        "",
        "  metric             expected  measured  difference",
        # 4,106 - 10 = 4,096, and 4,096 / 10 = 40,960 %
        "  activations_bytes  <= 10 B   4,106 B   +4,096 B (+40960.0%)",
        # 0.5 - 0.99 = -0.49, -0.49 / 0.99 = -49.5 %
        "  val_cos            >= 0.99   0.5       -0.49 (-49.5%)",
        "  epochs_sw          <= 0      2         +2",
    ]


def test_one_miss_is_singular_and_no_hint_means_no_hint_line() -> None:
    text = format_misses("t", [Miss(Bound("epochs_sw", max=0), 1)])
    assert text.splitlines()[:2] == ["t: 1 metric missed their expectations.", ""]


def test_summary_line_of_a_miss() -> None:
    miss = Miss(Bound("activations_bytes", max=10), 20)
    assert summarize_miss(miss) == "activations_bytes: expected <= 10 B, measured 20 B"


def test_check_keeps_the_order_of_the_bounds_and_passes_what_holds() -> None:
    bounds = [Bound("epochs_sw", max=0), Bound("macc", min=1), Bound("epochs_hybrid", max=0)]
    misses = check(bounds, {"epochs_sw": 1, "macc": 5, "epochs_hybrid": 3})
    assert [(m.metric, m.measured) for m in misses] == [("epochs_sw", 1), ("epochs_hybrid", 3)]
    assert all(math.isfinite(m.measured or 0) for m in misses)

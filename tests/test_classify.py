"""The one classification rule at its edges, on figures worked out by hand: the band's
boundary, float noise, an infinity, the rounding of printed figures, expectations flipping,
and a metric measured on one side only."""

from __future__ import annotations

import math

import pytest

from pytest_stedge.verdict.classify import (
    CHANGED,
    FIXED,
    HIGHER,
    IMPROVED,
    LOWER,
    MET,
    MISSED,
    NEWLY_FAILING,
    NONE,
    NOT_COMPARABLE,
    REGRESSED,
    UNCHANGED,
    classify_arrays,
)
from pytest_stedge.verdict.compare import KIND_ORDER, ChangeKind


def _kind(direction: int, old: float, new: float, allowed: float = 0.0, *, comparable: bool = True,
          old_ok: int = -1, new_ok: int = -1, slack: float = 0.0) -> int:
    kinds, _ = classify_arrays(direction, [old], [new], allowed=allowed, comparable=comparable,
                               old_ok=old_ok, new_ok=new_ok, slack=slack)
    return int(kinds[0])


def test_codes_are_the_listing_order_of_the_kinds() -> None:
    assert [KIND_ORDER[c] for c in (REGRESSED, NEWLY_FAILING, IMPROVED, FIXED, CHANGED,
                                    NOT_COMPARABLE, UNCHANGED)] == [
        ChangeKind.REGRESSED, ChangeKind.NEWLY_FAILING, ChangeKind.IMPROVED, ChangeKind.FIXED,
        ChangeKind.CHANGED, ChangeKind.NOT_COMPARABLE, ChangeKind.UNCHANGED]


def test_a_move_exactly_at_the_band_is_no_change() -> None:
    # "+3%" of 1,000 B allows 30 B: 1,030 is inside, 1,031 beyond
    assert _kind(LOWER, 1000, 1030, 30) == UNCHANGED
    assert _kind(LOWER, 1000, 1031, 30) == REGRESSED
    assert _kind(LOWER, 1000, 969, 30) == IMPROVED
    assert _kind(HIGHER, 0.99, 0.5, 0.001) == REGRESSED  # cos down is worse
    assert _kind(HIGHER, 0.5, 0.99, 0.001) == IMPROVED


def test_float_noise_relative_to_the_figure_is_no_change() -> None:
    # 1e-12 of the figure: a 1e6 B figure printed with more digits moves 1e-7 B at most
    assert _kind(LOWER, 1e6, 1e6 + 30 + 1e-7, 30) == UNCHANGED
    assert _kind(LOWER, 1e6, 1e6 + 30 + 1e-5, 30) == REGRESSED
    # below 1 the noise floor stays 1e-12 (absolute), not 1e-12 of the figure
    assert _kind(LOWER, 0.5, 0.5 + 3e-12, 0.0) == REGRESSED
    assert _kind(LOWER, 0.5, 0.5 + 5e-13, 0.0) == UNCHANGED
    assert _kind(LOWER, 0.5, 0.5 + 1.5e-12, 0.0) == REGRESSED  # the floor is 1e-12, not 2e-12


def test_an_infinity_moves_whatever_the_band() -> None:
    assert _kind(HIGHER, math.inf, 57.9, 1.0) == REGRESSED  # snr inf (identical) -> finite
    assert _kind(HIGHER, math.inf, math.inf, 1.0) == UNCHANGED


def test_a_move_inside_the_rounding_of_printed_figures_is_no_change() -> None:
    # two reports printed to +-150 B each: a 300 B move may be rounding, 301 B may not
    assert _kind(LOWER, 1000, 1300, slack=300) == UNCHANGED
    assert _kind(LOWER, 1000, 1301, slack=300) == REGRESSED
    assert _kind(LOWER, 1000, 700, slack=300) == UNCHANGED
    assert _kind(LOWER, 1.0, 1.4, slack=0.5) == UNCHANGED  # a slack below one unit counts
    assert _kind(LOWER, 1000, 1005, slack=0.0) == REGRESSED  # exact figures: no slack
    _kinds, rounded = classify_arrays(LOWER, [1000, 1000], [1300, 1301], allowed=0.0,
                                      comparable=True, slack=[300, 300])
    assert rounded.tolist() == [True, False]


def test_expectations_flipping_come_before_the_band() -> None:
    assert _kind(LOWER, 10, 11, 5, old_ok=MET, new_ok=MISSED) == NEWLY_FAILING
    assert _kind(LOWER, 11, 10, 5, old_ok=MISSED, new_ok=MET) == FIXED
    assert _kind(LOWER, 10, 11, 5, old_ok=MET, new_ok=MET) == UNCHANGED
    # an expectation in the head alone (a bound added since) flips nothing
    assert _kind(LOWER, 10, 11, 5, new_ok=MISSED) == UNCHANGED
    assert _kind(LOWER, 11, 10, 5, new_ok=MET) == UNCHANGED


def test_identity_and_measurement_come_first() -> None:
    assert _kind(LOWER, 1000, 9000, comparable=False) == NOT_COMPARABLE
    assert _kind(LOWER, math.nan, 9000) == NOT_COMPARABLE  # not measured in base
    assert _kind(LOWER, 1000, math.nan) == NOT_COMPARABLE
    assert _kind(NONE, 55, 0) == CHANGED  # epochs_hw: no better direction
    assert _kind(NONE, 55, 55) == UNCHANGED
    assert _kind(NONE, 55, 0, comparable=False) == NOT_COMPARABLE


@pytest.mark.parametrize("size", [1, 1000])
def test_arrays_classify_each_change_on_its_own(size: int) -> None:
    old = [1000.0] * size
    new = [1031.0] * size
    kinds, _ = classify_arrays([LOWER] * size, old, new, allowed=[30.0] * size, comparable=True)
    assert set(kinds.tolist()) == {REGRESSED}


def test_a_metric_without_an_expectation_in_the_base_never_newly_fails() -> None:
    """compare_results passes "no expectation" for a metric the base had no bound on: a
    bound added since cannot make the change newly failing."""
    from pytest_stedge.verdict.compare import compare_results

    (change,) = compare_results("c", "generate", {"epochs_sw": 1.0}, {"epochs_sw": 1.0},
                                comparable=True, bands={}, default_band="0",
                                base_ok={}, head_ok={"epochs_sw": False})
    assert change.kind is ChangeKind.UNCHANGED

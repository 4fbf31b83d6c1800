"""Change kinds, bands and directions of the version diff, and the diff from a store."""

from __future__ import annotations

import pytest

from pytest_stedge.errors import StedgeError, StoreError
from pytest_stedge.report.table import format_table
from pytest_stedge.store.database import ItemRow, Store
from pytest_stedge.verdict.bands import Band, BandError, parse_band
from pytest_stedge.verdict.compare import ChangeKind, DiffReport, classify, compare_results
from pytest_stedge.verdict.store_diff import diff_store

EXACT = parse_band("0")


@pytest.mark.parametrize(
    ("text", "value", "relative"),
    [
        ("+3%", 3.0, True),
        ("5%", 5.0, True),
        ("+1024", 1024.0, False),
        ("0", 0.0, False),
        ("+0.5%", 0.5, True),
        (" +10 % ", 10.0, True),
    ],
)
def test_parse_band_accepts_benchmark_style(text: str, value: float, relative: bool) -> None:
    band = parse_band(text)
    assert (band.value, band.relative) == (value, relative)


@pytest.mark.parametrize("text", ["-3%", "3%%", "abc", "", "+", "%", "1k", "nan", "3 percent"])
def test_parse_band_rejects_naming_value_and_forms(text: str) -> None:
    with pytest.raises(BandError) as info:
        parse_band(text)
    assert repr(text) in str(info.value)
    assert "'+3%'" in str(info.value) and "'+1024'" in str(info.value)


def test_band_allowance_relative_and_absolute() -> None:
    assert parse_band("+3%").allowed(1000) == pytest.approx(30)
    assert parse_band("+1024").allowed(10) == 1024
    assert Band(3, True).allowed(-1000) == pytest.approx(30)


def test_lower_is_better_regression_and_improvement() -> None:
    band = parse_band("+3%")
    assert classify("activations_bytes", 1000, 1100, band=band, comparable=True) is (
        ChangeKind.REGRESSED
    )
    assert classify("activations_bytes", 1000, 900, band=band, comparable=True) is (
        ChangeKind.IMPROVED
    )
    assert classify("activations_bytes", 1000, 1029, band=band, comparable=True) is (
        ChangeKind.UNCHANGED
    )
    assert classify("activations_bytes", 1000, 971, band=band, comparable=True) is (
        ChangeKind.UNCHANGED
    )


def test_higher_is_better_direction_is_respected() -> None:
    band = parse_band("+0.01")
    assert classify("val_cos", 0.99, 0.5, band=band, comparable=True) is ChangeKind.REGRESSED
    assert classify("val_cos", 0.5, 0.99, band=band, comparable=True) is ChangeKind.IMPROVED
    assert classify("val_cos", 0.99, 0.985, band=band, comparable=True) is ChangeKind.UNCHANGED


def test_exact_band_counts_any_change_but_not_float_noise() -> None:
    assert classify("epochs_sw", 1, 2, band=EXACT, comparable=True) is ChangeKind.REGRESSED
    assert classify("epochs_sw", 2, 1, band=EXACT, comparable=True) is ChangeKind.IMPROVED
    assert classify("epochs_sw", 1, 1, band=EXACT, comparable=True) is ChangeKind.UNCHANGED
    assert classify("val_cos", 0.1 + 0.2, 0.3, band=EXACT, comparable=True) is (
        ChangeKind.UNCHANGED
    )


def test_absolute_band_on_counts() -> None:
    band = parse_band("+1")
    assert classify("epochs_total", 10, 11, band=band, comparable=True) is ChangeKind.UNCHANGED
    assert classify("epochs_total", 10, 12, band=band, comparable=True) is ChangeKind.REGRESSED


def test_relative_band_from_zero_counts_any_change() -> None:
    band = parse_band("+50%")
    assert classify("epochs_sw", 0, 1, band=band, comparable=True) is ChangeKind.REGRESSED


def test_not_comparable_is_never_a_regression() -> None:
    kind = classify("activations_bytes", 1000, 9000, band=EXACT, comparable=False)
    assert kind is ChangeKind.NOT_COMPARABLE
    assert classify("activations_bytes", None, 9000, band=EXACT, comparable=True) is (
        ChangeKind.NOT_COMPARABLE
    )
    assert classify("activations_bytes", 10, float("nan"), band=EXACT, comparable=True) is (
        ChangeKind.NOT_COMPARABLE
    )


def test_expectation_flip_wins_over_band() -> None:
    # a small change that crosses the case's bound is newly failing even inside the band
    band = parse_band("+10%")
    kind = classify(
        "activations_bytes", 1000, 1001, band=band, comparable=True, old_ok=True, new_ok=False
    )
    assert kind is ChangeKind.NEWLY_FAILING
    kind = classify(
        "activations_bytes", 1001, 1000, band=band, comparable=True, old_ok=False, new_ok=True
    )
    assert kind is ChangeKind.FIXED
    # still failing on both sides: the band decides
    kind = classify(
        "activations_bytes", 1000, 2000, band=band, comparable=True, old_ok=False, new_ok=False
    )
    assert kind is ChangeKind.REGRESSED


def test_the_hw_ec_split_is_listed_as_changed_and_other_undirected_metrics_are_not() -> None:
    # real N6 pair: the epoch controller turns HW epochs into EC ones, the total stays
    assert classify("epochs_hw", 56, 40, band=EXACT, comparable=True) is ChangeKind.CHANGED
    assert classify("epochs_ec", 0, 16, band=EXACT, comparable=True) is ChangeKind.CHANGED
    assert classify("epochs_ec", 16, 16, band=EXACT, comparable=True) is ChangeKind.UNCHANGED
    assert classify("epochs_hw", 56, 40, band=EXACT, comparable=False) is (
        ChangeKind.NOT_COMPARABLE
    )
    with pytest.raises(StedgeError, match="activations_lower_bound_bytes.*not classified"):
        classify("activations_lower_bound_bytes", 1, 2, band=EXACT, comparable=True)
    changes = compare_results(
        "c",
        "generate",
        {"epochs_hw": 56, "epochs_ec": 0, "epochs_sw": 1, "activations_lower_bound_bytes": 9},
        {"epochs_hw": 40, "epochs_ec": 16, "epochs_sw": 1, "activations_lower_bound_bytes": 9},
        comparable=True,
        bands={},
        default_band="0",
    )
    assert [(c.metric, c.kind) for c in changes] == [
        ("epochs_ec", ChangeKind.CHANGED),
        ("epochs_hw", ChangeKind.CHANGED),
        ("epochs_sw", ChangeKind.UNCHANGED),
    ]
    report = DiffReport("3.0.0", "4.0.1", changes)
    assert not report.regressed()
    assert "  epochs_hw   56   40  -16 (-28.6%)  changed  0" in format_table(report).splitlines()


def test_compare_results_uses_case_bands_then_default() -> None:
    changes = compare_results(
        "c",
        "generate",
        {"activations_bytes": 1000, "weights_bytes": 1000},
        {"activations_bytes": 1050, "weights_bytes": 1050},
        comparable=True,
        bands={"activations_bytes": "+10%"},
        default_band="+1%",
    )
    kinds = {c.metric: c.kind for c in changes}
    assert kinds == {
        "activations_bytes": ChangeKind.UNCHANGED,
        "weights_bytes": ChangeKind.REGRESSED,
    }
    act = next(c for c in changes if c.metric == "activations_bytes")
    assert (act.delta, act.delta_pct, act.band, act.unit) == (50, 5.0, "+10%", "B")


def test_missing_metric_on_one_side_is_not_comparable_with_reason() -> None:
    (change,) = compare_results(
        "c", "generate", {"epochs_sw": 1}, {}, comparable=True, bands={}, default_band="0"
    )
    assert change.kind is ChangeKind.NOT_COMPARABLE
    assert "head" in change.note


def test_report_orders_regressions_first_and_counts() -> None:
    changes = compare_results(
        "a",
        "generate",
        {"activations_bytes": 100, "epochs_sw": 2, "weights_bytes": 5, "macc": 7},
        {"activations_bytes": 90, "epochs_sw": 3, "weights_bytes": 5},
        comparable=True,
        bands={},
        default_band="0",
    )
    report = DiffReport("1.0", "2.0", changes)
    assert [c.kind for c in report.ordered()] == [
        ChangeKind.REGRESSED,
        ChangeKind.IMPROVED,
        ChangeKind.NOT_COMPARABLE,
        ChangeKind.UNCHANGED,
    ]
    assert report.regressed()
    assert report.counts()["regressed"] == 1 and report.counts()["fixed"] == 0
    doc = report.to_json()
    assert doc["changes"][0]["kind"] == "regressed" and doc["regressed"] is True


def test_newly_failing_counts_as_regressed_improved_does_not() -> None:
    report = DiffReport(
        "1",
        "2",
        compare_results(
            "a",
            "generate",
            {"epochs_sw": 1},
            {"epochs_sw": 1},
            comparable=True,
            bands={},
            default_band="0",
            base_ok={"epochs_sw": True},
            head_ok={"epochs_sw": False},
        ),
    )
    assert report.regressed()
    report = DiffReport(
        "1",
        "2",
        compare_results(
            "a",
            "generate",
            {"epochs_sw": 2},
            {"epochs_sw": 1},
            comparable=True,
            bands={},
            default_band="0",
        ),
    )
    assert not report.regressed()


# -- from the store ----------------------------------------------------------------------


def _row(
    case: str, version: str, metrics: dict[str, float], *, sha: str = "m1", stage: str = "generate"
) -> ItemRow:
    return ItemRow(
        nodeid=f"corpus/{case}::{stage}[{version}]",
        case_name=case,
        stage=stage,
        version=version,
        outcome="passed",
        model_sha256=sha,
        options_hash="o1",
        metrics=metrics,
    )


@pytest.fixture
def store() -> Store:
    s = Store.open(":memory:")
    run = s.begin_run(argv=["pytest"], versions=["3.0.0"])
    s.add_items(
        run,
        [
            _row("mvs-cnn/int8", "3.0.0", {"activations_bytes": 2_500_000, "epochs_sw": 0}),
            _row("tcn", "3.0.0", {"activations_bytes": 1000}),
            _row("gone", "3.0.0", {"activations_bytes": 1}),
        ],
    )
    run = s.begin_run(argv=["pytest"], versions=["4.0.1"])
    s.add_items(
        run,
        [
            _row("mvs-cnn/int8", "4.0.1", {"activations_bytes": 2_750_000, "epochs_sw": 1}),
            _row("tcn", "4.0.1", {"activations_bytes": 9000}, sha="m2"),
            _row("new", "4.0.1", {"activations_bytes": 1}),
        ],
    )
    yield s
    s.close()


def test_diff_store_classifies_and_respects_identity(store: Store) -> None:
    report = diff_store(store, "3.0.0", "4.0.1")
    kinds = {(c.case_name, c.metric): c.kind for c in report.changes}
    assert kinds[("mvs-cnn/int8", "activations_bytes")] is ChangeKind.REGRESSED
    assert kinds[("mvs-cnn/int8", "epochs_sw")] is ChangeKind.REGRESSED
    # another model file: a 9x jump is not a regression
    assert kinds[("tcn", "activations_bytes")] is ChangeKind.NOT_COMPARABLE
    tcn = next(c for c in report.changes if c.case_name == "tcn")
    assert tcn.note == "model differs: sha256 m1… -> sha256 m2…"
    assert report.only_base == [("gone", "generate")]
    assert report.only_head == [("new", "generate")]


def test_diff_store_bands_by_case(store: Store) -> None:
    report = diff_store(
        store, "3.0.0", "4.0.1", bands_by_case={"mvs-cnn/int8": {"activations_bytes": "+10%"}}
    )
    kinds = {(c.case_name, c.metric): c.kind for c in report.changes}
    assert kinds[("mvs-cnn/int8", "activations_bytes")] is ChangeKind.UNCHANGED


def test_diff_store_missing_version_lists_stored(store: Store) -> None:
    with pytest.raises(StoreError) as info:
        diff_store(store, "2.2.0", "4.0.1")
    assert "2.2.0" in str(info.value)
    assert "3.0.0, 4.0.1" in str(info.value)


def test_format_table_lists_regressions_first_with_delta(store: Store) -> None:
    text = format_table(diff_store(store, "3.0.0", "4.0.1"))
    lines = text.splitlines()
    assert lines[0].startswith("stedge diff 3.0.0 -> 4.0.1: 2 regressed")
    body = "\n".join(lines[1:])
    assert body.index("mvs-cnn/int8") < body.index("tcn")
    assert "2,500,000" in text and "2,750,000" in text and "+250,000 (+10.0%)" in text
    assert "REGRESSED" in text
    assert "only in 3.0.0: gone [generate]" in text

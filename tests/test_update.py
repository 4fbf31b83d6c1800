"""``--stedge-update`` writer: moves missed bounds, widens bands, keeps comments, deletes nothing."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from pytest_stedge.case.load import load_cases
from pytest_stedge.verdict.bands import parse_band
from pytest_stedge.verdict.compare import ChangeKind, classify
from pytest_stedge.verdict.expect import check
from pytest_stedge.verdict.update import locate_bound, update_case, widened_band

CASE = """\
# The forum CNN: comments and layout must survive an update.
description = "10-layer CNN"
model = "model_int8.onnx"
target = "stm32n6"

[expect]
# generic bounds, every stage
activations_ratio = { max = 1.25 }   # DESIGN.md allowance
epochs_sw = 0                        # exact: nothing in software

[expect.validate-target]
val_cos = { min = 0.99 }  # board accuracy

[baseline]
weights_bytes = "+3%"   # flash budget

[variants.int8]
bugs = []

[variants.int8.expect]
activations_bytes = { max = 9_830_400 }   # float liveness bound

[variants.int8.expect.oracle]
float_nodes = { max = 0 }

[variants.float]
model = "model_float.onnx"
"""


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus" / "mvs-cnn"
    folder.mkdir(parents=True)
    (tmp_path / "corpus" / "profiles").mkdir()
    for name in ("model_int8.onnx", "model_float.onnx"):
        (folder / name).write_bytes(b"x")
    path = folder / "case.toml"
    path.write_text(CASE, encoding="utf-8")
    return path


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def case_of(path: Path, variant: str):
    return next(c for c in load_cases(path) if c.variant == variant)


def test_missed_bounds_move_where_defined_and_comments_stay(case_file: Path) -> None:
    before = case_file.read_text()
    measured = {"activations_bytes": 22_900_000.0, "epochs_sw": 2.0, "activations_ratio": 9.3}
    lines = update_case(
        case_file, variant="int8", stage="generate", misses=measured, baseline_deltas={}
    )
    after = case_file.read_text()
    # issue 19: the int8 item writes into [variants.int8.expect] only; the [expect] bounds
    # the case shares with the float variant are copied there, and stay as they were
    assert changed_lines(before, after) == [
        "-activations_bytes = { max = 9_830_400 }   # float liveness bound",
        "+activations_bytes = { max = 22_900_000 }   # float liveness bound",
        "+activations_ratio = { max = 9.3 }   # DESIGN.md allowance",
        "+epochs_sw = 2                        # exact: nothing in software",
    ]
    assert "[variants.int8.expect] activations_bytes max 9,830,400 -> 22,900,000" in lines
    assert (
        "[variants.int8.expect] epochs_sw = 0 -> 2 (copied from [expect], which the other "
        "variants keep)" in lines
    )
    # the re-check passes, and the float variant's expectations did not loosen
    assert check(case_of(case_file, "int8").bounds_for("generate"), measured) == []
    float_bounds = {b.metric: b for b in case_of(case_file, "float").bounds_for("generate")}
    assert float_bounds["activations_ratio"].max == 1.25
    assert float_bounds["epochs_sw"].exact == 0


def test_stage_bound_and_min_side(case_file: Path) -> None:
    lines = update_case(
        case_file,
        variant="int8",
        stage="validate-target",
        misses={"val_cos": 0.9123456789},
        baseline_deltas={},
    )
    assert lines == [
        (
            "[variants.int8.expect.validate-target] val_cos min 0.99 -> 0.912346 (copied from "
            "[expect.validate-target], which the other variants keep)"
        )
    ]
    text = case_file.read_text()
    assert "[variants.int8.expect.validate-target]\nval_cos = { min = 0.9123456789 }" in text
    assert "[expect.validate-target]\nval_cos = { min = 0.99 }  # board accuracy" in text
    case = case_of(case_file, "int8")
    assert check(case.bounds_for("validate-target"), {"val_cos": 0.9123456789}) == []
    assert case_of(case_file, "float").bounds_for("validate-target")[-1].min == 0.99


def test_variant_stage_table_replaces_the_case_one(case_file: Path) -> None:
    assert (
        locate_bound(
            __import__("tomlkit").parse(case_file.read_text()), "int8", "oracle", "float_nodes"
        )[1]
        == "variants.int8.expect.oracle"
    )
    update_case(
        case_file, variant="int8", stage="oracle", misses={"float_nodes": 3.0}, baseline_deltas={}
    )
    assert "float_nodes = { max = 3 }" in case_file.read_text()


def test_not_measured_and_unknown_bounds_are_left_alone(case_file: Path) -> None:
    before = case_file.read_text()
    lines = update_case(
        case_file,
        variant="float",
        stage="generate",
        misses={"activations_bytes": None, "macc": 5.0},
        baseline_deltas={},
    )
    assert case_file.read_text() == before
    assert "not measured" in lines[0] and "nothing to move" in lines[1]


def test_band_widens_to_cover_the_regression(case_file: Path) -> None:
    before = case_file.read_text()
    lines = update_case(
        case_file,
        variant="int8",
        stage="generate",
        misses={},
        baseline_deltas={
            "weights_bytes": (100_000.0, 110_100.0),
            "epochs_sw": (1.0, 2.0),
            "activations_bytes": (2_457_600.0, 2_703_360.0),
        },
    )
    after = case_file.read_text()
    # the int8 item widens int8's own bands; the case's "+3%" stays for the float variant
    assert "[variants.int8.baseline]" in after
    assert 'weights_bytes = "+10.1%"' in after and 'weights_bytes = "+3%"   # flash budget' in after
    assert 'epochs_sw = "+1"' in after and 'activations_bytes = "+10%"' in after
    assert len(lines) == 3
    assert any("over the case's '+3%', which the other variants keep" in line for line in lines)
    # nothing else moved, nothing deleted
    assert [line for line in changed_lines(before, after) if line.startswith("-")] == []
    assert case_of(case_file, "float").baseline["weights_bytes"] == "+3%"
    case = case_of(case_file, "int8")
    for metric, (old, new) in (
        ("weights_bytes", (100_000.0, 110_100.0)),
        ("epochs_sw", (1.0, 2.0)),
        ("activations_bytes", (2_457_600.0, 2_703_360.0)),
    ):
        kind = classify(metric, old, new, band=parse_band(case.baseline[metric]), comparable=True)
        assert kind is ChangeKind.UNCHANGED, metric


def test_top_level_baseline_table_is_created_without_variants(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "m.onnx").write_bytes(b"x")
    path = folder / "case.toml"
    path.write_text('model = "m.onnx"\ntarget = "stm32n6"  # n6\n', encoding="utf-8")
    update_case(
        path, variant=None, stage="generate", misses={}, baseline_deltas={"macc": (1000.0, 1500.0)}
    )
    text = path.read_text()
    assert text.startswith('model = "m.onnx"\ntarget = "stm32n6"  # n6\n')
    assert load_cases(path, tmp_path)[0].baseline == {"macc": "+500"}


@pytest.mark.parametrize(
    ("metric", "old", "new", "current", "expected"),
    [
        ("activations_bytes", 1000, 1101.5, "+3%", "+10.2%"),
        ("activations_bytes", 1000, 1101, "+3%", "+10.1%"),
        ("activations_bytes", 1000, 1100, "+3%", "+10%"),
        ("activations_bytes", 1000, 1010, "+3%", "+3%"),  # never narrows
        ("activations_bytes", 1000, 3000, "+1024", "+2000"),
        ("epochs_sw", 1, 2, None, "+1"),
        ("epochs_sw", 1, 2, "0", "+1"),
        ("activations_bytes", 0, 4096, None, "+4096"),
        ("val_cos", 0.99, 0.5, None, "+49.5%"),
        ("val_cos", 0.99, 0.5, "+0.01", "+0.49"),
    ],
)
def test_widened_band(
    metric: str, old: float, new: float, current: str | None, expected: str
) -> None:
    text = widened_band(metric, old, new, current)
    assert text == expected
    assert classify(metric, old, new, band=parse_band(text), comparable=True) is (
        ChangeKind.UNCHANGED
    )

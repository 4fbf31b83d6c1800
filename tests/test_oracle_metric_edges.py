"""The tool's validation metrics on arrays small enough to compute by hand, and their edges.

Definitions: ../shared/validation-and-protocol.md 1.2 (e = r - p, L2R over the prediction's
norm, STD and the NSE variance with ddof 1 plus float32's epsilon, SNR over the reference
power). The real-output agreement is in test_oracle_metrics.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.metrics import (
    compute_metrics,
    dequantize,
    load_arrays,
    looks_like_classifier,
    pair_outputs,
)

EPS32 = float(np.finfo(np.float32).eps)


def test_four_values_by_hand() -> None:
    r = np.array([1.0, 2.0, 3.0, 4.0])
    p = np.array([1.0, 2.0, 3.0, 5.0])
    m = compute_metrics(r, p, classifier=False)
    # e = [0, 0, 0, -1]
    assert m["rmse"] == pytest.approx(0.5)  # sqrt(1/4)
    assert m["mae"] == pytest.approx(0.25)
    assert m["l2r"] == pytest.approx(1 / math.sqrt(39))  # |e| / |p|, |p|^2 = 1+4+9+25
    assert m["mean"] == pytest.approx(-0.25)
    assert m["std"] == pytest.approx(0.5)  # deviations .25,.25,.25,-.75: 0.75 / 3
    # var(r, ddof 1) = 5 / 3, plus eps32; mse 0.25
    assert m["nse"] == pytest.approx(1 - 0.25 / (5 / 3 + EPS32), abs=1e-15)
    assert m["cos"] == pytest.approx(34 / math.sqrt(30 * 39))  # 1+4+9+20 over |r||p|
    assert m["snr"] == pytest.approx(10 * math.log10(30))  # |r|^2 / |e|^2 = 30 / 1
    assert "acc" not in m


def test_identical_outputs_give_an_infinite_snr_like_the_tool() -> None:
    r = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    m = compute_metrics(r, r.copy(), classifier=False)
    assert m["snr"] == math.inf  # the real 4.0.0 Developer Cloud logs print snr=inf
    assert (m["rmse"], m["mae"], m["l2r"], m["mean"], m["std"]) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert m["nse"] == 1.0 and m["cos"] == pytest.approx(1.0)


def test_degenerate_outputs_follow_numpy() -> None:
    zero = np.zeros(3)
    some = np.array([1.0, 2.0, 2.0])
    silent = compute_metrics(some, zero, classifier=False)  # the board returned zeros
    assert silent["l2r"] == math.inf and math.isnan(silent["cos"])
    assert silent["snr"] == pytest.approx(0.0)  # |r|^2 / |e|^2 = 9 / 9
    both = compute_metrics(zero, zero, classifier=False)
    assert both["l2r"] == 0.0 and both["snr"] == math.inf and math.isnan(both["cos"])
    assert both["nse"] == 1.0  # var 0 + eps, mse 0
    noise = compute_metrics(zero, some, classifier=False)
    assert noise["snr"] == -math.inf  # no reference power, some error
    one = compute_metrics(np.array([2.0]), np.array([1.0]), classifier=False)
    assert math.isnan(one["std"]) and math.isnan(one["nse"])  # ddof 1 of one value
    assert one["rmse"] == 1.0 and one["mean"] == 1.0


def test_element_counts_must_match_and_shapes_need_not() -> None:
    with pytest.raises(OracleError, match=r"reference has 4 elements \(2, 2\) but prediction has 3"):
        compute_metrics(np.zeros((2, 2)), np.zeros(3))
    flat = compute_metrics(np.arange(4.0).reshape(2, 2), np.arange(4.0), classifier=False)
    assert flat["rmse"] == 0.0


def test_int8_outputs_are_dequantized_with_the_same_parameters() -> None:
    q = np.array([-128, 0, 127], dtype=np.int8)
    # (q - zp) * scale with zp -1, scale 0.5
    assert dequantize(q, 0.5, -1).tolist() == [-63.5, 0.5, 64.0]
    assert dequantize(q, 0.5, -1).dtype == np.float32
    assert dequantize(q, None, None).tolist() == [-128.0, 0.0, 127.0]
    floats = np.array([0.25], dtype=np.float64)
    assert dequantize(floats, 0.5, 3) is not None and dequantize(floats, 0.5, 3)[0] == 0.25
    assert dequantize(np.array([True, False]), None, None).dtype == np.float64
    # one step of 0.5 on one of three values
    m = compute_metrics(np.array([2, 4, 6], dtype=np.int8), np.array([2, 4, 7], dtype=np.int8),
                        scale=0.5, zero_point=0, classifier=False)
    assert m["mae"] == pytest.approx(0.5 / 3) and m["rmse"] == pytest.approx(math.sqrt(0.25 / 3))


def test_a_float32_reference_compares_in_float32() -> None:
    r = np.array([1.0, 1.0 + 2**-30], dtype=np.float32)  # rounds to [1, 1] in float32
    p = np.array([1.0, 1.0 + 2**-30], dtype=np.float64)
    assert compute_metrics(r, p, classifier=False)["rmse"] == 0.0
    assert compute_metrics(p, np.array([1.0, 1.0]), classifier=False)["rmse"] > 0


def test_classifier_accuracy_and_its_detection() -> None:
    ref = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3], [0.5, 0.25, 0.25]])
    pred = np.array([[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.2, 0.5, 0.3], [0.4, 0.35, 0.25]])
    assert looks_like_classifier(ref)
    assert compute_metrics(ref, pred)["acc"] == pytest.approx(75.0)  # 3 of 4 argmax agree
    assert "acc" not in compute_metrics(ref, pred, classifier=False)
    assert looks_like_classifier(np.array([[0.5, 0.6]])) is False  # rows do not sum to 1
    assert looks_like_classifier(np.array([[1.5, -0.5]])) is False  # negative scores
    assert looks_like_classifier(np.array([0.5, 0.5])) is False  # one row, no sample axis
    assert looks_like_classifier(np.array([[1.0], [1.0]])) is False  # one class
    assert looks_like_classifier(np.zeros((0, 3))) is False
    # the tool's (samples, 1, 1, classes) layout: the last axis holds the classes
    nhwc = np.array([[[[0.2, 0.3, 0.5]]], [[[0.6, 0.2, 0.2]]]])
    assert looks_like_classifier(nhwc) is True
    assert compute_metrics(nhwc, nhwc[::-1].copy())["acc"] == 0.0  # both argmax differ
    assert looks_like_classifier(np.array([[0.0, 1.0], [1.0, 0.0]]))  # one-hot
    forced = compute_metrics(np.array([[2.0, 1.0]]), np.array([[1.0, 3.0]]), classifier=True)
    assert forced["acc"] == 0.0


def test_load_arrays_reads_npy_npz_and_the_tool_csv(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(3, dtype=np.int8))
    assert load_arrays(tmp_path / "a.npy")[""].tolist() == [0, 1, 2]
    np.savez(tmp_path / "io.npz", m_outputs_1=np.ones(2), c_outputs_1=np.zeros(2))
    assert sorted(load_arrays(tmp_path / "io.npz")) == ["c_outputs_1", "m_outputs_1"]
    csv = tmp_path / "network_val_m_outputs_1.csv"
    csv.write_text("# dtype=int8\n# (2, 1, 1, 2)/int8, items=4\n1,2\n3,-4\n")
    arr = load_arrays(csv)[""]
    assert arr.dtype == np.int8 and arr.shape == (2, 1, 1, 2) and arr.ravel().tolist() == [1, 2, 3, -4]
    odd = tmp_path / "odd.csv"  # a shape that does not match the rows is not applied
    odd.write_text("# (3, 3)/float32\n1.5,2\n")
    assert load_arrays(odd)[""].shape == (1, 2)


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("empty.csv", "# dtype=float32\n", "holds no data rows"),
        ("bad.csv", "1,2\nx,y\n", "not a numeric csv line: 'x,y'"),
        ("junk.npy", "not numpy", "not a numpy .npy/.npz file"),
    ],
)
def test_load_arrays_refuses_bad_files_naming_them(
    tmp_path: Path, name: str, text: str, match: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(OracleError, match=match) as info:
        load_arrays(path)
    assert str(path) in str(info.value)
    with pytest.raises(OracleError, match="no such file"):
        load_arrays(tmp_path / "missing.npz")


def test_pair_outputs_every_way_a_user_hands_them() -> None:
    a, b = np.zeros(1), np.ones(1)
    io = {"m_inputs_1": a, "m_outputs_2": a, "c_outputs_2": b, "m_outputs_1": a, "c_outputs_1": b}
    assert [k for k, _, _ in pair_outputs(io, None, "io.npz")] == ["m_outputs_1", "m_outputs_2"]
    with pytest.raises(OracleError, match=r"io.npz: no m_outputs_N / c_outputs_N pair.*keys found"):
        pair_outputs({"m_outputs_1": a}, None, "io.npz")
    # equal names; input arrays are never outputs
    same = pair_outputs({"y": a, "m_inputs_1": a}, {"y": b, "m_inputs_1": b}, "w")
    assert [(k, r is a, p is b) for k, r, p in same] == [("y", True, True)]
    # an .npy on each side: the unnamed array is "output"
    assert [k for k, _, _ in pair_outputs({"": a}, {"": b}, "w")] == ["output"]
    # m_outputs_N against c_outputs_N across two files
    mapped = pair_outputs({"m_outputs_1": a}, {"c_outputs_1": b}, "w")
    assert [(k, p is b) for k, _, p in mapped] == [("m_outputs_1", True)]
    # one array each, different names
    assert [k for k, _, _ in pair_outputs({"ref": a}, {"pred": b}, "w")] == ["ref"]
    assert [k for k, _, _ in pair_outputs({"": a}, {"pred": b}, "w")] == ["output"]
    with pytest.raises(OracleError, match=r"w: cannot pair outputs: reference keys \['p', 'q'\]"):
        pair_outputs({"p": a, "q": a}, {"r": b}, "w")


def test_two_values_have_a_sample_variance_and_softmax_rows_allow_1e3() -> None:
    two = compute_metrics(np.array([1.0, 3.0]), np.array([1.0, 2.0]), classifier=False)
    # var(r, ddof 1) = 2 (+eps), mse = 0.5: nse = 0.75; std of e = [0, 1] with ddof 1
    assert two["nse"] == pytest.approx(1 - 0.5 / (2 + EPS32), abs=1e-15)
    assert two["std"] == pytest.approx(math.sqrt(0.5))
    # rows summing to 1 within 1e-3 are softmax scores; 1.0015 is not
    assert looks_like_classifier(np.array([[0.5, 0.5009], [0.2, 0.8]])) is True
    assert looks_like_classifier(np.array([[0.5, 0.5015], [0.2, 0.8]])) is False


def test_a_forced_classifier_on_one_value_and_long_bad_csv_lines(tmp_path: Path) -> None:
    # one scalar output forced to be a classifier: one class, argmax always agrees
    assert compute_metrics(np.float64(0.3), np.float64(0.9), classifier=True)["acc"] == 100.0
    bad = tmp_path / "long.csv"
    line = "x" * 80
    bad.write_text(f"1,2\n{line}\n")
    with pytest.raises(OracleError) as info:
        load_arrays(bad)
    assert f"not a numeric csv line: {'x' * 60!r}" in str(info.value)  # the first 60 characters


def test_a_pickled_array_is_never_loaded(tmp_path: Path) -> None:
    # an .npy holding Python objects would run code when unpickled: refused
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(OracleError, match="not a numpy .npy/.npz file"):
        load_arrays(tmp_path / "obj.npy")


def test_two_outputs_across_two_files_pair_by_number() -> None:
    a1, a2, b1, b2 = np.zeros(1), np.zeros(2), np.ones(1), np.ones(2)
    pairs = pair_outputs({"m_outputs_1": a1, "m_outputs_2": a2},
                         {"c_outputs_2": b2, "c_outputs_1": b1}, "w")
    assert [(k, r is ref, p is pred) for (k, r, p), ref, pred in
            zip(pairs, (a1, a2), (b1, b2))] == [("m_outputs_1", True, True), ("m_outputs_2", True, True)]

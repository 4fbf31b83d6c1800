"""The tool's metrics recomputed from the real validate outputs, and the default stimulus."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.metrics import compute_metrics, load_arrays, pair_outputs
from pytest_stedge.oracle.accuracy.stimulus import InputSpec, default_stimulus, draw, input_specs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CONVS = SHARED / "real-cases" / "n6-micro-convs-4flows"
MLPS = SHARED / "real-cases" / "stm32-mlp-validate-host"
KEYS = ("rmse", "mae", "l2r", "mean", "std", "nse", "cos")


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real validate outputs not available: {path} is absent")
    return path


def _rows(report: Path) -> dict[str, dict[str, str]]:
    """The 'Evaluation report (summary)' rows: label -> {metric: printed text}."""
    text = report.read_text(encoding="utf-8", errors="replace")
    summary = text[text.index("Evaluation report (summary)") :]
    rows = {}
    for line in summary.splitlines():
        m = re.match(
            r"^(X-cross #\d+|HOST c-model #\d+|TARGET c-model #\d+|original model #\d+)\s+(.*)$",
            line,
        )
        if m:
            cells = m.group(2).split()
            rows[m.group(1)] = dict(zip(("acc",) + KEYS, cells[:8]))
    return rows


def _agrees(ours: float, printed: str) -> bool:
    """Ours rounds to what the tool printed (6 decimals or more: 6 significant digits or better)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(ours - float(printed)) <= 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-15


def _conv_dirs() -> list[Path]:
    return sorted(CONVS.glob("*/2.2.0-cubemx-target")) if CONVS.is_dir() else []


@pytest.mark.parametrize("case", _conv_dirs(), ids=lambda p: p.parent.name)
def test_int8_board_validation_metrics_recomputed(case: Path) -> None:
    report = case / "network_validate_report.txt"
    text = report.read_text()
    q = re.search(r"p/int8 data are dequantized with s=([0-9.e-]+) zp=(-?\d+)", text)
    assert q, "the report states the output quantization"
    data = load_arrays(case / "network_val_io.npz")
    ours = compute_metrics(
        data["m_outputs_1"], data["c_outputs_1"], scale=float(q[1]), zero_point=int(q[2])
    )
    printed = _rows(report)["X-cross #1"]
    for key in KEYS:
        assert _agrees(ours[key], printed[key]), (key, ours[key], printed[key])
    assert printed["acc"] == "n.a." and "acc" not in ours  # not a classifier: the tool printed n.a.


def test_conv_cases_exist() -> None:
    _need(CONVS)
    assert len(_conv_dirs()) == 8


@pytest.mark.parametrize("model", ["actor_joint_12d_c860k", "actor_joint_1p05M_shared3D"])
def test_host_validation_with_user_ground_truth(model: str) -> None:
    case = _need(MLPS / model / "2.2.0" / "validate-host")
    rows = _rows(case / "network_validate_report.txt")
    m_out = np.load(case / "network_val_m_outputs_1.npy")  # float64 reference
    c_out = np.load(case / "network_val_c_outputs_1.npy")  # float32 C-model
    truth_csv = MLPS / model / f"{model}_valoutput.csv"
    pairs = {"X-cross #1": (m_out, c_out)}
    if truth_csv.is_file():
        with truth_csv.open() as fh:
            rows_csv = [[float(v) for v in row] for row in csv.reader(fh) if row]
            truth = np.array(rows_csv, dtype=np.float32)  # the tool reads csv as float32
        pairs["HOST c-model #1"] = (truth, c_out)
        pairs["original model #1"] = (truth, m_out)
    for label, (ref, pred) in pairs.items():
        ours = compute_metrics(ref, pred)
        for key in KEYS:
            assert _agrees(ours[key], rows[label][key]), (label, key, ours[key], rows[label][key])


def test_host_validation_from_the_tool_csv_files() -> None:
    case = _need(SHARED / "stedgeai-samples" / "stm32-v2.2.0-validate-host-mlp")
    ref = load_arrays(case / "network_val_m_outputs_1.csv")[""]
    pred = load_arrays(case / "network_val_c_outputs_1.csv")[""]
    assert ref.dtype == np.float64 and pred.shape == (10, 1, 1, 3)
    ours = compute_metrics(ref, pred)
    printed = _rows(case / "network_validate_report.txt")["X-cross #1"]
    for key in KEYS:
        assert _agrees(ours[key], printed[key]), (key, ours[key], printed[key])
    empty = SHARED / "stedgeai-samples/stm32f4-v2.2.0-validate-mobilenetv2-h5-random"
    if (empty / "network_val_c_outputs_1.csv").is_file():
        with pytest.raises(OracleError, match="no data rows"):
            load_arrays(empty / "network_val_c_outputs_1.csv")


def test_definitions_that_are_not_the_textbook_ones() -> None:
    r = np.array([1.0, 2.0, 3.0, 4.0])
    p = np.array([1.0, 2.0, 3.0, 6.0])
    m = compute_metrics(r, p)
    assert m["l2r"] == pytest.approx(2.0 / np.linalg.norm(p))  # over the prediction's norm
    assert m["mean"] == pytest.approx(-0.5)  # reference minus prediction
    assert m["std"] == pytest.approx(np.std(r - p, ddof=1))
    assert m["nse"] == pytest.approx(1 - 1.0 / np.var(r, ddof=1))
    assert m["snr"] == pytest.approx(10 * np.log10(30.0 / 4.0))  # reference power
    same = compute_metrics(r, r)
    assert same["rmse"] == 0 and same["snr"] == float("inf") and same["cos"] == pytest.approx(1.0)


def test_int8_outputs_are_dequantized_and_classifiers_scored() -> None:
    ref = np.array([[10, -128, 0], [-128, 20, 0]], dtype=np.int8)
    pred = np.array([[10, -128, 0], [30, 20, -128]], dtype=np.int8)
    m = compute_metrics(ref, pred, scale=0.5, zero_point=-128, classifier=True)
    assert m["acc"] == 50.0  # second sample argmax 0 vs 1
    assert m["mae"] == pytest.approx(0.5 * (158 + 128) / 6)
    softmax = np.array([[0.7, 0.3], [0.2, 0.8]])
    assert compute_metrics(softmax, softmax)["acc"] == 100.0  # auto-detected classifier
    with pytest.raises(OracleError, match="same samples"):
        compute_metrics(np.zeros(4), np.zeros(5))


def test_default_stimulus_matches_the_tool_logs() -> None:
    x = default_stimulus([{"name": "in", "shape": (28, 28, 1)}])["in"]
    assert x.shape == (10, 28, 28, 1) and x.dtype == np.float32
    # stedgeai prints [0.000012, 0.999718], [0.495359, 0.288935] for this draw
    assert (round(float(x.min()), 6), round(float(x.max()), 6)) == (0.000012, 0.999718)
    assert (round(float(x.mean()), 6), round(float(x.std()), 6)) == (0.495359, 0.288935)
    spec = InputSpec("img", (64, 64, 3), "int8", 0.00784312, 0)
    f = draw(spec, 10, np.random.RandomState(42))
    # -1.003908, 0.996060, -0.004885, 0.576983 in the 2.2.0 and 4.0.0 logs
    assert [round(float(v), 6) for v in (f.min(), f.max(), f.mean(), f.std())] == [
        -1.003908,
        0.99606,
        -0.004885,
        0.576983,
    ]
    codes = default_stimulus([spec])["img"]
    assert codes.dtype == np.int8 and codes.min() == -128 and codes.max() == 127


@pytest.mark.parametrize("case", _conv_dirs(), ids=lambda p: p.parent.name)
def test_default_stimulus_reproduces_the_board_inputs(case: Path) -> None:
    model = next(case.glob("*.onnx"))
    spec = input_specs(model)[0]
    assert spec.dtype == "int8" and spec.scale == pytest.approx(0.0078431, rel=1e-4)
    ours = default_stimulus(model)[spec.name]
    theirs = np.load(case / "network_val_io.npz")["m_inputs_1"]
    assert ours.shape == theirs.shape
    # identical but for at most a rounding tie (the OE model's scale is the tool's to 1e-7)
    assert np.count_nonzero(ours != theirs) <= 1


def test_metrics_command_on_a_val_io_npz(capsys: pytest.CaptureFixture[str]) -> None:
    case = _need(CONVS / "conv2d_1x1" / "2.2.0-cubemx-target")
    npz = str(case / "network_val_io.npz")
    assert (
        main(["metrics", npz, "--scale", "0.0005599068244919181", "--zero-point", "-128", "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["name"] == "m_outputs_1"
    assert _agrees(rows[0]["l2r"], "0.000876201")
    assert main(["metrics", npz]) == 0
    assert "m_outputs_1" in capsys.readouterr().out


@pytest.mark.parametrize("case", _conv_dirs(), ids=lambda p: p.parent.name)
def test_metrics_command_reads_the_stated_quantization(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 19: `stedge metrics network_val_io.npz` alone printed quantized units (rmse
    # 0.1768 where the tool printed 0.000117739); the validate report beside it says how
    assert main(["metrics", str(case / "network_val_io.npz"), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    printed = _rows(case / "network_validate_report.txt")["X-cross #1"]
    for key in KEYS:
        assert _agrees(row[key], printed[key]), (key, row[key], printed[key])
    assert row["zero_point"] == -128 and "network_validate_report.txt" in row["dequantized_from"]


def test_metrics_command_text_names_where_the_quantization_comes_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = _need(CONVS / "conv2d_16f_3x3" / "2.2.0-cubemx-target")
    assert main(["metrics", str(case / "network_val_io.npz")]) == 0
    out = capsys.readouterr().out
    assert "dequantized with s=0.0006660326616838574 zp=-128" in out
    assert "0.000117739" in out.splitlines()[-1]  # the tool's own rmse, as it printed it


def test_metrics_command_refuses_to_guess_integer_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = _need(CONVS / "conv2d_16f_3x3" / "2.2.0-cubemx-target")
    alone = tmp_path / "network_val_io.npz"
    alone.write_bytes((case / "network_val_io.npz").read_bytes())
    assert main(["metrics", str(alone)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stedge: error: ") and "--scale S --zero-point ZP" in err
    assert main(["metrics", str(alone), "--scale", "0.0006660326616838574", "--zero-point",
                 "-128"]) == 0
    assert "0.000117739" in capsys.readouterr().out


def test_quantization_stated_by_a_c_info_buffer(shared_dir: Path) -> None:
    from pytest_stedge.oracle.accuracy.output_quant import stated_quantization

    # the generate report prints the output's parameters: QLinear(0.550632954,-1,int8)
    folder = shared_dir / "stedgeai-samples" / "n6-v4.0.0-generate-sw-st-ai-tcn"
    report = (folder / "network_generate_report.txt").read_text()
    printed = re.search(r"output 1/1 .*QLinear\(([0-9.]+),(-?\d+),int8\)", report)
    assert printed
    (only,) = stated_quantization(folder / "network_val_io.npz").values()
    assert only.scale == pytest.approx(float(printed[1]), abs=5e-10)
    assert only.zero_point == int(printed[2]) and "network_c_info.json" in only.source


def test_metrics_command_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "a.npz", x=np.zeros(3))
    assert main(["metrics", str(tmp_path / "a.npz")]) == 2
    assert "m_outputs_N / c_outputs_N" in capsys.readouterr().err
    (tmp_path / "b.npy").write_text("garbage")
    assert main(["metrics", str(tmp_path / "b.npy"), str(tmp_path / "a.npz")]) == 2
    assert "not a numpy" in capsys.readouterr().err
    np.save(tmp_path / "r.npy", np.ones(4))
    np.save(tmp_path / "p.npy", np.ones(4) * 2)
    assert (
        pair_outputs(load_arrays(tmp_path / "r.npy"), load_arrays(tmp_path / "p.npy"), "x")[0][0]
        == "output"
    )

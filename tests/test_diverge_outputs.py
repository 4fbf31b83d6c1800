"""``stedge diverge`` with the stock firmware (outputs only), and every ``next:`` hint of
``stedge board-run`` run as printed (issue 28, points 1 and 2)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from test_board_sim import make_model

from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.cli.main import main

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MICRO = SHARED / "real-cases/n6-micro-convs-4flows"
MOBILENET = SHARED / "real-cases/n6-mobilenetv2-qdq-3versions/3.0.0"
MOBILENET_OE = MOBILENET / "mobilenet_v2_128_0.5_QDQ_quant_OE_3_3_1.onnx"
MOBILENET_INFO = MOBILENET / "network_c_info.json"
BLAZE = SHARED / "real-cases/n6-blazeface-2profiles"
BLAZE_WS = BLAZE / "2.2.0-profile-default-cli/generate-2025-08-25"
BLAZE_OE = BLAZE_WS / "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0.onnx"
BLAZE_TFLITE = BLAZE / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite"


def need(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            pytest.skip(f"{path} is absent (the real tool outputs live in ../shared)")


def served(model: Path, out: Path, *args: str, c_info: Path | None = None,
           fault: str | None = None, upload: bool = True,
           capsys: pytest.CaptureFixture[str] | None = None,
           given: Path | None = None) -> str:
    """``stedge board-run`` against the simulator; what it printed."""
    with BoardSimulator(model, c_info=c_info, faults=Faults(wrong_from_node=fault),
                        upload=upload) as sim:
        sim.signature = ""
        url = sim.start_socket()
        assert main(["board-run", str(given or model), "--board", url, "--out", str(out),
                     *args]) == 0
    assert capsys is not None
    return capsys.readouterr().out


def hints(printed: str) -> list[list[str]]:
    return [shlex.split(line.split(":", 1)[1]) for line in printed.splitlines()
            if line.startswith("next:")]


def run_hint(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    assert argv[0] == "stedge"
    code = main(argv[1:])
    captured = capsys.readouterr()
    assert "error" not in captured.err, captured.err
    return code, captured.out


# --- the outputs of a real board, as validate saved them -------------------------------
@pytest.mark.parametrize("model", ["conv2d_3x3", "depthwise_3x3", "conv2d_32f_7x7"])
def test_validate_s_own_board_outputs_give_validate_s_figures(
        model: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = MICRO / model / "2.2.0-cubemx-target"
    need(folder / "network_val_io.npz", folder / "network_c_info.json")
    assert main(["diverge", str(folder / "network_val_io.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    stated = json.loads((folder / "network_c_info.json").read_text())
    tool = stated["validation"]["val_metrics"][0]
    (row,) = report["outputs"]
    # the tool's own figures for that board run (c_info validation.val_metrics)
    for key in ("rmse", "mae", "l2r", "cos"):
        assert row[key] == pytest.approx(tool[key], rel=1e-5, abs=1e-9), key
    assert "PER_LAYER_WITH_DATA" in report["per_epoch_needs"]


def test_validate_s_outputs_fail_a_bound_the_case_sets(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = MICRO / "conv2d_3x3" / "2.2.0-cubemx-target"
    need(folder / "network_val_io.npz")
    case = tmp_path / "corpus" / "c3x3"
    case.mkdir(parents=True)
    (tmp_path / "corpus" / "m.onnx").write_bytes(make_model(tmp_path / "m.onnx").read_bytes())
    (case / "case.toml").write_text(
        'model = "../m.onnx"\ntarget = "stm32n6"\nstages = ["generate", "validate-target"]\n'
        "[expect.validate-target]\nval_snr = { min = 70.0 }\n")
    # the board's outputs are 63.5 dB from the reference (validate's report): under 70
    code = main(["diverge", str(folder / "network_val_io.npz"), "--case", str(case)])
    out = capsys.readouterr().out
    assert code == 1
    assert "outputs FAIL the bounds of case c3x3" in out and "val_snr: expected >= 70" in out


# --- the stock firmware: descriptors without data ---------------------------------------
def test_the_stock_firmware_on_a_wrong_board_fails_on_its_outputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need(MOBILENET_OE, MOBILENET_INFO)
    dump = tmp_path / "wrong.npz"
    served(MOBILENET_OE, dump, "--per-layer", "--c-info", str(MOBILENET_INFO),
           c_info=MOBILENET_INFO, fault="epoch_30", upload=False, capsys=capsys)
    code = main(["diverge", str(dump)])
    out = capsys.readouterr().out
    assert code == 1  # main e66cc52: "0 buffers compared over 56 records", exit 0
    assert "the board sent its epoch records without data" in out
    assert "outputs FAIL --min-cos" in out
    assert "CAP_OBSERVER" in out and "_dumpable_tensor_name[]" in out


def test_the_stock_firmware_on_a_healthy_board_passes_on_its_outputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need(MOBILENET_OE, MOBILENET_INFO)
    dump = tmp_path / "ok.npz"
    served(MOBILENET_OE, dump, "--per-layer", "--c-info", str(MOBILENET_INFO),
           c_info=MOBILENET_INFO, upload=False, capsys=capsys)
    assert main(["diverge", str(MOBILENET_OE), str(dump), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "outputs" and report["figures"]["val_cos"] > 0.9999


# --- every next: hint, run as printed ---------------------------------------------------
def test_io_and_per_node_hints_of_an_onnx_board_run(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    model = make_model(tmp_path / "m.onnx")
    for args, expected in (((), 0), (("--per-layer",), 0)):
        out = served(model, tmp_path / f"d{len(args)}.npz", *args, capsys=capsys)
        (argv,) = hints(out)
        code, printed = run_hint(argv, capsys)
        assert code == expected, printed
    out = served(model, tmp_path / "bad.npz", "--per-layer", fault="r", capsys=capsys)
    (argv,) = hints(out)
    assert run_hint(argv, capsys)[0] == 1


def test_n6_hints_run_as_printed_and_none_is_printed_that_cannot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need(MOBILENET_OE, MOBILENET_INFO)
    out = served(MOBILENET_OE, tmp_path / "no-info.npz", "--per-layer", c_info=MOBILENET_INFO,
                 capsys=capsys)
    assert hints(out) == [] and "--c-info FILE" in out
    out = served(MOBILENET_OE, tmp_path / "n6.npz", "--per-layer", "--c-info",
                 str(MOBILENET_INFO), c_info=MOBILENET_INFO, fault="epoch_20", capsys=capsys)
    (argv,) = hints(out)
    code, printed = run_hint(argv, capsys)
    assert code == 1 and "first diverging epoch: epoch_20" in printed


def test_the_issue_s_blazeface_hint_runs_with_the_user_s_tflite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need(BLAZE_OE, BLAZE_TFLITE, BLAZE_WS / "network_c_info.json")
    pytest.importorskip("ai_edge_litert", reason="LiteRT (ai-edge-litert) runs TFLite models")
    out = served(BLAZE_OE, tmp_path / "bf.npz", "--per-layer", "--c-info",
                 str(BLAZE_WS / "network_c_info.json"), c_info=BLAZE_WS / "network_c_info.json",
                 fault="epoch_40", capsys=capsys, given=BLAZE_TFLITE)
    (argv,) = hints(out)
    assert argv[2].endswith(".tflite")
    code, printed = run_hint(argv, capsys)
    # main e66cc52 printed `stedge diverge model.tflite bf.npz`: "not an ONNX model"
    assert code == 1 and "first diverging epoch: epoch_40" in printed


def test_a_case_that_does_not_exist_is_an_error_on_every_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--case` only sets the output bounds, so the per-epoch and per-node paths ignored a
    case that does not exist (exit 0): every path now refuses it first, naming it."""
    import numpy as np

    dump = tmp_path / "n6.npz"
    np.savez(dump, x=np.zeros(4, np.float32))
    (tmp_path / "n6.json").write_text(json.dumps({"c_info": str(tmp_path / "c.json")}))
    missing = tmp_path / "no-such-case"
    assert main(["diverge", str(dump), "--case", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"case {str(missing)!r}: no case.toml there" in err and "Traceback" not in err

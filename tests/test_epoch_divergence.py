"""The first diverging epoch of a simulated N6 board, named as the real c_info says.

The simulator plays a real compilation (c_info and the tool's OE model from ../shared):
one record per executed epoch, its buffers named, quantized and laid out as the c_info
says; a fault corrupts every buffer from one chosen epoch on. The mapping must name
that epoch, its kind and operators, for HW, SW and hybrid epochs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.board.dump_run import run_dump
from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.epoch_compare import diverge_epochs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MOBILENET = SHARED / "real-cases/n6-mobilenetv2-qdq-3versions/3.0.0"
MOBILENET_OE = MOBILENET / "mobilenet_v2_128_0.5_QDQ_quant_OE_3_3_1.onnx"
BLAZE = SHARED / "real-cases/n6-blazeface-2profiles"
BLAZE_WS = BLAZE / "2.2.0-profile-default-cli/generate-2025-08-25"
BLAZE_OE = BLAZE_WS / "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0.onnx"
BLAZE_Q = BLAZE_WS / "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0_Q.json"
BLAZE_HYBRID = BLAZE / "2.2.0-n6-allmems-O3-cubemx/network_model.tflite_c_info.json"
BLAZE_TFLITE = BLAZE / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite"

pytestmark = pytest.mark.slow


def need(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            pytest.skip(f"{path} is absent (the real tool outputs live in ../shared)")


def dump_of(model: Path, c_info: Path, out: Path, fault: str | None = None,
            upload: bool = True) -> Path:
    with BoardSimulator(model, c_info=c_info, faults=Faults(wrong_from_node=fault),
                        upload=upload) as sim:
        sim.signature = ""
        url = sim.start_socket()
        run_dump(model, url, out=out, per_layer=True)
    return out


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need(MOBILENET_OE, MOBILENET / "network_c_info.json")
    return MOBILENET / "network_c_info.json"


def test_a_healthy_board_diverges_nowhere(mobilenet: Path, tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz")
    meta = json.loads(dump.with_suffix(".json").read_text())
    # what the ATONN firmware sends: unnamed ops, id epoch << 16 | epoch, buffer names
    assert meta["nodes"][0]["name"] == "epoch_1" and meta["nodes"][0]["id"] == 1 << 16 | 1
    assert meta["nodes"][-1]["type"] & 0xF == 2  # epoch_56 is the SW Softmax
    result = diverge_epochs(MOBILENET_OE, dump, mobilenet)
    assert result["first_divergent"] is None
    assert result["records"] == 56  # executed epochs of the file (58 nodes, 2 NODE_NO_X)
    assert result["compared"] == 56
    assert [u["tensor"] for u in result["unmapped"]] == ["SCRATCH_Softmax_212_PORT_OUT"]
    assert min(r["cos"] for r in result["rows"] if r["cos"] == r["cos"]) > 0.9999


def test_a_corrupted_hw_epoch_is_named_with_its_operators(mobilenet: Path,
                                                           tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz", fault="epoch_12")
    result = diverge_epochs(MOBILENET_OE, dump, mobilenet)
    first = result["first_divergent"]
    assert first["epoch"] == "epoch_12" and first["kind"] == "HW"
    assert first["board_kind"] == "HW"
    assert first["operators"][0] == "Conv2D_41 (Conv)"
    assert first["model_nodes"] == ["Conv2D_41"]
    # the epoch wrote Conv2D_44's input with its zero point moved (U8, offset 0)
    assert first["buffer"] == "Conv2D_44_zero_off_out_103"
    assert first["tensor"] == "Dequantize_43_out_0" and first["cos"] < 0.9
    before = [r for r in result["rows"] if int(r["epoch"].split("_")[1]) < 12]
    assert len(before) == 11 and all(r["ok"] for r in before)


def test_a_corrupted_sw_epoch_is_named_as_software(mobilenet: Path, tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz", fault="epoch_56")
    first = diverge_epochs(MOBILENET_OE, dump, mobilenet)["first_divergent"]
    assert (first["epoch"], first["kind"], first["board_kind"]) == ("epoch_56", "SW", "SW")
    assert first["model_nodes"] == ["Softmax_212"]


def test_a_corrupted_hybrid_epoch_is_named_as_hybrid(tmp_path: Path) -> None:
    need(BLAZE_OE, BLAZE_HYBRID)
    dump = dump_of(BLAZE_OE, BLAZE_HYBRID, tmp_path / "d.npz", fault="epoch_76")
    result = diverge_epochs(BLAZE_OE, dump, BLAZE_HYBRID)
    first = result["first_divergent"]
    # the file's only NODE_SW_HW epoch: a software DequantizeLinear with hardware around it
    assert (first["epoch"], first["kind"], first["board_kind"]) == ("epoch_76", "hybrid",
                                                                      "hybrid")
    assert first["describe"] == ("epoch_76 (hybrid: SW Dequantize_245 DequantizeLinear; "
                                 "HW Transpose_255 Reshape)")
    assert all(r["ok"] for r in result["rows"] if int(r["epoch"].split("_")[1]) < 76)


def test_the_user_tflite_model_through_the_q_json_agrees_with_the_tool_s_import(
        tmp_path: Path) -> None:
    need(BLAZE_OE, BLAZE_Q, BLAZE_HYBRID, BLAZE_TFLITE)
    pytest.importorskip("ai_edge_litert", reason="LiteRT (ai-edge-litert) runs TFLite models")
    dump = dump_of(BLAZE_OE, BLAZE_HYBRID, tmp_path / "d.npz")
    result = diverge_epochs(BLAZE_TFLITE, dump, BLAZE_HYBRID, oe_model=BLAZE_OE,
                            q_json=BLAZE_Q)
    assert result["reference"].startswith("LiteRT on blazeface")
    by_litert = [r for r in result["rows"] if "instead" not in r["how"]]
    # buffers LiteRT computed from the user's operators (the _Q.json's CONV_2D_1 ...)
    assert len(by_litert) >= 30
    agree = [r for r in by_litert if r["cos"] >= 0.99]
    # measured: 25 of 32 within cos 0.99 (int8 rounding of two runtimes, LiteRT and
    # onnxruntime, on two models of one network); the rest is named, not hidden
    assert len(agree) / len(by_litert) >= 0.75
    epoch_2 = next(r for r in result["rows"] if r["epoch"] == "epoch_2")
    assert epoch_2["model_nodes"] == ["QUANTIZE_0"] and epoch_2["kind"] == "SW"


def test_the_stock_firmware_sends_descriptors_only_and_that_is_said(mobilenet: Path,
                                                                     tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz", upload=False)
    result = diverge_epochs(MOBILENET_OE, dump, mobilenet)
    # the output comes with data (the firmware filters intermediate buffers only)
    assert [r["buffer"] for r in result["rows"]] == ["Quantize_213_out_0"]
    assert result["first_divergent"] is None
    assert all(u["reason"].startswith("no data") for u in result["unmapped"]
               if u["tensor"] != "SCRATCH_Softmax_212_PORT_OUT")


def test_a_dump_of_another_model_is_refused_naming_the_files(mobilenet: Path,
                                                             tmp_path: Path) -> None:
    need(BLAZE_HYBRID)
    dump = tmp_path / "other.npz"
    np.savez(dump, conv0=np.zeros((1, 4), np.int8), relu0=np.zeros((1, 4), np.int8))
    with pytest.raises(OracleError, match=r"other.npz: none of its 2 record tensor\(s\) "
                                          r"\(conv0, relu0\) is a buffer of .*network_c_info"):
        diverge_epochs(MOBILENET_OE, dump, mobilenet)


def test_a_c_info_of_another_model_maps_no_buffer(mobilenet: Path, tmp_path: Path) -> None:
    need(BLAZE_HYBRID)
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz")
    with pytest.raises(OracleError, match="none of its .* is a buffer of"):
        diverge_epochs(MOBILENET_OE, dump, BLAZE_HYBRID)


def test_a_record_of_the_wrong_size_names_record_and_files(mobilenet: Path,
                                                           tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz")
    with np.load(dump) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["Conv2D_8_zero_off_out_13"] = arrays["Conv2D_8_zero_off_out_13"].ravel()[:100]
    np.savez(dump, **arrays)
    with pytest.raises(OracleError, match=r"d.npz: record epoch_2 tensor "
                                          r"'Conv2D_8_zero_off_out_13' \(c_info .*\): 100"):
        diverge_epochs(MOBILENET_OE, dump, mobilenet)


def test_the_cli_names_the_first_diverging_epoch(mobilenet: Path, tmp_path: Path) -> None:
    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz", fault="epoch_12")
    proc = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "diverge",
                           str(MOBILENET_OE), str(dump), "--c-info", str(mobilenet)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    assert ("first diverging epoch: epoch_12 (HW: Conv2D_41 Conv, Conv2D_41_off_bias_99 Add, "
            "Conv2D_44_suboff_102 Sub), cos") in proc.stdout
    assert "model nodes: Conv2D_41" in proc.stdout


def test_validate_target_stores_the_epoch_comparison_for_the_report(
        mobilenet: Path, tmp_path: Path) -> None:
    from pytest_stedge.board.plugin import divergence_lines, epoch_c_info, per_epoch
    from pytest_stedge.report.board import board_view

    dump = dump_of(MOBILENET_OE, mobilenet, tmp_path / "d.npz", fault="epoch_12")
    out = tmp_path / "work" / "st_ai_output"
    out.mkdir(parents=True)
    (out / "network_c_info.json").write_bytes(mobilenet.read_bytes())
    c_info = epoch_c_info(tmp_path / "work")
    assert c_info == out / "network_c_info.json"
    result: dict[str, object] = {}
    per_epoch(result, MOBILENET_OE, dump, c_info)
    div = result["divergence"]
    assert isinstance(div, dict) and div["first_diverging"] == "epoch_12"
    assert div["kind"] == "HW" and div["model_nodes"] == ["Conv2D_41"]
    [line] = divergence_lines(result)  # the failure message and the failed-items table
    assert line.startswith("first diverging epoch: epoch_12 (HW: Conv2D_41 Conv")
    assert line.endswith("; model nodes Conv2D_41")
    [diag] = [d for d in result["diagnostics"] if d["kind"] == "FirstDivergence"]  # type: ignore[union-attr]
    assert "epoch_12" in diag["message"]
    view = board_view(result, {}, title="t")
    assert view is not None and view.per_epoch and view.first_kind == "HW"
    assert view.rows[11].epoch == "epoch_12" and view.rows[11].ok is False
    assert view.rows[11].buffer == "Conv2D_44_zero_off_out_103"

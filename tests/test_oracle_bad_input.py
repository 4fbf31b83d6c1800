"""Bad input to the oracle: each a clear error naming the file and what is wrong."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pytest_stedge.cli.main import main
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle import analyze_model, explain_c_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))
from tflite_nets import micro_conv

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases"
MICRO = SHARED / "n6-micro-convs-4flows" / "conv2d_16f_3x3" / "2.2.0-cubemx-target"


def test_a_built_tflite_micro_model_has_the_real_floor(tmp_path: Path) -> None:
    path = micro_conv(tmp_path / "micro.tflite")
    n6 = analyze_model(path)
    assert n6["format"] == "tflite" and n6["lower_bound_bytes"] == 64 * 64 * 3 + 16
    mcu = analyze_model(path, target="stm32h7")
    # the runtime typically stores the 64x64x16 conv output (it fuses window pooling
    # only) over its dying input; a kernel may accumulate the MEAN as the rows come and
    # write the 16 B over the dying input, so the floor is the input alone
    # the conv output is written over the dying input, then read by MEAN
    assert mcu["expected_bytes"] == 64 * 64 * 16 + 16
    assert mcu["lower_bound_bytes"] == 64 * 64 * 3


def test_not_a_flatbuffer(tmp_path: Path) -> None:
    bad = tmp_path / "model.tflite"
    bad.write_bytes(b"\x1c\x00\x00\x00XXXX" + b"\x00" * 64)
    with pytest.raises(OracleError, match=r"model\.tflite: not a TFLite flatbuffer"):
        analyze_model(bad)


def test_truncated_flatbuffer(tmp_path: Path) -> None:
    good = micro_conv(tmp_path / "micro.tflite").read_bytes()
    bad = tmp_path / "cut.tflite"
    bad.write_bytes(good[:40])
    with pytest.raises(OracleError, match=r"cut\.tflite: not a readable TFLite flatbuffer"):
        analyze_model(bad)


def test_unsupported_tflite_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_stedge.oracle.model import tflite as tflite_graph

    path = micro_conv(tmp_path / "micro.tflite")
    monkeypatch.delitem(tflite_graph.OPS, "MEAN")  # as if MEAN were an operator we do not know
    with pytest.raises(OracleError, match=r"micro\.tflite: unsupported TFLite operator MEAN"):
        analyze_model(path)


def test_keras_is_refused_with_advice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.h5"
    path.write_bytes(b"\x89HDF\r\n")
    with pytest.raises(OracleError, match=r"model\.h5: Keras models .* convert the model to TFLite"):
        analyze_model(path)
    assert main(["oracle", str(path)]) == 2
    assert "stedge: error:" in capsys.readouterr().err


@pytest.mark.skipif(not MICRO.is_dir(), reason=f"{MICRO} is absent")
def test_q_json_of_another_model(tmp_path: Path) -> None:
    oe = MICRO / "baseline_conv2d_16f_3x3_int8_OE_3_3_0.onnx"
    other = SHARED / "n6-micro-convs-4flows/conv2d_1x1/2.2.0-cubemx-target"
    copy = tmp_path / oe.name
    shutil.copy(oe, copy)
    shutil.copy(other / "baseline_conv2d_1x1_int8_OE_3_3_0_Q.json", tmp_path / f"{oe.stem}_Q.json")
    with pytest.raises(OracleError, match=r"_Q\.json: this _Q\.json was written for another file"):
        analyze_model(copy)
    shutil.copy(MICRO / f"{oe.stem}_Q.json", tmp_path / f"{oe.stem}_Q.json")
    # with its own _Q.json the OE graph is int8 and the NPU floor is the real tool's figure
    assert analyze_model(copy)["lower_bound_bytes"] == 12_304


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent")
def test_c_info_of_another_model() -> None:
    model = SHARED / "stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite"
    other = SHARED / "n6-packetqc-tcn-qwen2/tcn/4.0.0/network_c_info.json"
    with pytest.raises(OracleError, match=r"network_c_info\.json: c_info is from another model"):
        explain_c_info(model, other)


def test_unresolved_shapes_are_listed(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["X"], ["Y"], name="r")
    graph = helper.make_graph(
        [node], "dyn",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, "N"])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "N"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "dyn.onnx"
    onnx.save(model, str(path))
    report = analyze_model(path)
    assert sorted(report["unresolved_tensors"]) == ["X", "Y"]
    assert np.isscalar(report["lower_bound_bytes"]) or report["lower_bound_bytes"] is None

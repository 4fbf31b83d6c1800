"""Reference inference on the default stimulus, and the first divergent node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.cli.main import main
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.first_node import diverge
from pytest_stedge.oracle.accuracy.reference import reference_outputs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CONVS = SHARED / "real-cases" / "n6-micro-convs-4flows"


def _mlp(tmp_path: Path, layers: int = 4) -> Path:
    rng = np.random.default_rng(1)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        inits.append(
            numpy_helper.from_array(rng.standard_normal((8, 8)).astype("float32"), f"w{i}")
        )
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"dense{i}"))
        nodes.append(helper.make_node("Tanh", [f"m{i}"], [f"t{i}"], name=f"tanh{i}"))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    return path


def test_reference_on_the_default_stimulus(tmp_path: Path) -> None:
    path = _mlp(tmp_path)
    out = reference_outputs(path)
    x = out["m_inputs_1"]
    assert x.shape == (10, 8) and x.dtype == np.float32
    assert x[0, 0] == np.float32(np.random.RandomState(42).uniform(0, 1))
    assert out["m_outputs_1"].shape == (10, 8)
    assert out["output_names"] == ["t3"]


@pytest.mark.parametrize("name", ["conv2d_16f_3x3", "depthwise_3x3"])
def test_reference_agrees_with_the_tool_reference_to_one_lsb(name: str) -> None:
    case = CONVS / name / "2.2.0-cubemx-target"
    if not case.is_dir():
        pytest.skip(f"{case} is absent")
    ours = reference_outputs(next(case.glob("*.onnx")))
    theirs = np.load(case / "network_val_io.npz")["m_outputs_1"]
    assert ours["m_outputs_1"].shape == theirs.shape
    assert np.abs(ours["m_outputs_1"].astype(int) - theirs.astype(int)).max() <= 1


def test_reference_command_writes_a_val_io_like_npz(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _mlp(tmp_path)
    out = tmp_path / "ref.npz"
    assert main(["reference", str(path), "--out", str(out), "--samples", "3"]) == 0
    with np.load(out) as data:
        assert sorted(data.files) == ["m_inputs_1", "m_outputs_1"]
        assert data["m_outputs_1"].shape == (3, 8)
    assert "wrote" in capsys.readouterr().out


def test_unsupported_operator_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example", name="custom")
    graph = helper.make_graph(
        [node],
        "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    )
    model.ir_version = 8
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    with pytest.raises(OracleError, match="onnxruntime cannot run this model"):
        reference_outputs(path)
    assert main(["reference", str(path), "--out", str(tmp_path / "r.npz")]) == 2
    assert "custom.onnx" in capsys.readouterr().err
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\x00junk" * 8)
    with pytest.raises(OracleError, match="not an ONNX model"):
        reference_outputs(junk)


def _dump_with_fault(path: Path, x: np.ndarray, bad_from: str) -> dict[str, np.ndarray]:
    """Per-node outputs of the model on x; from node `bad_from` on, a corrupted computation."""
    model = onnx.load(str(path))
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    values: dict[str, np.ndarray] = {"x": x}
    broken = False
    for node in model.graph.node:
        broken = broken or node.name == bad_from
        a = values[node.input[0]]
        if node.op_type == "MatMul":
            w = weights[node.input[1]]
            out = a @ (w[::-1] if broken else w)  # wrong weight order once broken
        else:
            out = np.tanh(a)
        values[node.output[0]] = out.astype(np.float32)
    return values


def test_diverge_names_the_first_bad_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _mlp(tmp_path)
    x = np.random.RandomState(0).uniform(0, 1, (1, 8)).astype(np.float32)
    dump = _dump_with_fault(path, x, "dense2")
    result = diverge(path, dump)
    assert result["input_source"] == "dump"
    assert result["first_divergent"]["node"] == "dense2"
    assert [r["node"] for r in result["rows"]] == ["dense0", "tanh0", "dense1", "tanh1", "dense2"]
    assert all(r["ok"] for r in result["rows"][:-1])
    assert result["rows"][0]["cos"] == pytest.approx(1.0, abs=1e-6)
    npz = tmp_path / "dump.npz"
    np.savez(npz, **dump)
    assert main(["diverge", str(path), str(npz)]) == 1
    assert "first divergent node: dense2 (MatMul)" in capsys.readouterr().out
    clean = _dump_with_fault(path, x, "nowhere")
    np.savez(npz, **clean)
    assert main(["diverge", str(path), str(npz), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_divergent"] is None


def test_diverge_with_node_names_and_no_input(tmp_path: Path) -> None:
    path = _mlp(tmp_path)
    result = diverge(path, {"dense0": np.zeros((1, 8), np.float32), "junk": np.zeros(3)})
    assert result["input_source"].startswith("default stimulus")
    assert result["unmatched"] == ["junk"]
    assert result["first_divergent"]["node"] == "dense0"
    with pytest.raises(OracleError, match="no key of the dump"):
        diverge(path, {"junk": np.zeros(3)})

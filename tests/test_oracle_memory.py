"""The oracle's facts and activation memory: exact figures on hand-built graphs,
bounds and checked plans on the onnx package's real architectures, bad input."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle import analyze_model
from pytest_stedge.oracle.memory.planner import Item, check_plan, plan_offsets

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"

F = TensorProto.FLOAT


def _save(
    tmp_path: Path,
    name: str,
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    inits: list[Any] = (),
    opset: int = 17,
) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _init(name: str, array: np.ndarray) -> Any:
    return numpy_helper.from_array(array, name)


def chain(tmp_path: Path) -> Path:
    """X[1,8] -MatMul-> A[1,16] -Relu-> B[1,16] -MatMul-> Y[1,4] (float32)."""
    nodes = [
        helper.make_node("MatMul", ["X", "W1"], ["A"], name="mm1"),
        helper.make_node("Relu", ["A"], ["B"], name="relu"),
        helper.make_node("MatMul", ["B", "W2"], ["Y"], name="mm2"),
    ]
    inits = [_init("W1", np.ones((8, 16), "float32")), _init("W2", np.ones((16, 4), "float32"))]
    return _save(
        tmp_path,
        "chain",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, 8])],
        [helper.make_tensor_value_info("Y", F, [1, 4])],
        inits,
    )


def test_chain_figures_are_exact(tmp_path: Path) -> None:
    r = analyze_model(chain(tmp_path))
    # float nodes run in software on the N6. Typical (stored in the file's order): mm1
    # X+A = 96, relu A+B = 128, mm2 B+Y = 80. Floor: a one-row dense layer's output
    # cannot overwrite its input (each output reads all of it): mm1 X+A = 96; the Relu
    # runs inside mm1 or in place (A+B-64 = 64); mm2 B+Y = 80
    assert r["lower_bound_bytes"] == 96
    assert r["typical_bound_bytes"] == 128
    assert r["plan_bytes"] == 128
    assert r["naive_bytes"] == 32 + 64 + 64 + 16
    assert r["peak_tensors"] == ["A", "B"]
    assert r["params"] == 8 * 16 + 16 * 4
    assert r["weight_bytes"] == 4 * (8 * 16 + 16 * 4)
    assert r["op_counts"] == {"MatMul": 2, "Relu": 1}
    assert r["tensors"] == 4
    assert r["unresolved_tensors"] == []
    assert r["quantized_nodes"] == 0
    assert [n["op_type"] for n in r["float_nodes"]] == ["MatMul", "Relu", "MatMul"]


def test_fan_out_keeps_the_shared_tensor_alive(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["X"], ["A"], name="relu"),
        helper.make_node("Sigmoid", ["A"], ["B"], name="sig"),
        helper.make_node("Tanh", ["A"], ["C"], name="tanh"),
        helper.make_node("Add", ["B", "C"], ["Y"], name="add"),
    ]
    path = _save(
        tmp_path,
        "fanout",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, 16])],
        [helper.make_tensor_value_info("Y", F, [1, 16])],
    )
    r = analyze_model(path, details=True)
    # in the file's order A lives until tanh: A+B+C = 192 at tanh, B+C+Y = 192 at add.
    # Floor: Y may be written over B (element-wise, B dies at add): B+C+Y-64 = 128;
    # at tanh, C over the dying A with B held: 128; no order does better at add
    assert r["lower_bound_bytes"] == 128
    assert r["typical_bound_bytes"] == 192
    assert r["plan_bytes"] == 192
    assert r["naive_bytes"] == 5 * 64
    assert r["peak_tensors"] == ["A", "B", "C"]
    assert r["peak_node"] == "tanh"
    lifetimes = {b["name"]: (b["start"], b["end"]) for b in r["buffers"]}
    assert lifetimes == {"X": (0, 0), "A": (0, 2), "B": (1, 3), "C": (2, 3), "Y": (3, 3)}


def test_residual_block_keeps_the_skip_alive(tmp_path: Path) -> None:
    w = np.full((4, 4, 3, 3), 0.1, "float32")
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["A"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["A"], ["B"], name="relu1"),
        helper.make_node("Conv", ["B", "W2", "B2"], ["C"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["X", "C"], ["D"], name="add"),
        helper.make_node("Relu", ["D"], ["Y"], name="relu2"),
    ]
    inits = [
        _init("W1", w),
        _init("W2", w),
        _init("B1", np.zeros(4, "float32")),
        _init("B2", np.zeros(4, "float32")),
    ]
    path = _save(
        tmp_path,
        "residual",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("Y", F, [1, 4, 8, 8])],
        inits,
    )
    r = analyze_model(path)
    # every tensor is 1,024 B; X stays live until add: three tensors at the peak in the
    # file's order. Floor: conv1 holds X (read again by add) and its output (relu1 inside
    # it): 2,048; conv2 writes C over the dying B next to X: 2,048; add writes D over C
    assert r["lower_bound_bytes"] == 2048
    assert r["typical_bound_bytes"] == 3072
    assert r["plan_bytes"] == 3072
    assert r["naive_bytes"] == 6 * 1024
    assert r["peak_tensors"] == ["X", "A", "B"]
    assert r["params"] == 2 * (4 * 4 * 9 + 4)
    assert r["weight_bytes"] == 4 * r["params"]


def _qdq_chain(tmp_path: Path, tail: str) -> Path:
    """float X -> Q -> DQ -> MatMul(int8 W) -> Q -> DQ -> tail ... (int8 1 byte per element)."""
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "s", "z"], ["Xq"], name="q_in"),
        helper.make_node("DequantizeLinear", ["Xq", "s", "z"], ["Xf"], name="dq_in"),
        helper.make_node("DequantizeLinear", ["Wq", "s", "z"], ["Wf"], name="dq_w"),
        helper.make_node("MatMul", ["Xf", "Wf"], ["Y"], name="mm"),
        helper.make_node("QuantizeLinear", ["Y", "s", "z"], ["Yq"], name="q_y"),
        helper.make_node("DequantizeLinear", ["Yq", "s", "z"], ["Yf"], name="dq_y"),
    ]
    if tail == "relu":
        nodes += [
            helper.make_node("Relu", ["Yf"], ["R"], name="relu"),
            helper.make_node("QuantizeLinear", ["R", "s", "z"], ["Rq"], name="q_r"),
            helper.make_node("DequantizeLinear", ["Rq", "s", "z"], ["Z"], name="dq_out"),
        ]
    else:
        nodes.append(helper.make_node("Softmax", ["Yf"], ["Z"], name="softmax"))
    inits = [
        _init("s", np.array(0.1, "float32")),
        _init("z", np.array(0, "int8")),
        _init("Wq", np.ones((16, 8), "int8")),
    ]
    return _save(
        tmp_path,
        f"qdq_{tail}",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, 16])],
        [helper.make_tensor_value_info("Z", F, [1, 8])],
        inits,
    )


def test_qdq_chain_folds_into_int8_operators(tmp_path: Path) -> None:
    r = analyze_model(_qdq_chain(tmp_path, "relu"), details=True)
    assert r["qdq"] is True
    assert r["quantized_nodes"] == 2  # MatMul and Relu
    assert r["float_nodes"] == []
    # X (int8 16 B) + Y (int8 8 B) at the MatMul; the float tensors between Q/DQ do not exist
    assert r["lower_bound_bytes"] == 24
    assert r["plan_bytes"] == 24
    assert r["naive_bytes"] == 16 + 8 + 8
    assert r["steps"] == 2
    assert (
        r["params"] == 128 and r["weight_bytes"] == 128
    )  # int8 weights 1 byte, scales not weights
    assert r["op_counts"]["QuantizeLinear"] == 3


def test_qdq_node_left_in_float_is_named_and_costs_4_bytes(tmp_path: Path) -> None:
    r = analyze_model(_qdq_chain(tmp_path, "softmax"))
    assert r["float_nodes"] == [{"name": "softmax", "op_type": "Softmax"}]
    assert r["quantized_nodes"] == 1
    # typical steps: mm (X 16 + Y 8), dq_y (Y 8 + Yf 32), softmax (Yf 32 + Z 32) = 64;
    # floor: the conversion and the softmax may run in place: max(8, 32), max(32, 32)
    assert r["typical_bound_bytes"] == 64
    assert r["lower_bound_bytes"] == 32
    assert r["naive_bytes"] == 16 + 8 + 32 + 32


LIGHT_BOUNDS = {
    "light_bvlc_alexnet": 2_239_488,
    "light_densenet121": 8_429_568,
    "light_inception_v1": 6_422_528,
    "light_inception_v2": 6_422_528,
    "light_resnet50": 9_633_792,
    "light_shufflenet": 3_110_912,
    "light_squeezenet": 6_308_352,
    "light_vgg19": 25_690_112,
    "light_zfnet512": 9_124_608,
}


@pytest.mark.parametrize("name", sorted(LIGHT_BOUNDS))
def test_light_models_bound_plan_naive(name: str) -> None:
    path = LIGHT / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path} not shipped by this onnx version")
    r = analyze_model(path, details=True)
    assert r["unresolved_tensors"] == []
    # the plan places the typical deployment's buffers (file order, stored tensors)
    assert r["typical_bound_bytes"] == LIGHT_BOUNDS[name]
    assert r["lower_bound_bytes"] <= r["typical_bound_bytes"] <= r["plan_bytes"] <= r["naive_bytes"]
    assert r["plan_bytes"] <= 1.01 * r["typical_bound_bytes"]
    # The plan never overlaps two live tensors: check it independently of the planner.
    bufs = [b for b in r["buffers"] if b["bytes"]]
    last = max(b["end"] for b in bufs)
    for t in range(last + 1):
        spans = sorted(
            (b["offset"], b["offset"] + b["bytes"]) for b in bufs if b["start"] <= t <= b["end"]
        )
        assert all(hi <= lo2 for (_, hi), (lo2, _) in itertools.pairwise(spans)), (
            f"overlap at step {t}"
        )
        assert sum(h - lo for lo, h in spans) <= r["typical_bound_bytes"]


def test_plan_check_rejects_overlap() -> None:
    items = [Item("a", 10, 0, 1), Item("b", 10, 1, 2)]
    with pytest.raises(OracleError, match="overlaps live buffers"):
        check_plan(items, {"a": 0, "b": 5})
    check_plan(items, {"a": 0, "b": 10})
    assert plan_offsets(items).size == 20
    assert plan_offsets([Item("a", 10, 0, 0), Item("b", 10, 1, 1)]).size == 10


def _real(relative: str) -> Path:
    path = SHARED / "real-cases" / relative
    if not path.is_file():
        pytest.skip(f"real cases not available: {path} is absent")
    return path


def test_float_policy_matches_the_tool_figures() -> None:
    # stedgeai 2.2.0 reported 161,444 B of weights and 1,160 B of activations for it
    r = analyze_model(_real("stm32h7-policy-3regens/policy.onnx"), target="stm32h7")
    assert r["weight_bytes"] == 161_444
    assert r["lower_bound_bytes"] == 1_160
    assert r["unresolved_tensors"] == []


def test_int8_tcn_weights_and_computed_pads_resolve() -> None:
    # the Pad amounts are computed by a Constant/Concat/Slice chain: shapes resolve by folding
    r = analyze_model(_real("n6-packetqc-tcn-qwen2/tcn/model_npu_int8.onnx"))
    assert r["unresolved_tensors"] == []
    assert r["weight_bytes"] == 492_504  # the tool's 4.0.0 figure
    assert r["float_nodes"] == []
    # the default target is the N6 NPU, whose convolutions never write over their input:
    # the head conv holds its input and output, 8,192 + 11,968
    assert r["lower_bound_bytes"] == r["typical_bound_bytes"] == 20_160
    # the software runtime (the tool's own run: 23,936 B) may write the head's output
    # over its dying input: the floor is that 11,968 B output
    sw = analyze_model(_real("n6-packetqc-tcn-qwen2/tcn/model_npu_int8.onnx"), target="stm32n6")
    assert sw["deployment"]["family"] == "n6-sw" and sw["lower_bound_bytes"] == 11_968


def test_dynamic_shapes_are_reported_not_zero(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["X"], ["A"], name="r1"),
        helper.make_node("Relu", ["A"], ["Y"], name="r2"),
    ]
    path = _save(
        tmp_path,
        "dyn",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, "N"])],
        [helper.make_tensor_value_info("Y", F, [1, "N"])],
    )
    r = analyze_model(path)
    assert sorted(r["unresolved_tensors"]) == ["A", "X", "Y"]
    assert r["lower_bound_bytes"] is None and r["plan_bytes"] is None and r["naive_bytes"] is None
    assert r["tensors"] == 3


def test_symbolic_batch_is_batch_one(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="r")]
    path = _save(
        tmp_path,
        "batch",
        nodes,
        [helper.make_tensor_value_info("X", F, ["batch", 10])],
        [helper.make_tensor_value_info("Y", F, ["batch", 10])],
    )
    r = analyze_model(path)
    assert r["unresolved_tensors"] == []
    assert r["typical_bound_bytes"] == 80  # X and Y, 1x10 float each
    assert r["lower_bound_bytes"] == 40  # the Relu may run in place


def test_not_onnx_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"\x00\xffnot a protobuf at all" * 10)
    with pytest.raises(OracleError, match="not an ONNX model"):
        analyze_model(bad)
    with pytest.raises(OracleError, match="no such model file"):
        analyze_model(tmp_path / "missing.onnx")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(OracleError, match=str(empty.name)):
        analyze_model(empty)


def test_report_is_json_serialisable(tmp_path: Path) -> None:
    import json

    r = analyze_model(chain(tmp_path))
    assert json.loads(json.dumps(r)) == r


def test_oracle_command_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_stedge.cli.main import main

    path = _qdq_chain(tmp_path, "softmax")
    assert main(["oracle", str(path)]) == 0
    out = capsys.readouterr().out
    assert "float: softmax (Softmax)" in out
    assert "floor (lower bound):    32 B" in out
    assert main(["oracle", str(path), "--json", "--tensors"]) == 0
    report = __import__("json").loads(capsys.readouterr().out)
    assert report["plan_bytes"] == 64 and len(report["buffers"]) == 4
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="r")]
    dyn = _save(
        tmp_path,
        "dyn2",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, "N"])],
        [helper.make_tensor_value_info("Y", F, [1, "N"])],
    )
    assert main(["oracle", str(dyn)]) == 0
    assert "2 tensor(s) with unresolved shapes" in capsys.readouterr().out


def test_int8_input_and_layout_ops_stay_int8(tmp_path: Path) -> None:
    i8 = TensorProto.INT8
    nodes = [
        helper.make_node("Reshape", ["X", "shape"], ["Xr"], name="reshape"),
        helper.make_node("QuantizeLinear", ["Xr", "s", "z"], ["Xq"], name="q_in"),
        helper.make_node("Transpose", ["Xq"], ["T"], perm=[1, 0], name="transpose"),
        helper.make_node("DequantizeLinear", ["T", "s", "z"], ["Tf"], name="dq"),
        helper.make_node("Relu", ["Tf"], ["R"], name="relu"),
        helper.make_node("QuantizeLinear", ["R", "s", "z"], ["Y"], name="q_out"),
    ]
    inits = [
        _init("s", np.array(0.1, "float32")),
        _init("z", np.array(0, "int8")),
        _init("shape", np.array([4, 8], "int64")),
    ]
    path = _save(
        tmp_path,
        "int8io",
        nodes,
        [helper.make_tensor_value_info("X", F, [1, 32])],
        [helper.make_tensor_value_info("Y", i8, [8, 4])],
        inits,
    )
    r = analyze_model(path)
    # the float input only reaches a QuantizeLinear through a Reshape: int8 on the target
    assert r["float_nodes"] == []
    assert r["quantized_nodes"] == 3  # reshape, transpose, relu
    # steps: reshape (X=Xr=Xq 32 B, one buffer), transpose (X + T), relu (T + Y) = 64;
    # the transpose and the relu may write over their dying inputs (the N6 transposes its
    # input in place: Input_0_out_0 / Transpose_1_out_0 share addresses in the c_info)
    assert r["typical_bound_bytes"] == 64
    assert r["lower_bound_bytes"] == 32
    assert r["naive_bytes"] == 96

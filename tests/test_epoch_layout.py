"""How the tool's OE model lays out each tensor relative to the user's model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.accuracy.epoch_layout import identity, oe_layouts, to_layout
from pytest_stedge.oracle.accuracy.refmodel import load_reference

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
BLAZE = SHARED / "real-cases/n6-blazeface-2profiles"
BLAZE_OE = (BLAZE / "2.2.0-profile-default-cli/generate-2025-08-25/"
            "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0.onnx")
BLAZE_TFLITE = BLAZE / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite"


def _model(path: Path, nodes: list, inits: list, shape: list[int], out: str) -> Path:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture
def tools_view(tmp_path: Path) -> Path:
    """NHWC input, to NCHW, a channel pad in N,H,C,W, back, then a flatten."""
    pads = numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 1, 0], np.int64), "pads")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2], name="T1"),
             helper.make_node("Relu", ["nchw"], ["r"], name="R"),
             helper.make_node("Transpose", ["r"], ["nhcw"], perm=[0, 2, 1, 3], name="T2"),
             helper.make_node("Pad", ["nhcw", "pads"], ["padded"], name="P"),
             helper.make_node("Transpose", ["padded"], ["back"], perm=[0, 2, 1, 3], name="T3"),
             helper.make_node("Reshape", ["back", "shape"], ["flat"], name="F")]
    return _model(tmp_path / "oe.onnx", nodes, [pads, shape], [1, 3, 3, 2], "flat")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["flat"], name="F")]
    return _model(tmp_path / "user.onnx", nodes, [shape], [1, 3, 3, 2], "flat")


def test_transposes_compose_and_other_operators_keep_their_input_s_layout(
        tools_view: Path, user: Path) -> None:
    layout = oe_layouts(load_reference(tools_view), load_reference(user))
    assert layout["x"] == (0, 1, 2, 3)
    assert layout["nchw"] == layout["r"] == (0, 3, 1, 2)
    # N,C,H,W then [0, 2, 1, 3]: N,H,C,W, i.e. the user's N,H,W,C with W and C swapped
    assert layout["nhcw"] == layout["padded"] == (0, 1, 3, 2)
    assert layout["back"] == (0, 3, 1, 2)
    # flattening a channel-first tensor changes the element order: not knowable
    assert layout["flat"] is None


def test_the_permutation_is_what_the_values_say(tools_view: Path, user: Path) -> None:
    oe, mine = load_reference(tools_view), load_reference(user)
    x = np.arange(18, dtype=np.float32).reshape(1, 3, 3, 2)
    values = oe.run({"x": x})
    layout = oe_layouts(oe, mine)
    for name in ("nchw", "nhcw"):
        np.testing.assert_array_equal(values[name], x.transpose(layout[name]))


def test_the_user_s_own_model_is_in_its_own_order(user: Path) -> None:
    ref = load_reference(user)
    layout = oe_layouts(ref, ref)
    assert (layout["x"], layout["flat"]) == ((0, 1, 2, 3), (0, 1))


def test_an_input_of_another_shape_has_no_known_layout(tools_view: Path, tmp_path: Path) -> None:
    other = _model(tmp_path / "o.onnx", [helper.make_node("Relu", ["x"], ["y"], name="R")], [],
                   [1, 2, 3, 3], "y")
    layout = oe_layouts(load_reference(tools_view), load_reference(other))
    assert layout["x"] is None and layout["r"] is None


def test_to_layout_moves_or_refuses() -> None:
    value = np.arange(24).reshape(1, 2, 3, 4)
    assert to_layout(value, (0, 3, 1, 2), (1, 4, 2, 3)).shape == (1, 4, 2, 3)
    np.testing.assert_array_equal(to_layout(value, (0, 3, 1, 2), (1, 4, 2, 3)),
                                  value.transpose(0, 3, 1, 2))
    assert to_layout(np.zeros((1, 10)), identity(4), (1, 1, 1, 10)).shape == (1, 1, 1, 10)
    with pytest.raises(ValueError, match="not known"):
        to_layout(value, None, (1, 2, 3, 4))
    with pytest.raises(ValueError, match="not the buffer's"):
        to_layout(value, identity(4), (1, 3, 2, 4))  # same size, other dimensions
    with pytest.raises(ValueError, match="does not apply"):
        to_layout(np.zeros((2, 12)), (0, 3, 1, 2), (1, 24))


def test_blazeface_s_channel_pad_runs_in_n_h_c_w(tmp_path: Path) -> None:
    for path in (BLAZE_OE, BLAZE_TFLITE):
        if not path.is_file():
            pytest.skip(f"{path} is absent (the real tool outputs live in ../shared)")
    pytest.importorskip("ai_edge_litert", reason="LiteRT (ai-edge-litert) runs TFLite models")
    oe, tfl = load_reference(BLAZE_OE), load_reference(BLAZE_TFLITE)
    layout = oe_layouts(oe, tfl)
    assert layout["Transpose_1_out_0"] == (0, 3, 1, 2)
    assert layout["Pad_42_out_0"] == (0, 1, 3, 2)  # PAD_12 of the tflite (1x32x32x32)
    assert layout["Transpose_43_out_0"] == (0, 3, 1, 2)
    # the values agree only in that order (all four dimensions are 32)
    x = np.random.RandomState(42).uniform(0, 1, (1, 128, 128, 3)).astype(np.float32)
    mine = tfl.run({tfl.inputs[0]: x})["functional_1/tf_op_layer_Pad_1/Pad_1;"
                                           "functional_1/tf_op_layer_Pad_1/Pad_1"]
    theirs = oe.run({oe.inputs[0]: x})["Pad_42_out_0"]
    right = to_layout(mine, layout["Pad_42_out_0"], theirs.shape)
    wrong = to_layout(mine, (0, 3, 1, 2), theirs.shape)
    step = 0.024326235055923462  # the tensor's scale (tflite)
    # two int8 runtimes: most elements equal, a few one or more steps apart
    assert np.mean(np.abs(right - theirs) <= step) > 0.9  # measured 0.945
    assert np.mean(np.abs(wrong - theirs) <= step) < 0.3  # measured 0.160


def test_a_buffer_quantized_otherwise_is_not_mapped_to_the_tensor() -> None:
    from pytest_stedge.oracle.accuracy.epoch_names import Namer, open_models
    from pytest_stedge.oracle.accuracy.epoch_plan import load_plan

    info = BLAZE_OE.parent / "network_c_info.json"
    for path in (BLAZE_OE, BLAZE_TFLITE, info):
        if not path.is_file():
            pytest.skip(f"{path} is absent (the real tool outputs live in ../shared)")
    pytest.importorskip("ai_edge_litert", reason="LiteRT (ai-edge-litert) runs TFLite models")
    plan = load_plan(info)
    ref, oe, renames, _ = open_models(BLAZE_TFLITE, info)
    namer = Namer(plan, ref, oe, renames)
    buf = plan.by_name["Conv2D_37_off_bias_out_61"]
    found = namer.resolve(buf)
    # measured on both BlazeFace c_infos: all 32 mapped buffers with a scale have the
    # scale of the tflite tensor they map to (relative difference < 1e-6)
    assert found.tensor is not None and ref.quant[found.tensor][0] == pytest.approx(
        buf.scales[0], rel=1e-6)
    ref.quant[found.tensor] = (buf.scales[0] * 2, ref.quant[found.tensor][1])
    refused = Namer(plan, ref, oe, renames).resolve(buf)
    assert refused.tensor is None and "is not the tensor's" in refused.how


def _two_inputs(path: Path, nodes: list, inits: list, out: str) -> Path:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 3, 2]),
                     helper.make_tensor_value_info("v", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_data_inputs_decide_constants_do_not_and_they_must_agree(tmp_path: Path) -> None:
    half = numpy_helper.from_array(np.full((1,), 0.5, np.float32), "half")
    same = numpy_helper.from_array(np.array([1, 2, 3, 3], np.int64), "same")
    other = numpy_helper.from_array(np.array([1, 3, 2, 3], np.int64), "other")
    nodes = [helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2], name="T"),
             helper.make_node("Mul", ["half", "nchw"], ["scaled"], name="M"),  # const first
             helper.make_node("Add", ["scaled", "v"], ["shifted"], name="A"),  # broadcast
             helper.make_node("Reshape", ["nchw", "same"], ["kept"], name="R1"),
             helper.make_node("Reshape", ["nchw", "other"], ["moved"], name="R2"),
             helper.make_node("Add", ["moved", "scaled"], ["mixed"], name="A2"),
             helper.make_node("Reshape", ["x", "other"], ["plain"], name="R3"),
             helper.make_node("Transpose", ["x"], ["reversed"], name="T2")]
    oe = _two_inputs(tmp_path / "oe.onnx", nodes, [half, same, other], "mixed")
    user = _two_inputs(tmp_path / "u.onnx", [helper.make_node("Relu", ["x"], ["y"])], [], "y")
    layout = oe_layouts(load_reference(oe), load_reference(user))
    assert layout["v"] == (0,)
    assert layout["scaled"] == (0, 3, 1, 2)  # the Mul follows its data, not its constant
    assert layout["shifted"] == (0, 3, 1, 2)  # a broadcast vector does not blur it
    assert layout["kept"] is None and layout["moved"] is None  # any reshape of NCHW
    assert layout["mixed"] is None  # one input unknown: the sum is unknown
    assert layout["plain"] == (0, 1, 2, 3)  # a reshape of the user's own order keeps it
    assert layout["reversed"] == (3, 2, 1, 0)  # Transpose without perm reverses the axes


def test_an_input_the_user_s_model_lacks_has_no_layout(tmp_path: Path) -> None:
    shape = numpy_helper.from_array(np.array([3], np.int64), "shape3")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape3"], ["line"], name="R"),
         helper.make_node("Add", ["w", "line"], ["sum"], name="A")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 1]),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, None)], [shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "oe.onnx")
    user = _model(tmp_path / "u.onnx", [helper.make_node("Relu", ["x"], ["y"])], [],
                  [1, 3, 1, 1], "y")
    layout = oe_layouts(load_reference(tmp_path / "oe.onnx"), load_reference(user))
    assert layout["line"] == (0,) and "w" not in layout
    assert layout["sum"] is None  # w's order is nobody's: the sum's is unknown

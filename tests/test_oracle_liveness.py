"""Liveness of deployed activation buffers on small graphs whose figures are counted by hand.

A buffer is live from the step that writes it (inputs: step 0) to the last step that reads
it (outputs: the last step), both inclusive; the lower bound is the largest sum of live
buffers over the steps. Every expected figure below is worked out in the comment beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.memory.liveness import analyze_liveness
from pytest_stedge.oracle.model.facts import classify
from pytest_stedge.oracle.model.graph import build_graph

F32, I8 = TensorProto.FLOAT, TensorProto.INT8


def _model(nodes: list[Any], inputs: list[tuple[str, int, list[Any]]],
           outputs: list[tuple[str, int, list[Any]]], inits: list[Any] = ()) -> Any:  # type: ignore[assignment]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _live(model: Any):  # type: ignore[no-untyped-def]
    graph = build_graph(model)
    return analyze_liveness(graph, classify(graph))


def _spans(live: Any) -> dict[str, tuple[int | None, int, int]]:
    return {b.name: (b.size, b.start, b.end) for b in live.buffers}


def test_a_chain_keeps_only_the_running_node_inputs_and_outputs() -> None:
    # x -> Relu -> r -> Relu -> s -> Relu -> y, every tensor 1x4 float = 16 B
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"], name="a"),
         helper.make_node("Relu", ["r"], ["s"], name="b"),
         helper.make_node("Relu", ["s"], ["y"], name="c")],
        [("x", F32, [1, 4])], [("y", F32, [1, 4])],
    )
    live = _live(model)
    assert [(s.node, s.reads, s.writes) for s in live.steps] == [
        ("a", ["x"], ["r"]), ("b", ["r"], ["s"]), ("c", ["s"], ["y"])]
    # x read at step 0; r written 0 read 1; s written 1 read 2; y written 2, an output
    assert _spans(live) == {"x": (16, 0, 0), "r": (16, 0, 1), "s": (16, 1, 2), "y": (16, 2, 2)}
    # every step holds two 16 B buffers: 32 B; the first step with the peak is reported
    assert (live.lower_bound, live.peak_step, live.peak) == (32, 0, ["x", "r"])
    assert live.naive == 64 and live.unresolved == []
    assert [b.name for b in live.resolved()] == ["x", "r", "s", "y"]


def test_a_skip_connection_keeps_its_source_alive_and_the_peak_is_where_it_is_read() -> None:
    # x(1x8 f32, 32 B) -> Relu a -> r ; r -> Relu b -> s ; Add(r, s) -> y
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"], name="a"),
         helper.make_node("Relu", ["r"], ["s"], name="b"),
         helper.make_node("Add", ["r", "s"], ["y"], name="c")],
        [("x", F32, [1, 8])], [("y", F32, [1, 8])],
    )
    live = _live(model)
    assert _spans(live) == {"x": (32, 0, 0), "r": (32, 0, 2), "s": (32, 1, 2), "y": (32, 2, 2)}
    # step 0: x + r = 64; step 1: r + s = 64; step 2: r + s + y = 96
    assert (live.lower_bound, live.peak_step, sorted(live.peak)) == (96, 2, ["r", "s", "y"])
    assert live.naive == 128


def test_view_operators_write_into_the_buffer_they_read() -> None:
    shape = numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "shape")
    # x(1x8) -> Relu -> a(1x8) -> Reshape -> b(2x4) -> Relu -> y(2x4), all f32 = 32 B
    model = _model(
        [helper.make_node("Relu", ["x"], ["a"], name="r1"),
         helper.make_node("Reshape", ["a", "shape"], ["b"], name="view"),
         helper.make_node("Relu", ["b"], ["y"], name="r2")],
        [("x", F32, [1, 8])], [("y", F32, [2, 4])], [shape],
    )
    live = _live(model)
    assert [s.op_type for s in live.steps] == ["Relu", "Reshape", "Relu"]
    (ab,) = [b for b in live.buffers if "b" in b.members]
    assert sorted(ab.members) == ["a", "b"] and (ab.size, ab.start, ab.end) == (32, 0, 2)
    # step 0: x + a/b = 64; step 1: a/b = 32; step 2: a/b + y = 64
    assert (live.lower_bound, live.peak_step) == (64, 0)
    assert live.naive == 96  # x, a/b once, y


def test_a_qdq_model_is_counted_in_int8_as_deployed() -> None:
    scale = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int8), "z")
    # float x (1x16) -> Q -> DQ -> Relu -> Q -> DQ -> y: the Relu runs in int8, the input
    # and output are int8 on the target: two 16 B buffers, not four 64 B ones
    model = _model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
         helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
         helper.make_node("Relu", ["xd"], ["r"], name="relu"),
         helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q1"),
         helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dq1")],
        [("x", F32, [1, 16])], [("y", F32, [1, 16])], [scale, zero],
    )
    live = _live(model)
    assert [(s.node, s.reads) for s in live.steps] == [("relu", ["xq"])]
    # the tensors the steps and the graph name, grouped: x with xq, r with y
    assert sorted((b.size, sorted(b.members)) for b in live.buffers) == [
        (16, ["r", "y"]), (16, ["x", "xq"])]
    assert (live.lower_bound, live.naive) == (32, 32)
    # one step: the output lives on that step only
    assert [(b.start, b.end) for b in live.buffers] == [(0, 0), (0, 0)]


def test_a_float_model_between_dq_and_q_stays_float_where_it_is_float() -> None:
    scale = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int8), "z")
    # the Softmax between DQ and the output has no Q after it: it runs in float
    model = _model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
         helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
         helper.make_node("Softmax", ["xd"], ["y"], name="sm")],
        [("x", F32, [1, 16])], [("y", F32, [1, 16])], [scale, zero],
    )
    live = _live(model)
    # the DequantizeLinear runs (its user is float): x stays int8 (16 B, it only feeds a Q),
    # xd and y are 1x16 float (64 B)
    assert [(s.node, s.reads, s.writes) for s in live.steps] == [
        ("dq0", ["xq"], ["xd"]), ("sm", ["xd"], ["y"])]
    assert _spans(live) == {"x": (16, 0, 0), "xd": (64, 0, 1), "y": (64, 1, 1)}
    # step 0: 16 + 64 = 80; step 1: 64 + 64 = 128
    assert (live.lower_bound, live.peak_step, live.peak) == (128, 1, ["xd", "y"])


def test_unused_optional_outputs_are_not_computed_and_unknown_shapes_are_listed() -> None:
    # Dropout's mask nobody reads is not a buffer; a symbolic length leaves y unresolved
    model = _model(
        [helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop"),
         helper.make_node("Relu", ["d"], ["y"], name="relu")],
        [("x", F32, [1, 4])], [("y", F32, [1, 4])],
    )
    live = _live(model)
    assert [s.writes for s in live.steps] == [["d"], ["y"]]
    assert "mask" not in {m for b in live.buffers for m in b.members}
    symbolic = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", F32, [1, "L"])], [("y", F32, [1, "L"])],
    )
    unknown = _live(symbolic)
    assert sorted(unknown.unresolved) == ["x", "y"]
    assert unknown.lower_bound == 0 and unknown.naive == 0 and unknown.resolved() == []


def test_an_output_read_again_lives_to_the_last_step() -> None:
    # x -> Relu a -> o (a graph output) ; o -> Relu b -> p -> Relu c -> y
    model = _model(
        [helper.make_node("Relu", ["x"], ["o"], name="a"),
         helper.make_node("Relu", ["o"], ["p"], name="b"),
         helper.make_node("Relu", ["p"], ["y"], name="c")],
        [("x", F32, [1, 2])], [("o", F32, [1, 2]), ("y", F32, [1, 2])],
    )
    live = _live(model)
    assert _spans(live)["o"] == (8, 0, 2)  # an output stays until the end
    # step 2: o + p + y = 24; step 1: o + p = 16; step 0: x + o = 16
    assert (live.lower_bound, live.peak_step) == (24, 2)


def test_a_graph_with_no_compute_node_has_a_zero_bound() -> None:
    model = _model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                   [("x", F32, [1, 3])], [("y", F32, [1, 3])])
    live = _live(model)
    # the Identity is a view: x and y share one 12 B buffer over the single step
    assert [sorted(b.members) for b in live.buffers] == [["x", "y"]]
    assert (live.lower_bound, live.naive, live.peak_step) == (12, 12, 0)


def test_int8_inputs_and_int8_tensors_mix_to_the_narrowest_type() -> None:
    # an int8 graph input feeding a float Cast: the alias group keeps each member's type
    model = _model(
        [helper.make_node("Cast", ["x"], ["c"], name="cast", to=F32),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        [("x", I8, [1, 8])], [("y", F32, [1, 8])],
    )
    live = _live(model)
    assert _spans(live) == {"x": (8, 0, 0), "c": (32, 0, 1), "y": (32, 1, 1)}
    assert live.lower_bound == 64  # step 1: c + y


SCALE = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s")
ZERO = numpy_helper.from_array(np.array(0, dtype=np.int8), "z")


def _q(src: str, dst: str, name: str) -> Any:
    return helper.make_node("QuantizeLinear", [src, "s", "z"], [dst], name=name)


def _dq(src: str, dst: str, name: str) -> Any:
    return helper.make_node("DequantizeLinear", [src, "s", "z"], [dst], name=name)


def test_int8_runs_through_a_chain_of_transparent_operators() -> None:
    # x(1x4x8) -> Q -> DQ -> Relu -> MaxPool(2) -> Q -> DQ -> y: Relu and MaxPool both int8,
    # the intermediate r stays int8 although no Q follows it directly
    model = _model(
        [_q("x", "xq", "q0"), _dq("xq", "xd", "dq0"),
         helper.make_node("Relu", ["xd"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["mp"], name="pool", kernel_shape=[2], strides=[2]),
         _q("mp", "mq", "q1"), _dq("mq", "y", "dq1")],
        [("x", F32, [1, 4, 8])], [("y", F32, [1, 4, 4])], [SCALE, ZERO],
    )
    live = _live(model)
    assert [(s.node, s.reads, s.writes) for s in live.steps] == [
        ("relu", ["xq"], ["r"]), ("pool", ["r"], ["mp"])]
    # 32 int8 values = 32 B each for x and r, 16 for the pooled output
    assert _spans(live) == {"x": (32, 0, 0), "r": (32, 0, 1), "mp": (16, 1, 1)}
    assert live.lower_bound == 64  # step 0: x + r; step 1: r + mp = 48


def test_a_float_operator_feeding_a_quantize_makes_the_quantize_run() -> None:
    # x -> Softmax (float) -> Q -> DQ -> Relu -> Q -> DQ -> y: the first Q converts
    model = _model(
        [helper.make_node("Softmax", ["x"], ["sm"], name="sm"), _q("sm", "sq", "q0"),
         _dq("sq", "sd", "dq0"), helper.make_node("Relu", ["sd"], ["r"], name="relu"),
         _q("r", "rq", "q1"), _dq("rq", "y", "dq1")],
        [("x", F32, [1, 16])], [("y", F32, [1, 16])], [SCALE, ZERO],
    )
    live = _live(model)
    assert [s.node for s in live.steps] == ["sm", "q0", "relu"]
    # float x and sm: 64 B; int8 sq and r: 16 B
    assert _spans(live) == {"x": (64, 0, 0), "sm": (64, 0, 1), "sq": (16, 1, 2), "r": (16, 2, 2)}
    assert live.lower_bound == 128  # step 0: x + sm


def test_a_dequantized_output_that_is_read_again_is_computed_in_float() -> None:
    # y = DQ(...) is a graph output and Softmax reads it: the DQ runs and y is float
    model = _model(
        [_q("x", "xq", "q0"), _dq("xq", "xd", "dq0"),
         helper.make_node("Relu", ["xd"], ["r"], name="relu"), _q("r", "rq", "q1"),
         _dq("rq", "y", "dq1"), helper.make_node("Softmax", ["y"], ["w"], name="sm")],
        [("x", F32, [1, 16])], [("y", F32, [1, 16]), ("w", F32, [1, 16])], [SCALE, ZERO],
    )
    live = _live(model)
    assert [(s.node, s.reads) for s in live.steps] == [
        ("relu", ["xq"]), ("dq1", ["rq"]), ("sm", ["y"])]
    assert _spans(live) == {"x": (16, 0, 0), "r": (16, 0, 1), "y": (64, 1, 2), "w": (64, 2, 2)}
    assert live.lower_bound == 128  # step 2: y + w


def test_constant_inputs_are_not_buffers_and_an_unused_input_still_takes_room() -> None:
    const = numpy_helper.from_array(np.ones((1, 4), dtype=np.float32), "c")
    # Add(constant, x): the constant comes first and is skipped, x is read
    model = _model(
        [helper.make_node("Add", ["c", "x"], ["y"], name="add")],
        [("x", F32, [1, 4]), ("unused", F32, [1, 2])], [("y", F32, [1, 4])], [const],
    )
    live = _live(model)
    assert [(s.reads, s.writes) for s in live.steps] == [(["x"], ["y"])]
    # the unused input is allocated at step 0 and never read: 16 + 8 + 16
    assert _spans(live) == {"x": (16, 0, 0), "unused": (8, 0, 0), "y": (16, 0, 0)}
    assert live.lower_bound == 40


def test_an_unresolved_buffer_does_not_hide_the_resolved_ones() -> None:
    # x(1xL) -> ReduceMean over L -> m(1x1) -> Relu -> y(1x1): x has no size, m and y 4 B
    model = _model(
        [helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1], keepdims=1),
         helper.make_node("Relu", ["m"], ["y"], name="relu")],
        [("x", F32, [1, "L"])], [("y", F32, [1, 1])],
    )
    live = _live(model)
    assert _spans(live) == {"x": (None, 0, 0), "m": (4, 0, 1), "y": (4, 1, 1)}
    assert (live.lower_bound, live.peak_step, live.unresolved) == (8, 1, ["x"])
    assert live.naive == 8


def test_an_int8_input_of_unknown_length_stays_unresolved() -> None:
    # the input is int8 on the target (it only feeds a Q), but its length is symbolic
    model = _model(
        [_q("x", "xq", "q0"), _dq("xq", "xd", "dq0"),
         helper.make_node("Relu", ["xd"], ["r"], name="relu"), _q("r", "rq", "q1"),
         _dq("rq", "y", "dq1")],
        [("x", F32, [1, "L"])], [("y", F32, [1, "L"])], [SCALE, ZERO],
    )
    live = _live(model)
    assert [b.size for b in live.buffers] == [None, None]
    assert live.lower_bound == 0

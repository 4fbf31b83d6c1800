"""The admissible floor on small graphs whose figures are counted by hand.

Float [1, w] tensors (4 bytes per element) on an MCU target (the software runtime: every
legal in-place write, activations fused into the layer before). A dense layer (MatMul on
one row) keeps its input beside its output; an element-wise operator may write over an
input that dies there. Each expected figure is worked out beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.deployment.settings import deployment_for
from pytest_stedge.oracle.memory.analysis import analyze_graph
from pytest_stedge.oracle.model.graph import build_graph

Width = int | str | tuple[int, int]  # [1, w] (w may be symbolic), or a full 2-D shape


def _shape(w: Width) -> list[int | str]:
    return list(w) if isinstance(w, tuple) else [1, w]


def _floor(nodes: list[Any], inputs: dict[str, Width], outputs: dict[str, Width],
           weights: dict[str, tuple[int, int]], target: str = "stm32h7") -> dict[str, Any]:
    inits = [numpy_helper.from_array(np.ones(shape, np.float32), name) for name, shape in weights.items()]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, _shape(w)) for n, w in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, _shape(w)) for n, w in outputs.items()],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    report = analyze_graph(build_graph(model), deployment=deployment_for(target))
    return dict(report)


def test_a_skip_tensor_passing_a_dense_layer_is_counted_there() -> None:
    # x (8 floats, 32 B) -> relu -> a (32 B) -> mm1 -> m (32 floats, 128 B) -> mm2 -> n (32 B);
    # y = add(n, x). x is read by add, a descendant of both dense layers: every order
    # holds it while they run. mm1: x + a + m = 192; mm2: x + m + n = 192; add writes y
    # over n: 64.
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "w1"], ["m"], name="mm1"),
        helper.make_node("MatMul", ["m", "w2"], ["n"], name="mm2"),
        helper.make_node("Add", ["n", "x"], ["y"], name="add"),
    ]
    r = _floor(nodes, {"x": 8}, {"y": 8}, {"w1": (8, 32), "w2": (32, 8)})
    assert r["lower_bound_bytes"] == 32 + 32 + 128 == 192
    assert r["floor"]["where"] == "mm1"
    assert {t["name"]: t["bytes"] for t in r["floor"]["tensors"]} == {"x": 32, "a": 32, "m": 128}


def test_a_graph_output_made_early_stays_to_the_end() -> None:
    # x (32 B) -> relu -> o (32 B, a graph output) -> mm1 -> m (128 B) -> mm2 -> y (32 B).
    # o is kept to the end: at mm2, o + m + y = 192 (mm1: o + m = 160; relu in place: 32).
    nodes = [
        helper.make_node("Relu", ["x"], ["o"], name="relu"),
        helper.make_node("MatMul", ["o", "w1"], ["m"], name="mm1"),
        helper.make_node("MatMul", ["m", "w2"], ["y"], name="mm2"),
    ]
    r = _floor(nodes, {"x": 8}, {"o": 8, "y": 8}, {"w1": (8, 32), "w2": (32, 8)})
    assert r["lower_bound_bytes"] == 32 + 128 + 32 == 192
    assert r["floor"]["where"] == "mm2"


def test_an_independent_branch_is_not_counted() -> None:
    # x (32 B) feeds relu -> r (32 B) and mm -> m (128 B); y = concat(r, m) (160 B).
    # An order may run mm before relu: at mm only x + m = 160 are forced; the concat
    # writes r and m in place into y: 160. The file's order holds r through mm (192) and
    # the typical runtime stores y beside r and m: 320.
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Concat", ["r", "m"], ["y"], axis=1, name="cat"),
    ]
    r = _floor(nodes, {"x": 8}, {"y": 40}, {"w": (8, 32)})
    assert r["typical_bound_bytes"] == 32 + 128 + 160 == 320
    assert r["lower_bound_bytes"] == 160


def test_inputs_at_the_start_and_outputs_at_the_end() -> None:
    # two inputs (64 B each) added into one 64 B output in place: every step holds 128 B,
    # and so does the start (both inputs given before anything runs)
    nodes = [helper.make_node("Add", ["p", "q"], ["y"], name="add")]
    r = _floor(nodes, {"p": 16, "q": 16}, {"y": 16}, {})
    assert r["lower_bound_bytes"] == 128
    # three outputs of one 32 B input: they all exist at the end, 3 x 32 = 96 (the last
    # relu writes its output over the input it is the last to read)
    nodes = [helper.make_node("Relu", ["x"], [f"o{k}"], name=f"r{k}") for k in range(3)]
    r = _floor(nodes, {"x": 8}, {f"o{k}": 8 for k in range(3)}, {})
    assert r["lower_bound_bytes"] == 96


def test_the_inputs_given_before_anything_runs() -> None:
    # p and q (64 B each) each shrink to 4 B by a dense layer: mm1 holds p + a = 68, mm2
    # q + b = 68, and no order holds both inputs at a dense layer... but both are given
    # before the first operator runs: 128, at the start
    nodes = [helper.make_node("MatMul", ["p", "w1"], ["a"], name="mm1"),
             helper.make_node("MatMul", ["q", "w2"], ["b"], name="mm2")]
    r = _floor(nodes, {"p": 16, "q": 16}, {"a": 1, "b": 1}, {"w1": (16, 1), "w2": (16, 1)})
    assert r["lower_bound_bytes"] == 128
    assert r["floor"]["where"] == "inputs at the start"
    assert r["floor"]["saved_bytes"] == 0 and r["floor"]["in_place"] == []  # nothing ran


def test_the_outputs_all_there_at_the_end() -> None:
    # x (4 B) grows to two 64 B outputs by two dense layers: each holds x + its output
    # (68 B; the other branch may run later), but both outputs exist at the end: 128
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["o1"], name="mm1"),
             helper.make_node("MatMul", ["x", "w2"], ["o2"], name="mm2")]
    r = _floor(nodes, {"x": 1}, {"o1": 16, "o2": 16}, {"w1": (1, 16), "w2": (1, 16)})
    assert r["lower_bound_bytes"] == 128
    assert r["floor"]["where"] == "outputs at the end"


def test_a_dense_layer_on_several_rows_runs_in_place_on_one_row_does_not() -> None:
    from onnx import TensorProto as T

    def dense(rows: int, width: int) -> dict[str, Any]:
        w = numpy_helper.from_array(np.ones((width, width), np.float32), "w")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
            [helper.make_tensor_value_info("x", T.FLOAT, [rows, width])],
            [helper.make_tensor_value_info("y", T.FLOAT, [rows, width])], [w],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return dict(analyze_graph(build_graph(model), deployment=deployment_for("stm32h7")))

    # one row of 32 floats: every output reads the whole row, input and output coexist
    assert dense(1, 32)["lower_bound_bytes"] == 128 + 128
    # 4 rows of 8: row i of the output reads row i of the input only, and may be written
    # over it once read: the 128 B input becomes the 128 B output in place
    assert dense(4, 8)["lower_bound_bytes"] == 128


# The tests below each kill a mutant of oracle/memory/floor.py that the graphs above let
# through (numbers as `python tools/mutate.py floor --list` gives them).


def test_a_skip_tensor_read_right_after_the_operator_it_passes() -> None:
    # x (32 B) -> relu -> a (32 B) -> mm1 -> m (128 B) -> mm2 -> n (32 B); y = add(n, a).
    # a is made by an operator (not a graph input) and read by add, the operator right
    # after mm2: every order holds it while mm2 runs. mm2: a + m + n = 192; mm1: a + m =
    # 160 (a has a later reader, and a dense layer on one row keeps its input anyway);
    # relu writes a over x: 32; add writes y over n: 64; start and end 32.
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "w1"], ["m"], name="mm1"),
        helper.make_node("MatMul", ["m", "w2"], ["n"], name="mm2"),
        helper.make_node("Add", ["n", "a"], ["y"], name="add"),
    ]
    r = _floor(nodes, {"x": 8}, {"y": 8}, {"w1": (8, 32), "w2": (32, 8)})
    assert r["lower_bound_bytes"] == 32 + 128 + 32 == 192
    assert r["floor"]["where"] == "mm2"
    assert {t["name"]: t["bytes"] for t in r["floor"]["tensors"]} == {"a": 32, "m": 128, "n": 32}


def test_a_graph_input_read_two_operators_later_through_a_view() -> None:
    # x (32 B) -> mm1 -> a (128 B) -> mm2 -> b (32 B); v = Identity(x), placed after mm2 in
    # the file; y = add(b, v). The view is x itself (no step, no copy), so x is read by
    # add and every order holds it through mm2: x + a + b = 192 (mm1: x + a = 160; add
    # writes y over b: 64).
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
        helper.make_node("MatMul", ["a", "w2"], ["b"], name="mm2"),
        helper.make_node("Identity", ["x"], ["v"], name="view"),
        helper.make_node("Add", ["b", "v"], ["y"], name="add"),
    ]
    r = _floor(nodes, {"x": 8}, {"y": 8}, {"w1": (8, 32), "w2": (32, 8)})
    assert r["lower_bound_bytes"] == 32 + 128 + 32 == 192
    assert r["floor"]["where"] == "mm2"


def test_an_input_read_again_later_is_not_written_over() -> None:
    # b (8 floats, 32 B) and c (32 floats, 128 B) are inputs. relu: r = relu(b);
    # mm: s = r x w1 (32 B); cat: t = concat(r, c) (160 B); mm2: q = t x w2 (4 B);
    # add: y = b + s (32 B). Outputs y and q.
    # relu runs first in every order. b is read again by add, which runs after relu in
    # every order (through r -> mm -> s), so relu may not write r over b; c is read by
    # cat, also after relu: relu holds b + c + r = 192.
    # The others: mm holds r + s + b (add after it) = 96; cat writes r and c into t (both
    # die there: mm needs no order after cat): 160; mm2: t + q = 164; add writes y over b
    # or s: 64; start b + c = 160; end y + q = 36. Floor 192 at relu.
    nodes = [
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w1"], ["s"], name="mm"),
        helper.make_node("Concat", ["r", "c"], ["t"], axis=1, name="cat"),
        helper.make_node("MatMul", ["t", "w2"], ["q"], name="mm2"),
        helper.make_node("Add", ["b", "s"], ["y"], name="add"),
    ]
    r = _floor(nodes, {"b": 8, "c": 32}, {"y": 8, "q": 1}, {"w1": (8, 8), "w2": (40, 1)})
    assert r["lower_bound_bytes"] == 32 + 128 + 32 == 192
    assert r["floor"]["where"] == "relu"
    assert r["floor"]["in_place"] == []


def test_an_unresolved_tensor_counts_nothing_and_hides_nothing() -> None:
    # x is [1, L] (L unknown): x and y = x * c have no size. mean: m = mean(x) (4 B);
    # mm1: a = m x w1 (64 B); mm2: b = a x w2 (4 B); add: c = b + m (4 B); mul: y = x * c.
    # m is read by add after mm2 in every order: mm2 holds a + b + m = 72 (mm1: m + a =
    # 68; add writes c over b: 8; the unknown x and y count 0 wherever they are live).
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1], keepdims=1),
        helper.make_node("MatMul", ["m", "w1"], ["a"], name="mm1"),
        helper.make_node("MatMul", ["a", "w2"], ["b"], name="mm2"),
        helper.make_node("Add", ["b", "m"], ["c"], name="add"),
        helper.make_node("Mul", ["x", "c"], ["y"], name="mul"),
    ]
    r = _floor(nodes, {"x": "L"}, {"y": "L"}, {"w1": (1, 16), "w2": (16, 1)})
    assert sorted(r["unresolved_tensors"]) == ["x", "y"]
    assert r["lower_bound_bytes"] == 64 + 4 + 4 == 72
    assert r["floor"]["where"] == "mm2"
    assert {t["name"]: t["bytes"] for t in r["floor"]["tensors"]} == {"a": 64, "b": 4, "m": 4}


def test_a_model_of_views_only_holds_its_input() -> None:
    # y = Identity(x): no operator runs, y is x; the floor is x's 32 B, held from the
    # start to the end
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="view")]
    r = _floor(nodes, {"x": 8}, {"y": 8}, {})
    assert r["lower_bound_bytes"] == 32


def test_a_skip_tensor_passes_after_an_operator_of_another_branch() -> None:
    # x (32 B). File order: mm1: a = x w1 (32 B); relu: z = relu(x) (32 B, a graph
    # output, a branch of its own); mm2: d = a w2 (128 B); mm3: e = d w3 (32 B);
    # add: y = e + a. relu, right after a's producer, is not after mm1 in every order,
    # but mm3 is, and add reads a after it: mm3 holds a + d + e = 192 (mm2: a + d = 160;
    # mm1: x + a = 64; relu: in place 32; add: y over e or a, 64; end y + z = 64).
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
        helper.make_node("Relu", ["x"], ["z"], name="relu"),
        helper.make_node("MatMul", ["a", "w2"], ["d"], name="mm2"),
        helper.make_node("MatMul", ["d", "w3"], ["e"], name="mm3"),
        helper.make_node("Add", ["e", "a"], ["y"], name="add"),
    ]
    r = _floor(nodes, {"x": 8}, {"y": 8, "z": 8}, {"w1": (8, 8), "w2": (8, 32), "w3": (32, 8)})
    assert r["lower_bound_bytes"] == 32 + 128 + 32 == 192
    assert r["floor"]["where"] == "mm3"


def test_a_graph_output_is_never_fused_away() -> None:
    # x, c1, c2 (32 floats, 128 B each). relu: o = relu(x) (128 B, a graph output);
    # mean: m = mean(o) (4 B); then two branches: q1 = c1 * m (128 B), s1 = sum(q1)
    # (4 B); the same with c2. Outputs o, s1, s2.
    # mean holds o + m and both c1 and c2 (each read in a branch after it): 388. The MCU
    # runtime may fuse a reduction into the operator before it, but o is stored (it is
    # an output) whatever the kernel does. Elsewhere: start x + c1 + c2 = 384; relu, in
    # place: 384; mul1 writes q1 over c1: o + c1 + m = 260 (c2 is not held: the other
    # branch may run first); sum1: o + q1 + s1 = 260; the same for branch 2; end 136.
    # (Fusing o away would leave x + m + c1 + c2 - 4 = 384 at the mean.)
    nodes = [
        helper.make_node("Relu", ["x"], ["o"], name="relu"),
        helper.make_node("ReduceMean", ["o"], ["m"], name="mean", axes=[1], keepdims=1),
        helper.make_node("Mul", ["c1", "m"], ["q1"], name="mul1"),
        helper.make_node("ReduceSum", ["q1"], ["s1"], name="sum1", keepdims=1),
        helper.make_node("Mul", ["c2", "m"], ["q2"], name="mul2"),
        helper.make_node("ReduceSum", ["q2"], ["s2"], name="sum2", keepdims=1),
    ]
    r = _floor(nodes, {"x": 32, "c1": 32, "c2": 32}, {"o": 32, "s1": 1, "s2": 1}, {})
    assert r["lower_bound_bytes"] == 128 + 4 + 128 + 128 == 388
    assert r["floor"]["where"] == "mean"
    assert r["floor"]["fused"] == []


def test_a_broadcast_add_writes_over_one_input_not_both() -> None:
    # p [1, 16] (64 B) + q [4, 1] (16 B) -> y [4, 16] (256 B) -> relu -> z (256 B, the
    # output). Element-wise, y may be written over ONE dying input (the larger, p), not
    # over both: add holds 64 + 16 + 256 - 64 = 272 (the same with the relu fused into
    # it, z written in place of y); relu alone, in place: 256; end 256.
    nodes = [
        helper.make_node("Add", ["p", "q"], ["y"], name="add"),
        helper.make_node("Relu", ["y"], ["z"], name="relu"),
    ]
    r = _floor(nodes, {"p": 16, "q": (4, 1)}, {"z": (4, 16)}, {})
    assert r["lower_bound_bytes"] == 64 + 16 + 256 - 64 == 272
    assert r["floor"]["in_place"] == ["p"] and r["floor"]["saved_bytes"] == 64


def test_a_dense_layer_on_several_rows_grows_over_its_dying_input() -> None:
    # x [4, 8] (128 B) -> relu -> a (in place, 128 B) -> mm (w 8x16) -> y [4, 16]
    # (256 B) -> sum over each row -> s [4, 1] (16 B). Written row by row, y may lie
    # over a (a dies at mm): 128 + 256 - 128 = 256; the sum writes s over y: 256.
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "w"], ["y"], name="mm"),
        helper.make_node("ReduceSum", ["y"], ["s"], name="sum", axes=[1], keepdims=1),
    ]
    r = _floor(nodes, {"x": (4, 8)}, {"s": (4, 1)}, {"w": (8, 16)})
    assert r["lower_bound_bytes"] == 256


def test_a_dense_layer_on_rows_writes_over_its_row_operand_only() -> None:
    # p [4, 8] (128 B) -> relu -> a (in place, 128 B); k [8, 16] (512 B, an input);
    # y = a k [4, 16] (256 B). Row i of y reads row i of a and the whole of k: y may lie
    # over a, never over k, although both die at mm. mm: 128 + 512 + 256 - 128 = 768
    # (over k it would be 640); start p + k = 640; relu in place, k held: 640; end 256.
    nodes = [
        helper.make_node("Relu", ["p"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "k"], ["y"], name="mm"),
    ]
    r = _floor(nodes, {"p": (4, 8), "k": (8, 16)}, {"y": (4, 16)}, {})
    assert r["lower_bound_bytes"] == 128 + 512 + 256 - 128 == 768
    assert r["floor"]["where"] == "mm"
    assert r["floor"]["in_place"] == ["a"]


def test_a_chain_longer_than_the_group_search_stays_a_floor() -> None:
    # x [1, 1, 8, 8] (256 B) -> conv (8 filters 3x3, pad 1) -> t0 [1, 8, 8, 8] (2,048 B)
    # -> 5 relus -> t5 (2,048 B) -> global average pool -> y [1, 8, 1, 1] (32 B).
    # Every link may be fused on an MCU (an activation into the layer before it, a
    # pooling into a unary operator before it): one kernel for all 7 operators never
    # stores a 2,048 B tensor and may write y over x, which dies there: 256 B, as at the
    # start. The search of fused groups stops at 6 members; an operator whose search
    # stopped gives no figure rather than one that some schedule beats (2,048 B, when
    # the limit cut the chain).
    w = numpy_helper.from_array(np.ones((8, 1, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["t0"], pads=[1, 1, 1, 1], name="conv")]
    nodes += [helper.make_node("Relu", [f"t{k}"], [f"t{k + 1}"], name=f"relu{k}") for k in range(5)]
    nodes.append(helper.make_node("GlobalAveragePool", ["t5"], ["y"], name="pool"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    r = analyze_graph(build_graph(model), deployment=deployment_for("stm32h7"))
    assert r["lower_bound_bytes"] == 256

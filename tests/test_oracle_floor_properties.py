"""The floor is a floor: on random small graphs, no schedule the tool could choose beats it.

For a random graph of up to 8 operators, every schedule is searched exactly: every
topological order (a dynamic program over the sets of operators already run, which
finds the least peak over all orders), with every subset of the fusions the family
allows (each fused group run as one step, its inner tensor never stored) and every
in-place write the operators' data dependencies allow (an output over an input no later
operator reads). The schedules are simulated here from the graph as generated, not from
the oracle's liveness. The floor must never exceed the least peak found, and the
typical deployment (the file's order) never goes below the floor.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.deployment.settings import deployment_for
from pytest_stedge.oracle.memory.analysis import analyze_graph
from pytest_stedge.oracle.memory.deployed_liveness import _capabilities
from pytest_stedge.oracle.model.facts import classify
from pytest_stedge.oracle.model.graph import build_graph


@dataclass
class Op:
    name: str
    kind: str  # relu | sigmoid | add | concat | matmul
    inputs: list[str]
    output: str
    width: int


def _ops(draw: Any) -> tuple[list[tuple[str, int]], list[Op]]:
    widths: dict[str, int] = {}
    inputs = []
    for k in range(draw(st.integers(1, 2))):
        name = f"x{k}"
        widths[name] = draw(st.sampled_from([2, 4, 8]))
        inputs.append((name, widths[name]))
    ops: list[Op] = []
    for k in range(draw(st.integers(1, 8))):
        names = sorted(widths)
        kind = draw(st.sampled_from(["relu", "sigmoid", "add", "concat", "matmul", "matmul"]))
        a = draw(st.sampled_from(names))
        out = f"t{k}"
        if kind == "add":
            same = [n for n in names if widths[n] == widths[a]]
            b = draw(st.sampled_from(same))
            ops.append(Op(f"n{k}", kind, [a, b], out, widths[a]))
        elif kind == "concat":
            b = draw(st.sampled_from(names))
            ops.append(Op(f"n{k}", kind, [a, b], out, widths[a] + widths[b]))
        elif kind == "matmul":
            ops.append(Op(f"n{k}", kind, [a], out, draw(st.sampled_from([1, 2, 4, 8, 16]))))
        else:
            ops.append(Op(f"n{k}", kind, [a], out, widths[a]))
        widths[out] = ops[-1].width
    return inputs, ops


graphs = st.composite(_ops)


def _model(inputs: list[tuple[str, int]], ops: list[Op], qdq: bool = False) -> tuple[Any, list[str]]:
    """The ONNX model of ``ops`` on [1, width] tensors: float32, or with ``qdq`` every
    operator wrapped in DequantizeLinear inputs and QuantizeLinear outputs (int8 on the
    target: one byte per element, graph outputs int8)."""
    widths = dict(inputs) | {op.output: op.width for op in ops}
    nodes, inits = [], []
    if qdq:
        inits += [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                  numpy_helper.from_array(np.array(0, np.int8), "z")]
        for name, _ in inputs:
            nodes.append(helper.make_node("QuantizeLinear", [name, "s", "z"], [f"{name}_q"]))

    def read(name: str) -> str:
        if not qdq:
            return name
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", "s", "z"], [f"{name}_d{len(nodes)}"]))
        return nodes[-1].output[0]

    for op in ops:
        out = f"{op.output}_f" if qdq else op.output
        args = [read(n) for n in op.inputs]
        if op.kind == "matmul":
            w = f"w_{op.name}"
            shape = (widths[op.inputs[0]], op.width)
            if qdq:
                inits.append(numpy_helper.from_array(np.ones(shape, np.int8), f"{w}_q"))
                nodes.append(helper.make_node("DequantizeLinear", [f"{w}_q", "s", "z"], [w]))
            else:
                inits.append(numpy_helper.from_array(np.ones(shape, np.float32), w))
            nodes.append(helper.make_node("MatMul", [args[0], w], [out], name=op.name))
        elif op.kind == "concat":
            nodes.append(helper.make_node("Concat", args, [out], axis=1, name=op.name))
        else:
            kind = {"relu": "Relu", "sigmoid": "Sigmoid", "add": "Add"}[op.kind]
            nodes.append(helper.make_node(kind, args, [out], name=op.name))
        if qdq:
            nodes.append(helper.make_node("QuantizeLinear", [out, "s", "z"], [f"{op.output}_q"]))
    read_names = {n for op in ops for n in op.inputs}
    outputs = [op.output for op in ops if op.output not in read_names] or [ops[-1].output]
    out_type = TensorProto.INT8 if qdq else TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, w]) for n, w in inputs],
        [helper.make_tensor_value_info(f"{n}_q" if qdq else n, out_type, [1, widths[n]])
         for n in outputs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, outputs


def _least_peak(
    inputs: list[tuple[str, int]],
    ops: list[Op],
    outputs: list[str],
    groups: list[list[int]],
    overlay: list[tuple[str, int | None]],
    width: int = 4,
) -> int | None:
    """Least peak over every order of ``groups`` (fused operator sets run as one step),
    every legal in-place write applied (it only lowers the step where it happens)."""
    size = {n: width * w for n, w in inputs} | {op.output: width * op.width for op in ops}
    producer = {op.output: k for k, op in enumerate(ops)}
    readers: dict[str, set[int]] = {}
    for k, op in enumerate(ops):
        for n in op.inputs:
            readers.setdefault(n, set()).add(k)
    group_of = {k: g for g, members in enumerate(groups) for k in members}
    full = (1 << len(groups)) - 1

    def done_ops(mask: int) -> set[int]:
        return {k for g, members in enumerate(groups) if mask >> g & 1 for k in members}

    def live(done: set[int]) -> set[str]:
        have = {n for n, _ in inputs} | {ops[k].output for k in done}
        return {
            n for n in have
            if n in outputs or any(r not in done for r in readers.get(n, ()))
        }

    best = {0: sum(size[n] for n, _ in inputs)}
    for mask in range(full + 1):
        if mask not in best:
            continue
        done = done_ops(mask)
        before = live(done)
        for g, members in enumerate(groups):
            if mask >> g & 1:
                continue
            needs = {producer[n] for k in members for n in ops[k].inputs if n in producer}
            if any(p not in done and group_of[p] != g for p in needs):
                continue
            after = done | set(members)
            internal = {
                ops[k].output for k in members
                if ops[k].output not in outputs and readers.get(ops[k].output)
                and readers[ops[k].output] <= set(members)
            }
            written = [ops[k].output for k in members if ops[k].output not in internal]
            held = before | set(written)
            total = sum(size[n] for n in held)
            ext_in = {
                n for k in members for n in ops[k].inputs if n not in internal
            }
            dying = [
                n for n in ext_in
                if n not in outputs and readers.get(n, set()) <= after
            ]
            modes = [overlay[k] for k in members]
            out_bytes = sum(size[n] for n in written)
            saved = 0
            if dying and not any(m == "none" for m, _ in modes):
                if len(members) == 1 and modes[0][1] is not None:
                    first = ops[members[0]].inputs[modes[0][1]]
                    dying = [n for n in dying if n == first]
                if dying and all(m == "all" for m, _ in modes):
                    saved = min(sum(size[n] for n in dying), out_bytes)
                elif dying:
                    saved = min(max(size[n] for n in dying), out_bytes)
            peak = max(best[mask], total - saved)
            key = mask | 1 << g
            best[key] = min(best.get(key, peak), peak)
    return best.get(full)  # None: the groups cannot all run (a fused group waits on itself)


def _root(parent: list[int], k: int) -> int:
    while parent[k] != k:
        k = parent[k]
    return k


def _fusion_choices(ops: list[Op], fusable: list[list[tuple[int, int]]]) -> list[list[list[int]]]:
    """Every partition of the operators into groups that a subset of the fusable tensors
    makes (a fused tensor joins its producer and all its readers)."""
    out = []
    for chosen in itertools.chain.from_iterable(
        itertools.combinations(fusable, r) for r in range(len(fusable) + 1)
    ):
        parent = list(range(len(ops)))
        for a, b in itertools.chain.from_iterable(chosen):
            parent[_root(parent, a)] = _root(parent, b)
        groups: dict[int, list[int]] = {}
        for k in range(len(ops)):
            groups.setdefault(_root(parent, k), []).append(k)
        out.append(list(groups.values()))
    return out


@settings(max_examples=120, deadline=None)
@given(graphs(), st.sampled_from(["stm32h7", "stm32n6", "stm32n6-npu-qdq"]))
def test_no_schedule_beats_the_floor(drawn: tuple[list[tuple[str, int]], list[Op]], target: str) -> None:
    inputs, ops = drawn
    qdq = target.endswith("qdq")
    model, outputs = _model(inputs, ops, qdq=qdq)
    graph = build_graph(model)
    if target == "stm32h7":
        deployment = deployment_for("stm32h7")
    else:  # float nodes run in software on the N6; QDQ ones on the NPU's units
        deployment = deployment_for("stm32n6", ["--st-neural-art"])
    report = analyze_graph(graph, deployment=deployment)
    floor = report["lower_bound_bytes"]
    qdq_info = classify(graph)
    assert not qdq or len(qdq_info.quantized) == len(ops)
    caps = _capabilities(graph, qdq_info, deployment)
    node = {n.name: n for n in graph.nodes}
    overlay = [caps.overlay(node[op.name]) for op in ops]
    fusable: list[list[tuple[int, int]]] = []
    for k, op in enumerate(ops):
        users = [j for j, other in enumerate(ops) if op.output in other.inputs]
        if op.output in outputs or not users:
            continue
        if caps.fuses(node[op.name], [node[ops[j].name] for j in users]):
            fusable.append([(k, j) for j in users])
    peaks = [
        _least_peak(inputs, ops, outputs, groups, overlay, 1 if qdq else 4)
        for groups in _fusion_choices(ops, fusable)
    ]
    least = min(p for p in peaks if p is not None)
    assert floor <= least, (floor, least, [(op.kind, op.inputs, op.width) for op in ops])
    assert floor <= report["typical_bound_bytes"]
    # the pruned search (an operator's lone figure bounds its groups) finds the same floor
    assert floor == _every_operator(graph, qdq_info, deployment)


def _every_operator(graph: Any, qdq: Any, deployment: Any) -> int:
    from pytest_stedge.oracle.memory.deployed_liveness import _io_outside, _io_types
    from pytest_stedge.oracle.memory.floor import admissible_floor
    from pytest_stedge.oracle.memory.liveness import analyze_liveness

    live = analyze_liveness(graph, qdq, int64_as_int32=True)
    _io_types(graph, live, deployment)
    _io_outside(graph, live, deployment)
    return admissible_floor(graph, live, _capabilities(graph, qdq, deployment), prune=False).bytes


def test_another_order_beats_the_file_and_the_floor_knows() -> None:
    # x (2 floats, 8 B) feeds two branches: n0 makes b (64 B), n1 a1 (64 B), n2 shrinks
    # a1 to a2 (4 B), n3 concatenates a2 and b (68 B, its inputs written in place).
    # File order n0 n1 n2 n3: at n1 x + b + a1 = 136 B.
    # Order n1 n2 n0 n3: n1 x + a1 = 72, n2 x + a1 + a2 = 76, n0 x + a2 + b = 76, n3 68.
    # Floor: no order runs n1 without x and a1 (a dense layer on one row keeps its input
    # beside its output): 72 B; b and a1 are never forced together.
    inputs = [("x0", 2)]
    ops = [
        Op("n0", "matmul", ["x0"], "b", 16),
        Op("n1", "matmul", ["x0"], "a1", 16),
        Op("n2", "matmul", ["a1"], "a2", 1),
        Op("n3", "concat", ["a2", "b"], "y", 17),
    ]
    model, outputs = _model(inputs, ops)
    graph = build_graph(model)
    deployment = deployment_for("stm32h7")
    report = analyze_graph(graph, deployment=deployment)
    caps = _capabilities(graph, classify(graph), deployment)
    node = {n.name: n for n in graph.nodes}
    overlay = [caps.overlay(node[op.name]) for op in ops]
    least = _least_peak(inputs, ops, outputs, [[0], [1], [2], [3]], overlay)
    assert report["typical_bound_bytes"] == 8 + 64 + 64 == 136
    assert least == 76
    assert report["lower_bound_bytes"] == 72

"""``analyze_model``: facts and activation memory of one ONNX model, as a dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .facts import classify, op_counts, weights
from .graph import Graph, build_graph
from .liveness import Liveness, analyze_liveness
from .planner import Item, Plan, plan_offsets


def memory_plan(live: Liveness) -> Plan:
    """The best offset plan of the resolved buffers, checked against overlap."""
    items = [Item(b.name, b.size, b.start, b.end) for b in live.resolved() if b.size]
    return plan_offsets(items, lower_bound=live.lower_bound)


def analyze_graph(graph: Graph, *, details: bool = False) -> dict[str, Any]:
    """The oracle report of an already built graph (see :func:`analyze_model`)."""
    qdq = classify(graph)
    live = analyze_liveness(graph, qdq)
    plan = memory_plan(live)
    params, weight_bytes = weights(graph)
    nodes = graph.nodes
    known = bool(live.resolved())
    report: dict[str, Any] = {
        "model": str(graph.path) if graph.path else None,
        "qdq": qdq.qdq,
        "lower_bound_bytes": live.lower_bound if known else None,
        "plan_bytes": plan.size if known else None,
        "plan_strategy": plan.strategy,
        "naive_bytes": live.naive if known else None,
        "peak_step": live.peak_step,
        "peak_node": live.steps[live.peak_step].node if live.steps else None,
        "peak_tensors": live.peak,
        "float_nodes": [
            {"name": nodes[i].name, "op_type": nodes[i].op_type} for i in qdq.float_nodes
        ],
        "quantized_nodes": len(qdq.quantized),
        "params": params,
        "weight_bytes": weight_bytes,
        "op_counts": op_counts(graph),
        "unresolved_tensors": live.unresolved,
        "tensors": len(live.buffers),
        "steps": len(live.steps),
        "inputs": [_io(graph, n) for n in graph.inputs],
        "outputs": [_io(graph, n) for n in graph.outputs],
    }
    if details:
        report["buffers"] = [
            {
                "name": b.name,
                "bytes": b.size,
                "start": b.start,
                "end": b.end,
                "offset": plan.offsets.get(b.name),
                "aliases": [m for m in b.members if m != b.name],
            }
            for b in live.buffers
        ]
    return report


def _io(graph: Graph, name: str) -> dict[str, Any]:
    info = graph.info(name)
    return {
        "name": name,
        "dtype": info.dtype,
        "shape": list(info.shape) if info.shape is not None else None,
    }


def analyze_model(path: Path | str, *, details: bool = False) -> dict[str, Any]:
    """Facts and activation memory of an ONNX model, independent of the tool.

    Keys: ``lower_bound_bytes`` (largest sum of live deployed tensor sizes at one
    step), ``plan_bytes`` (a checked offset plan), ``naive_bytes`` (no reuse),
    ``peak_tensors``, ``float_nodes`` ([{name, op_type}]), ``quantized_nodes``,
    ``params``, ``weight_bytes``, ``op_counts``, ``unresolved_tensors`` (tensors
    whose size shape inference could not fix: left out of the sums, listed here),
    ``tensors``; with ``details`` also ``buffers`` (lifetimes and offsets).
    Byte figures are ``None`` when no tensor size is known.

    :raises OracleError: not ONNX, or its shapes cannot be inferred.
    """
    return analyze_graph(build_graph(path), details=details)

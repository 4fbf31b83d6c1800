"""``analyze_model``: facts and activation memory of one model as a target deploys it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..deployment.settings import Deployment, deployment_for
from ..model.facts import classify, op_counts, weights
from ..model.graph import Graph
from .deployed_liveness import deployed
from .liveness import Liveness
from .planner import Item, Plan, plan_offsets
from .pools import PoolPlan, plan_pools


def _aligned(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment if alignment > 1 else size


def _items(live: Liveness, alignment: int = 1) -> list[Item]:
    return [
        Item(b.name, _aligned(b.size, alignment), b.start, b.end)
        for b in live.resolved()
        if b.size and b.end >= b.start
    ]


def memory_plan(live: Liveness, alignment: int = 1) -> Plan:
    """The best offset plan of the resolved buffers (sizes rounded up to ``alignment``),
    checked against overlap."""
    items = _items(live, alignment)
    # Stop at the liveness bound of the (aligned) sizes: no plan can beat it.
    delta: dict[int, int] = {}
    for it in items:
        delta[it.start] = delta.get(it.start, 0) + it.size
        delta[it.end + 1] = delta.get(it.end + 1, 0) - it.size
    bound = running = 0
    for step in sorted(delta):
        running += delta[step]
        bound = max(bound, running)
    return plan_offsets(items, lower_bound=bound)


def analyze_graph(
    graph: Graph, *, details: bool = False, deployment: Deployment | None = None
) -> dict[str, Any]:
    """The oracle report of an already built graph (see :func:`analyze_model`)."""
    qdq = classify(graph)
    live, floor = deployed(graph, qdq, deployment)
    plan = memory_plan(live)
    alignment = deployment.alignment if deployment else 1
    aligned = all(b.size % alignment == 0 for b in live.resolved() if b.size)
    expected = plan if aligned else memory_plan(live, alignment)
    # Buffers start at aligned offsets; the pool ends where its last buffer's bytes end
    # (the 4.0.0 depthwise run: 12,288 + 3 = 12,291 B, not rounded to 12,296).
    raw = {b.name: b.size or 0 for b in live.resolved()}
    high_water = max((off + raw.get(n, 0) for n, off in expected.offsets.items()), default=0)
    pooled: PoolPlan | None = None
    if deployment is not None and deployment.pools:
        pooled = plan_pools(_items(live), deployment.pools, alignment)
    params, weight_bytes = weights(graph)
    nodes = graph.nodes
    known = bool(live.resolved())
    sizes = {b.name: b.size for b in live.buffers}
    floor_sizes = floor.sizes
    report: dict[str, Any] = {
        "model": str(graph.path) if graph.path else None,
        "format": graph.source,
        "deployment": deployment.describe() if deployment else None,
        "qdq": qdq.qdq,
        "lower_bound_bytes": floor.bytes if known else None,
        "expected_bytes": (pooled.size if pooled else high_water) if known else None,
        "expected_pools": pooled.pools if pooled else None,
        "expected_overflow": pooled.overflow if pooled else [],
        "plan_bytes": plan.size if known else None,
        "plan_strategy": plan.strategy,
        "typical_bound_bytes": live.lower_bound if known else None,
        "floor": {
            "where": floor.where,
            "tensors": [{"name": n, "bytes": floor_sizes.get(n)} for n in floor.tensors],
            "fused": floor.fused,
            "in_place": floor.in_place,
            "saved_bytes": floor.saved_bytes,
        },
        "peak": [{"name": n, "bytes": sizes.get(n)} for n in live.peak],
        "streamed_tensors": live.streamed,
        "overlaid": [{"output": o, "input": i} for o, i in live.overlaid],
        "io_outside_activations": live.outside,
        "notes": list(graph.notes),
        "naive_bytes": live.naive if known else None,
        "peak_step": live.peak_step,
        "peak_node": live.steps[live.peak_step].node if live.steps else None,
        "peak_tensors": live.peak,
        "float_nodes": [
            {"name": nodes[i].name, "op_type": nodes[i].op_type} for i in qdq.float_nodes
        ],
        "software_nodes": [
            {"name": nodes[i].name, "op_type": nodes[i].op_type} for i in sorted(qdq.software)
        ],
        "quantized_nodes": len(qdq.quantized),
        "params": params,
        "weight_bytes": weight_bytes,
        "op_counts": op_counts(graph),
        "unresolved_tensors": live.unresolved,
        "tensors": len(live.buffers) + len(live.streamed),
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


def analyze_model(
    path: Path | str,
    *,
    details: bool = False,
    target: str | None = None,
    options: Sequence[str] = (),
    mpool: Path | str | None = None,
) -> dict[str, Any]:
    """Facts and activation memory of an ONNX or TFLite model as ``target`` deploys it.

    ``target``/``options``/``mpool`` are what ``stedgeai generate`` gets
    (:func:`.deploy.deployment_for`; default ``stm32n6`` with Neural-ART).

    Keys: ``lower_bound_bytes`` (the floor: largest sum of live deployed tensor
    sizes at one step under the target's rules; no correct tool goes below it),
    ``expected_bytes`` (a checked offset plan with the target's alignment: what a
    good allocator reaches), ``peak`` (the tensors at the floor's step, with bytes),
    ``plan_bytes`` (a checked offset plan, unaligned), ``naive_bytes`` (no reuse),
    ``peak_tensors``, ``float_nodes`` ([{name, op_type}]), ``quantized_nodes``,
    ``params``, ``weight_bytes``, ``op_counts``, ``unresolved_tensors`` (tensors
    whose size shape inference could not fix: left out of the sums, listed here),
    ``tensors``; with ``details`` also ``buffers`` (lifetimes and offsets).
    Byte figures are ``None`` when no tensor size is known.

    :raises OracleError: not a model, Keras, a bad ``_Q.json``, shapes not inferable.
    """
    from ..model.files import open_graph

    deployment = deployment_for(target, options, mpool)
    return analyze_graph(open_graph(path), details=details, deployment=deployment)

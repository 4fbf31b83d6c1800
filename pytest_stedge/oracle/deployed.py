"""Apply a target family's rules to the liveness of a model: the graph as deployed.

- I/O outside the activations (``--no-inputs-allocation`` ...): those buffers leave;
- N6 NPU (:func:`.rules_n6_npu.streams`): a tensor that only streams from one unit
  into the next is never stored; the producer's inputs stay live until the last
  unit of the chain runs, as they do inside one epoch;
- MCU and N6 software (:func:`.rules_mcu.overlays`): a layer's output may overwrite
  its dying data input, so at that step the pair needs max(input, output), not the
  sum: the smaller of the two is cut out of that step.
"""

from __future__ import annotations

from .deploy import Deployment
from .facts import QdqInfo
from .graph import Graph
from .liveness import VIEW_OPS, Buffer, Liveness, analyze_liveness, finish


def deployed_liveness(graph: Graph, qdq: QdqInfo, deployment: Deployment | None) -> Liveness:
    """The liveness of ``graph`` as ``deployment`` runs it (None: the graph as exported)."""
    live = analyze_liveness(graph, qdq, int64_as_int32=deployment is not None)
    if deployment is None:
        return live
    apply_deployment(graph, qdq, live, deployment)
    return finish(live)


def apply_deployment(graph: Graph, qdq: QdqInfo, live: Liveness, deployment: Deployment) -> None:
    """Rewrite ``live.buffers`` in place as ``deployment`` runs the model."""
    _io_outside(graph, live, deployment)
    if deployment.family == "n6-npu":
        _stream(graph, qdq, live)
    else:
        _overlay(graph, live, deployment)


def _io_outside(graph: Graph, live: Liveness, deployment: Deployment) -> None:
    outside: set[str] = set()
    if not deployment.inputs_in_activations:
        outside.update(live.root_of[n] for n in graph.inputs if n in live.root_of)
    if not deployment.outputs_in_activations:
        outside.update(live.root_of[n] for n in graph.outputs if n in live.root_of)
    if outside:
        live.outside = sorted(outside)
        live.buffers = [b for b in live.buffers if b.name not in outside]


def _writers_readers(live: Liveness) -> tuple[dict[str, int], dict[str, list[int]]]:
    writer: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    for k, step in enumerate(live.steps):
        out_roots = {live.root_of.get(w, w) for w in step.writes}
        for name in step.reads:
            root = live.root_of.get(name, name)
            # A view writes into the buffer it reads: it does not consume it.
            if step.op_type in VIEW_OPS and root in out_roots:
                continue
            readers.setdefault(root, []).append(k)
        for name in step.writes:
            writer.setdefault(live.root_of.get(name, name), k)
    return writer, readers


def _stream(graph: Graph, qdq: QdqInfo, live: Liveness) -> None:
    from .rules_n6_npu import streams

    writer, readers = _writers_readers(live)
    io = {live.root_of.get(n, n) for n in graph.inputs + graph.outputs}
    by_name = {b.name: b for b in live.buffers}
    streamed: set[str] = set()
    # Effective reads: a step reading a streamed tensor reads what its producer read.
    # Decided in step order, so a chain (conv -> pool -> mean) streams end to end.
    effective: list[set[str]] = []
    for k, step in enumerate(live.steps):
        eff: set[str] = set()
        for name in step.reads:
            root = live.root_of.get(name, name)
            eff |= effective[writer[root]] if root in streamed else {root}
        effective.append(eff)
        for name in step.writes:
            buf = by_name.get(live.root_of.get(name, name))
            if buf is None or buf.size is None or buf.name in io or writer.get(buf.name) != k:
                continue
            users = sorted(set(readers.get(buf.name, [])))
            if not users:
                continue
            producer = graph.nodes[step.index]
            consumers = [graph.nodes[live.steps[u].index] for u in users]
            if not streams(graph, producer, consumers, qdq.quantized):
                continue
            # Streaming keeps the producer's inputs live until the last consumer: take
            # it only when that costs no more than storing the tensor.
            extra = sum(
                by_name[r].size or 0 for r in eff if r in by_name and by_name[r].end < users[-1]
            )
            if extra <= buf.size:
                streamed.add(buf.name)
    if not streamed:
        return
    for k, eff in enumerate(effective):
        for root in eff:
            found = by_name.get(root)
            if found is not None and found.end < k:
                found.end = k
    live.streamed = sorted(streamed)
    live.buffers = [b for b in live.buffers if b.name not in streamed]


def _overlay(graph: Graph, live: Liveness, deployment: Deployment) -> None:
    from .rules_mcu import overlays

    by_name: dict[str, Buffer] = {b.name: b for b in live.buffers}
    inputs = {live.root_of.get(n, n) for n in graph.inputs}
    for k, step in enumerate(live.steps):
        if not step.reads or not step.writes or step.index < 0:
            continue
        if not overlays(graph, graph.nodes[step.index]):
            continue
        src = by_name.get(live.root_of.get(step.reads[0], step.reads[0]))
        dst = by_name.get(live.root_of.get(step.writes[0], step.writes[0]))
        if src is None or dst is None or src is dst or src.size is None or dst.size is None:
            continue
        if src.name in inputs or src.end != k or dst.start != k or src.start >= k:
            continue
        if dst.size >= src.size:
            src.end = k - 1  # the output covers the input at this step
        elif dst.end > k:
            dst.start = k + 1  # the input covers the output at this step
        else:
            continue
        live.overlaid.append((dst.name, src.name))

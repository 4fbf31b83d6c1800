"""Apply a target family's rules to the liveness of a model: the graph as deployed.

Two figures come out of it:

- the admissible floor (:mod:`.floor`): every order, fusion and in-place write the
  family's tool could choose (:func:`.rules_mcu.floor_capabilities`,
  :func:`.rules_n6_npu.floor_capabilities`), the least held while each operator runs;
- the typical deployment, in the file's order with what the tool usually does, which
  the offset plan places (``expected_bytes``):
  - I/O outside the activations (``--no-inputs-allocation`` ...): those buffers leave;
  - N6 NPU (:func:`.rules_n6_npu.streams`): a tensor that only streams from one unit
    into the next is never stored; the producer's inputs stay live until the last
    unit of the chain runs, as they do inside one epoch;
  - MCU and N6 software (:func:`.rules_mcu.overlays`): a layer's output may overwrite
    its dying data input, so at that step the pair needs max(input, output), not the
    sum: the smaller of the two is cut out of that step; a convolution's activation
    and pooling run inside it (:func:`.rules_mcu.software_fuses`).
"""

from __future__ import annotations

from collections.abc import Callable

from .deploy import Deployment
from .facts import QdqInfo
from .floor import Capabilities, Floor, admissible_floor
from .graph import Graph, Node
from .liveness import VIEW_OPS, Buffer, Liveness, analyze_liveness, finish
from .opclass import BINARY


def deployed_liveness(graph: Graph, qdq: QdqInfo, deployment: Deployment | None) -> Liveness:
    """The liveness of ``graph`` as ``deployment`` typically runs it (None: as exported)."""
    return deployed(graph, qdq, deployment)[0]


def deployed(
    graph: Graph, qdq: QdqInfo, deployment: Deployment | None
) -> tuple[Liveness, Floor]:
    """The typical deployment's liveness and the admissible floor of ``graph``.

    Without a deployment (the graph as exported, no target) the floor is the plain
    liveness bound of the file's order."""
    live = analyze_liveness(graph, qdq, int64_as_int32=deployment is not None)
    if deployment is None:
        return live, Floor(live.lower_bound, _step_name(live), list(live.peak))
    _io_outside(graph, live, deployment)
    floor = admissible_floor(graph, live, _capabilities(graph, qdq, deployment))
    apply_deployment(graph, qdq, live, deployment)
    return finish(live), floor


def _step_name(live: Liveness) -> str:
    return live.steps[live.peak_step].node if live.steps else "inputs at the start"


def _capabilities(graph: Graph, qdq: QdqInfo, deployment: Deployment) -> Capabilities:
    if deployment.family == "n6-npu":
        from .rules_n6_npu import floor_capabilities

        return floor_capabilities(graph, qdq.quantized)
    from .rules_mcu import floor_capabilities as software

    return software(graph)


def apply_deployment(graph: Graph, qdq: QdqInfo, live: Liveness, deployment: Deployment) -> None:
    """Rewrite ``live.buffers`` in place as ``deployment`` typically runs the model (I/O
    placement done by :func:`deployed`)."""
    if deployment.family == "n6-npu":
        _stream(graph, qdq, live)
    else:
        _fuse_software(graph, live)
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

    # Nodes the tool runs in software (float parameters) do not stream.
    units = qdq.quantized - qdq.software

    def decide(producer: Node, consumers: list[Node], extra: int, size: int) -> bool:
        # Streaming keeps the producer's inputs live until the last consumer: the tool
        # takes it only when that costs no more than storing the tensor.
        return streams(graph, producer, consumers, units) and extra <= size

    _fuse(graph, live, decide)


def _fuse_software(graph: Graph, live: Liveness) -> None:
    from .rules_mcu import software_fuses

    def decide(producer: Node, consumers: list[Node], extra: int, size: int) -> bool:
        return software_fuses(producer, consumers, typical=True)

    _fuse(graph, live, decide)


def _fuse(
    graph: Graph, live: Liveness, decide: Callable[[Node, list[Node], int, int], bool]
) -> None:
    """Leave out the tensors ``decide`` fuses away; their producers' inputs stay live
    until the fused readers run."""
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
            extra = sum(
                by_name[r].size or 0 for r in eff if r in by_name and by_name[r].end < users[-1]
            )
            if decide(producer, consumers, extra, buf.size):
                streamed.add(buf.name)
    if not streamed:
        return
    for k, eff in enumerate(effective):
        for root in eff:
            found = by_name.get(root)
            if found is not None and found.end < k:
                found.end = k
    live.streamed = sorted(set(live.streamed) | streamed)
    live.buffers = [b for b in live.buffers if b.name not in streamed]


def _overlay(graph: Graph, live: Liveness, deployment: Deployment) -> None:
    from .rules_mcu import overlays

    by_name: dict[str, Buffer] = {b.name: b for b in live.buffers}
    for k, step in enumerate(live.steps):
        if not step.reads or not step.writes or step.index < 0:
            continue
        node = graph.nodes[step.index]
        if not overlays(graph, node):
            continue
        dst = by_name.get(live.root_of.get(step.writes[0], step.writes[0]))
        if dst is None or dst.size is None or dst.start != k:
            continue
        # The data input it is written over: the first one, or for an element-wise
        # operator the dying input of the output's size (Add over its MatMul input).
        candidates = step.reads[:1] if node.op_type not in BINARY else step.reads
        dying = [
            b
            for b in (by_name.get(live.root_of.get(r, r)) for r in candidates)
            if b is not None and b is not dst and b.size is not None and b.end == k
        ]
        if not dying:
            continue
        src = max(dying, key=lambda b: (min(b.size or 0, dst.size or 0), -dying.index(b)))
        assert src.size is not None
        if dst.size >= src.size:
            src.end = k - 1  # the output covers the input at this step
        elif dst.end > k:
            dst.start = k + 1  # the input covers the output at this step
        else:
            continue
        live.overlaid.append((dst.name, src.name))

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

from ..deployment.settings import IO_TYPES, Deployment
from ..model.facts import QdqInfo
from ..model.graph import Graph, Node, elem_bytes
from .floor import Capabilities, Floor, admissible_floor
from .liveness import VIEW_OPS, Buffer, Liveness, Step, analyze_liveness, finish, step_node
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
    _io_types(graph, live, deployment)
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


def _io_types(graph: Graph, live: Liveness, deployment: Deployment) -> None:
    """``--input-data-type`` / ``--output-data-type``: an I/O buffer of another width than
    the model's becomes a buffer of the asked type, converted by a step the deployment
    adds (before the first operator for inputs, after the last one for outputs)."""
    by_name = {b.name: b for b in live.buffers}

    def retyped(roots: list[str], types: tuple[str, ...]) -> list[tuple[Buffer, Buffer, str]]:
        found = []
        for k, root in enumerate(roots):
            if not types:
                break
            kind = types[min(k, len(types) - 1)]
            buf = by_name.get(root)
            elements = max((graph.info(m).elements or 0 for m in buf.members), default=0) if buf else 0
            width = elem_bytes(IO_TYPES[kind])
            if buf is None or buf.size is None or not elements or width is None:
                continue
            if buf.size == elements * width:
                continue  # the model's own width: no conversion
            found.append((buf, Buffer(f"{root} ({kind})", elements * width, 0, 0, []), kind))
        return found

    ins = retyped(live.inputs, deployment.input_types)
    outs = retyped(live.outputs, deployment.output_types)
    if not ins and not outs:
        return
    shift = len(ins)
    for buf in live.buffers:
        buf.start += shift
        buf.end += shift
    steps: list[Step] = []
    for k, (old, new, kind) in enumerate(ins):
        old.start = k
        new.start, new.end = 0, k
        steps.append(Step(f"{old.name} from {kind}", "Cast", [new.name], [old.name]))
    steps += live.steps
    for old, new, kind in outs:
        k = len(steps)
        old.end = k
        new.start = new.end = k
        steps.append(Step(f"{old.name} to {kind}", "Cast", [old.name], [new.name]))
    last = len(steps) - 1
    for _, new, _ in outs:
        new.end = last
    live.steps = steps
    for old, new, _ in ins + outs:
        live.buffers.append(new)
        new.members.append(new.name)
        live.root_of[new.name] = new.name
    swap = {old.name: new.name for old, new, _ in ins + outs}
    live.inputs = [swap.get(b, b) for b in live.inputs]
    live.outputs = [swap.get(b, b) for b in live.outputs]


def _io_outside(graph: Graph, live: Liveness, deployment: Deployment) -> None:
    outside: set[str] = set()
    if not deployment.inputs_in_activations:
        outside.update(live.inputs)
    if not deployment.outputs_in_activations:
        outside.update(live.outputs)
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
    io = set(live.inputs) | set(live.outputs)
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
            producer = step_node(graph, step)
            consumers = [step_node(graph, live.steps[u]) for u in users]
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
        if not step.reads or not step.writes:
            continue
        node = step_node(graph, step)
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

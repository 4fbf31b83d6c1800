"""Activation tensors as deployed, their lifetimes in execution order, and the bound.

Each step is a compute node that runs on the target: folded Q/DQ nodes are not
steps, and view operators (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
Dropout) write into the buffer they read, as deployments do. A QDQ model's float
inputs and outputs that only feed a QuantizeLinear / come from a
DequantizeLinear are int8 on the target, as stedgeai makes them. A buffer is live
from the step that writes it (graph inputs: step 0) to the last step that reads
it (graph outputs: the last step), both inclusive, so the running node's inputs
and outputs are counted together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.facts import QdqInfo
from ..model.graph import DQ_OPS, Q_OPS, Graph, Node, elem_bytes, is_compute

_INT8 = 3  # TensorProto.INT8
_INT32 = 6
_INT64 = 7
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})


@dataclass
class Buffer:
    """One activation buffer: a tensor and the tensors that alias it."""

    name: str
    size: int | None  # bytes as deployed; None when the shape is unresolved
    start: int
    end: int
    members: list[str] = field(default_factory=list)


@dataclass
class Step:
    """A node that runs on the target, with the buffers it reads and writes."""

    node: str
    op_type: str
    reads: list[str]
    writes: list[str]
    index: int = -1  # the graph node it runs


@dataclass
class Liveness:
    """Buffers, steps and the liveness figures of one model."""

    buffers: list[Buffer]
    steps: list[Step]
    lower_bound: int
    peak_step: int
    peak: list[str]
    naive: int
    unresolved: list[str]
    root_of: dict[str, str] = field(default_factory=dict)  # tensor -> its buffer
    streamed: list[str] = field(default_factory=list)  # buffers the target never stores
    overlaid: list[tuple[str, str]] = field(default_factory=list)  # (output, input) pairs
    outside: list[str] = field(default_factory=list)  # I/O buffers outside the activations
    inputs: list[str] = field(default_factory=list)  # the graph's input buffers as deployed
    outputs: list[str] = field(default_factory=list)  # the graph's output buffers as deployed

    def resolved(self) -> list[Buffer]:
        """Buffers with a known size."""
        return [b for b in self.buffers if b.size is not None]


class _Aliases:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        root = name
        while root in self.parent:
            root = self.parent[root]
        while name != root:  # path compression keeps long chains linear
            nxt = self.parent[name]
            self.parent[name] = root
            name = nxt
        return root

    def union(self, child: str, root: str) -> None:
        a, b = self.find(child), self.find(root)
        if a != b:
            self.parent[a] = b


def analyze_liveness(graph: Graph, qdq: QdqInfo, *, int64_as_int32: bool = False) -> Liveness:
    """Build the deployed buffers and steps of ``graph`` and compute the bound.

    The target's own rules (I/O placement, NPU streaming, MCU overlay) are applied on
    top by :func:`pytest_stedge.oracle.memory.deployed_liveness.deployed_liveness`.
    """
    nodes = graph.nodes
    const = graph.constants
    aliases = _Aliases()
    # Deployed element type of the float tensors a QDQ model stores as integers (float
    # inputs read by a QuantizeLinear included). A tensor the file already types as an
    # integer or float16 (every TFLite tensor, an int16 QDQ tensor) keeps its own width.
    dtype_of: dict[str, int] = {name: _input_type(graph, name) for name in qdq.int8_inputs}
    if int64_as_int32:  # no stedgeai runtime has int64 tensors: they become int32
        dtype_of.update(
            (name, _INT32) for name, info in graph.tensors.items() if info.dtype == _INT64
        )
    steps: list[Step] = []

    def is_act(name: str) -> bool:
        return bool(name) and name not in const

    for node in nodes:
        if not is_compute(graph, node):
            continue
        op = node.op_type
        if op in DQ_OPS and is_act(node.inputs[0]):
            out = node.outputs[0]
            users = graph.consumers.get(out, [])
            # A dequantized graph output is delivered in int8, like stedgeai does.
            if (out in graph.outputs and not users) or (
                out not in graph.outputs and users and all(u in qdq.quantized for u in users)
            ):
                aliases.union(out, node.inputs[0])
                continue
        if op in Q_OPS and is_act(node.inputs[0]):
            src = node.inputs[0]
            prod = graph.producer.get(src)
            if (prod is not None and prod in qdq.quantized) or src in qdq.int8_inputs:
                # The int8 operator writes the quantized tensor directly.
                dtype_of[src] = graph.info(node.outputs[0]).dtype
                aliases.union(node.outputs[0], src)
                continue
        if op in DQ_OPS and is_act(node.inputs[0]):
            dtype_of.setdefault(node.inputs[0], graph.info(node.inputs[0]).dtype)
        reads: list[str] = []
        for name in node.inputs:
            if not is_act(name):
                continue
            prod = graph.producer.get(name)
            if (
                node.index in qdq.quantized
                and prod is not None
                and nodes[prod].op_type in DQ_OPS
                and is_act(nodes[prod].inputs[0])
            ):
                name = nodes[prod].inputs[0]  # an int8 operator reads the int8 tensor
            reads.append(name)
        # Optional outputs nobody reads (Dropout masks, pooling indices) are not computed.
        writes = [
            o
            for k, o in enumerate(node.outputs)
            if o and (k == 0 or graph.consumers.get(o) or o in graph.outputs)
        ]
        if node.index in qdq.quantized and reads:
            # An integer operator's float-typed outputs take the type of its inputs.
            width = next(
                (t for t in (_deployed_type(graph, dtype_of, r) for r in reads) if t), _INT8
            )
            for name in writes:
                if graph.info(name).dtype in _FOLDED_TYPES:
                    dtype_of.setdefault(name, width)
        if op in VIEW_OPS and reads and writes:
            aliases.union(writes[0], reads[0])
        steps.append(Step(node.name, op, reads, writes, node.index))

    nsteps = max(len(steps), 1)
    groups: dict[str, list[str]] = {}
    order: list[str] = []

    def member(name: str) -> None:
        root = aliases.find(name)
        if root not in groups:
            groups[root] = []
            order.append(root)
        if name not in groups[root]:
            groups[root].append(name)

    for name in graph.inputs:
        member(name)
    for step in steps:
        for name in step.reads + step.writes:
            member(name)
    for name in graph.outputs:
        if is_act(name):
            member(name)

    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for name in graph.inputs:
        root = aliases.find(name)
        start[root] = 0
    for k, step in enumerate(steps):
        for name in step.writes:
            root = aliases.find(name)
            start.setdefault(root, k)
            end[root] = max(end.get(root, k), k)
        for name in step.reads:
            root = aliases.find(name)
            start.setdefault(root, k)
            end[root] = max(end.get(root, k), k)
    for name in graph.outputs:
        if is_act(name):
            root = aliases.find(name)
            start.setdefault(root, 0)
            end[root] = nsteps - 1
    for root in order:
        end.setdefault(root, start.get(root, 0))

    buffers: list[Buffer] = []
    unresolved: list[str] = []
    for root in order:
        types = [dtype_of[m] for m in groups[root] if m in dtype_of]
        size = _size(
            graph, groups[root], min(types, key=lambda d: elem_bytes(d) or 8) if types else None
        )
        if size is None:
            unresolved.extend(groups[root])
        buffers.append(Buffer(root, size, start.get(root, 0), end[root], groups[root]))

    root_of = {m: b.name for b in buffers for m in b.members}
    live = Liveness(buffers, steps, 0, 0, [], 0, unresolved, root_of)
    live.inputs = list(dict.fromkeys(root_of.get(n, n) for n in graph.inputs))
    live.outputs = list(dict.fromkeys(root_of.get(n, n) for n in graph.outputs if is_act(n)))
    return finish(live)


def step_node(graph: Graph, step: Step) -> Node:
    """The graph node a step runs, or a node standing for a step the deployment adds (an
    I/O type conversion)."""
    if step.index >= 0:
        return graph.nodes[step.index]
    return Node(-1, step.node, step.op_type, list(step.reads), list(step.writes))


_FOLDED_TYPES = frozenset({0, 1, 11})  # unknown, float32, float64: what QDQ folding retypes
_INTEGER_TYPES = frozenset({2, 3, 4, 5, 6, 12})  # (u)int8, (u)int16, (u)int32


def _input_type(graph: Graph, name: str) -> int:
    """The deployed type of a graph input that a QDQ model quantizes: its own when the file
    types it as an integer, else the type of the QuantizeLinear that reads it (int8 when
    the quantization goes through layout operators first)."""
    own = graph.info(name).dtype
    if own not in _FOLDED_TYPES:
        return own
    for user in graph.consumers.get(name, []):
        node = graph.nodes[user]
        if node.op_type in Q_OPS:
            found = graph.info(node.outputs[0]).dtype
            if found in _INTEGER_TYPES:
                return found
    return _INT8


def _deployed_type(graph: Graph, dtype_of: dict[str, int], name: str) -> int:
    """The integer type a tensor is stored in, 0 when it is not stored as an integer."""
    if name in dtype_of:
        return dtype_of[name]
    own = graph.info(name).dtype
    return own if own in _INTEGER_TYPES else 0


def finish(live: Liveness) -> Liveness:
    """Fill the bound, the peak and the naive sum from the buffers as they are."""
    nsteps = max(len(live.steps), 1)
    live.lower_bound, live.peak_step = _bound(live.buffers, nsteps)
    live.peak = [
        b.name
        for b in live.buffers
        if b.size is not None and b.start <= live.peak_step <= b.end
    ]
    live.naive = sum(b.size for b in live.buffers if b.size is not None)
    return live


def _size(graph: Graph, names: list[str], dtype: int | None) -> int | None:
    """Bytes of an alias group: its largest member, in the quantized type if folded."""
    counts = [graph.info(n).elements for n in names]
    if dtype:
        known = [c for c in counts if c is not None]
        width = elem_bytes(dtype)
        return max(known) * width if known and width is not None else None
    sizes = [
        c * w
        for c, w in ((c, elem_bytes(graph.info(n).dtype)) for n, c in zip(names, counts))
        if c is not None and w is not None
    ]
    return max(sizes) if sizes else None


def _bound(buffers: list[Buffer], nsteps: int) -> tuple[int, int]:
    """Largest sum of live sizes over steps (difference array, linear time)."""
    delta = [0] * (nsteps + 1)
    for b in buffers:
        if b.size is None or b.end < b.start:
            continue
        delta[b.start] += b.size
        delta[b.end + 1] -= b.size
    best, best_step, live = 0, 0, 0
    for k in range(nsteps):
        live += delta[k]
        if live > best:
            best, best_step = live, k
    return best, best_step

"""Facts of a model as deployed: quantized and float nodes, weights, operator counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .graph import DQ_OPS, INT_OPS, Q_OPS, Graph, Node, elem_bytes, is_compute

# Inputs that carry shapes, axes or quantization parameters, not weights.
_META_INPUTS: dict[str, tuple[int, ...]] = {
    "QuantizeLinear": (1, 2),
    "DequantizeLinear": (1, 2),
    "Reshape": (1,),
    "Unsqueeze": (1,),
    "Squeeze": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 2, 3),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "Split": (1,),
    "TopK": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "OneHot": (1,),
    "Clip": (1, 2),
}


@dataclass
class QdqInfo:
    """How a QDQ model folds: quantized nodes, float nodes, folded tensors."""

    qdq: bool
    quantized: set[int]
    float_nodes: list[int]
    int8_inputs: set[str] = field(default_factory=set)  # float graph inputs int8 on target
    # Integer nodes with a learned parameter left in float (a PRelu slope outside the
    # quantization): they run on integer buffers, in software on the N6.
    software: set[int] = field(default_factory=set)


_QUANT_TYPES = frozenset({2, 3, 4, 5})  # uint8, int8, uint16, int16
_FLOAT_TYPES = frozenset({1, 10, 11, 16})  # float, float16, double, bfloat16
# Operators whose constant inputs are learned parameters (quantized through a DQ when
# the operator is int8); Resize scales or Pad amounts are not.
_WEIGHTED_OPS = frozenset(
    {"Conv", "ConvTranspose", "Gemm", "MatMul", "PRelu", "Add", "Sub", "Mul", "Div",
     "BatchNormalization", "InstanceNormalization", "LayerNormalization"}
)

# Operators that move or select int8 values without rescaling them: in a QDQ
# model they run in int8 between a DequantizeLinear and a QuantizeLinear.
TRANSPARENT_OPS = frozenset(
    {
        "Relu",
        "Clip",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Pad",
        "Transpose",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Identity",
        "Slice",
        "Concat",
        "Split",
        "Gather",
        "Resize",
        "Upsample",
        "DepthToSpace",
        "SpaceToDepth",
        "Tile",
        "Expand",
    }
)


def classify(graph: Graph) -> QdqInfo:
    """Which compute nodes are quantized and which stay float.

    A compute node is quantized when every activation input is int8 on the
    target (a DequantizeLinear output, or the output of a transparent operator
    such as Pad or MaxPool whose inputs are) and every output ends in a
    QuantizeLinear (directly or through transparent operators); it is then one
    int8 operator. QOperator nodes (QLinearConv ...) are quantized as they are.
    """
    nodes = graph.nodes
    compute = [n for n in nodes if is_compute(graph, n)]
    qdq = any(n.op_type in Q_OPS | DQ_OPS | INT_OPS for n in compute)

    def forward(seeds: set[str]) -> set[str]:
        found = set(seeds)
        for node in compute:  # graph order is topological
            acts = [n for n in node.inputs if n and n not in graph.constants]
            from_dq = node.op_type in DQ_OPS and bool(acts)
            moved = node.op_type in TRANSPARENT_OPS and bool(acts) and all(a in found for a in acts)
            if from_dq or moved:
                found.update(o for o in node.outputs if o)
        return found

    def ends_int8(name: str, int8_out: set[str], quantized: set[int]) -> bool:
        """Every reader takes it as int8: a Q, an int8 operator, or layout ops that do."""
        users = graph.consumers.get(name, [])
        if not name or name in graph.outputs or not users:
            return False
        return all(
            nodes[u].op_type in Q_OPS
            or u in quantized
            or (
                nodes[u].op_type in TRANSPARENT_OPS
                and all(o in int8_out for o in nodes[u].outputs if o)
            )
            for u in users
        )

    int8_in = forward(set())
    int8_inputs: set[str] = set()

    def float_weights(node: Node) -> bool:
        # A learned parameter fed as a float constant, not through DequantizeLinear (e.g. a
        # PRelu slope left out of quantization): the operator still runs on the int8
        # tensors its DQ/Q pairs give it (the N6 runs such PRelu in software epochs on S8
        # and Q16 buffers, no FLOAT one), but not on the NPU's units.
        if node.op_type not in _WEIGHTED_OPS:
            return False
        for name in node.inputs:
            if not name or name not in graph.constants:
                continue
            producer = graph.producer.get(name)
            if producer is not None and nodes[producer].op_type in DQ_OPS:
                continue
            if graph.info(name).dtype in _FLOAT_TYPES:
                return True
        return False

    def int8_typed(node: Node) -> bool:
        # Already integer in the ONNX graph (e.g. a Transpose of an int8 input).
        names = [n for n in node.inputs if n and n not in graph.constants] + node.outputs
        return all(graph.info(n).dtype in _QUANT_TYPES for n in names if n)

    quantized: set[int] = {
        n.index
        for n in compute
        if n.op_type in INT_OPS or (n.op_type not in Q_OPS | DQ_OPS and int8_typed(n))
    }
    while True:  # fixed point: a tensor read only by int8 operators is int8 too
        int8_out: set[str] = set()
        for node in reversed(compute):
            int8_out.update(o for o in node.outputs if ends_int8(o, int8_out, quantized))
        # A float input that only reaches QuantizeLinear (through layout ops) is int8
        # on the target: stedgeai makes the network input int8.
        int8_inputs = {n for n in graph.inputs if ends_int8(n, int8_out, quantized)}
        # An integer operator's outputs that end in int8 are int8 for their readers too
        # (a PRelu with a float slope between a DQ and a MaxPool that a Q ends).
        written = {o for q in quantized for o in nodes[q].outputs if o in int8_out}
        int8_in = forward(int8_inputs | written)
        found = set(quantized)
        for node in compute:
            if node.op_type in Q_OPS | DQ_OPS:
                continue
            acts = [n for n in node.inputs if n and n not in graph.constants]
            outs = [o for o in node.outputs if o]
            if (
                acts
                and outs
                and all(a in int8_in for a in acts)
                and all(o in int8_out for o in outs)
            ):
                found.add(node.index)
        if found == quantized:
            break
        quantized = found
    float_nodes = [
        n.index for n in compute if n.op_type not in Q_OPS | DQ_OPS and n.index not in quantized
    ]
    software = {i for i in quantized if float_weights(nodes[i])}
    return QdqInfo(qdq, quantized, float_nodes, int8_inputs, software)


def weights(graph: Graph) -> tuple[int, int]:
    """Parameter count and weight bytes as deployed.

    The weights are the constant tensors that compute nodes read. A weight made
    by DequantizeLinear is stored as its quantized input (int8 1 byte, int32
    biases 4); float weights are 4 bytes. Shapes, axes and quantization
    parameters are not weights.
    """
    nodes = graph.nodes
    seen: set[str] = set()
    params = 0
    nbytes = 0
    for node in nodes:
        if not is_compute(graph, node):
            continue
        meta = _META_INPUTS.get(node.op_type, ())
        for pos, name in enumerate(node.inputs):
            if not name or name not in graph.constants or pos in meta or name in seen:
                continue
            seen.add(name)
            stored = name
            prod = graph.producer.get(name)
            if prod is not None and nodes[prod].op_type in DQ_OPS:
                stored = nodes[prod].inputs[0]
            info = graph.info(stored)
            count = info.elements
            width = elem_bytes(info.dtype)
            if count is None or width is None:
                continue
            params += count
            nbytes += count * width
    return params, nbytes


def op_counts(graph: Graph) -> dict[str, int]:
    """Operator counts over every node of the main graph."""
    return dict(sorted(Counter(n.op_type for n in graph.nodes).items()))

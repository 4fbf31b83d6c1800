"""Load an ONNX model and describe it as deployed: constants, QDQ folding, facts.

The graph the oracle reasons about is the one a deployment runs: constant
sub-graphs (initializers, ``Constant``, ``ConstantOfShape`` of constants, DQ of
int8 weights ...) become weights in flash, and in a QDQ model each compute node
wrapped by DequantizeLinear inputs and QuantizeLinear outputs becomes one int8
operator, so the float tensors between the Q/DQ pairs do not exist.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OracleError

Q_OPS = frozenset({"QuantizeLinear"})
DQ_OPS = frozenset({"DequantizeLinear"})
# Operators of the QOperator format: quantized whatever wraps them.
INT_OPS = frozenset(
    {
        "QLinearConv",
        "QLinearMatMul",
        "QLinearAdd",
        "QLinearMul",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearAveragePool",
        "QLinearGlobalAveragePool",
        "QLinearConcat",
        "QLinearSoftmax",
        "ConvInteger",
        "MatMulInteger",
        "DynamicQuantizeLinear",
    }
)
# Operators whose output depends on more than their inputs: never folded as constants.
_NON_DETERMINISTIC = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"}
)
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

# Bytes per element of ONNX TensorProto data types (strings/unknown: None).
_ELEM_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
_ELEM_BYTES.update({17: 1, 18: 1, 19: 1, 20: 1, 21: 1, 22: 1})  # float8 / int4 (packed: rounded up)


def elem_bytes(dtype: int) -> int | None:
    """Bytes per element of an ONNX ``TensorProto`` data type, ``None`` if unknown."""
    return _ELEM_BYTES.get(int(dtype))


@dataclass
class TensorInfo:
    """What shape inference knows about one tensor."""

    name: str
    dtype: int = 0
    shape: tuple[int | str | None, ...] | None = None

    @property
    def elements(self) -> int | None:
        """Element count, ``None`` while any dimension is unknown or symbolic."""
        if self.shape is None:
            return None
        count = 1
        for dim in self.shape:
            if not isinstance(dim, int) or dim < 0:
                return None
            count *= dim
        return count


@dataclass
class Node:
    """One ONNX node, in graph (execution) order."""

    index: int
    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    domain: str = ""


@dataclass
class Graph:
    """The main graph of a model with shapes inferred and constants identified."""

    path: Path | None
    nodes: list[Node]
    tensors: dict[str, TensorInfo]
    inputs: list[str]  # real inputs (initializers excluded)
    outputs: list[str]
    constants: set[str]
    initializers: dict[str, Any]  # name -> TensorProto
    opset: int
    producer: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, list[int]] = field(default_factory=dict)
    model: Any = None  # the onnx ModelProto after shape inference

    def info(self, name: str) -> TensorInfo:
        """The tensor's info (an empty one when shape inference said nothing)."""
        return self.tensors.get(name) or TensorInfo(name)


def _tensor_info(value_info: Any) -> TensorInfo:
    ttype = value_info.type.tensor_type
    shape: tuple[int | str | None, ...] | None = None
    if ttype.HasField("shape"):
        dims: list[int | str | None] = []
        for dim in ttype.shape.dim:
            if dim.HasField("dim_value"):
                dims.append(int(dim.dim_value))
            elif dim.HasField("dim_param"):
                dims.append(dim.dim_param)
            else:
                dims.append(None)
        shape = tuple(dims)
    return TensorInfo(value_info.name, int(ttype.elem_type), shape)


def load_model(source: Path | str | Any) -> Any:
    """Load an ONNX ``ModelProto`` from a path (or return the one given).

    :raises OracleError: the file is missing or not an ONNX model.
    """
    import onnx

    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    if not path.is_file():
        raise OracleError(f"{path}: no such model file (expected an .onnx file)")
    try:
        model = onnx.load(str(path))
    except Exception as exc:  # protobuf raises DecodeError and friends
        raise OracleError(f"{path}: not an ONNX model ({type(exc).__name__}: {exc})") from exc
    if not model.graph.node and not model.graph.output:
        raise OracleError(f"{path}: not an ONNX model (no graph nodes or outputs)")
    return model


def _fix_batch_dims(model: Any) -> None:
    """A symbolic first dimension of a graph input is batch 1, as stedgeai assumes."""
    inits = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in inits or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        if len(dims) >= 2 and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = 1


def build_graph(source: Path | str | Any) -> Graph:
    """Load, infer shapes, and index the model's main graph.

    :raises OracleError: not ONNX, or shape inference rejects the model.
    """
    import onnx

    model = load_model(source)
    path = None if isinstance(source, onnx.ModelProto) else Path(source)
    where = str(path) if path else "<model>"
    _fix_batch_dims(model)
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:
        raise OracleError(f"{where}: ONNX shape inference failed: {exc}") from exc
    g = model.graph
    tensors: dict[str, TensorInfo] = {}
    for value in list(g.input) + list(g.value_info) + list(g.output):
        tensors[value.name] = _tensor_info(value)
    initializers = {init.name: init for init in g.initializer}
    for name, init in initializers.items():
        tensors[name] = TensorInfo(name, int(init.data_type), tuple(int(d) for d in init.dims))
    nodes: list[Node] = []
    for index, node in enumerate(g.node):
        nodes.append(
            Node(
                index,
                node.name or f"{node.op_type}_{index}",
                node.op_type,
                list(node.input),
                list(node.output),
                node.domain,
            )
        )
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    graph = Graph(
        path=path,
        nodes=nodes,
        tensors=tensors,
        inputs=[v.name for v in g.input if v.name not in initializers],
        outputs=[v.name for v in g.output],
        constants=set(),
        initializers=initializers,
        opset=opset,
        model=model,
    )
    _index(graph)
    _find_constants(graph)
    if _unresolved_activations(graph):
        _shapes_from_folded(graph)
    return graph


def _unresolved_activations(graph: Graph) -> bool:
    return any(
        graph.info(o).elements is None
        for n in graph.nodes
        for o in n.outputs
        if o and o not in graph.constants and graph.consumers.get(o)
    )


def _shapes_from_folded(graph: Graph) -> None:
    """Evaluate the constant sub-graph and infer shapes again.

    Shape inference cannot see through computed constants (pads or shapes built
    by Constant/Concat/Slice chains); folding them into initializers fixes that.
    Only the inferred shapes are kept: the graph itself stays as exported, so
    the weights keep their stored (quantized) form.
    """
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    model = graph.model
    g = model.graph
    frontier: list[str] = []
    seen: set[str] = set()
    const_nodes = []
    compute_nodes = []
    for proto, node in zip(g.node, graph.nodes):
        if is_compute(graph, node):
            compute_nodes.append(proto)
            for name in node.inputs:
                if name in graph.constants and name not in graph.initializers and name not in seen:
                    seen.add(name)
                    frontier.append(name)
        else:
            const_nodes.append(proto)
    if not frontier:
        return
    try:
        sub = helper.make_graph(
            const_nodes,
            "constants",
            [],
            [helper.make_tensor_value_info(n, 0, None) for n in frontier],
            list(g.initializer),
        )
        sub_model = helper.make_model(sub, opset_imports=list(model.opset_import))
        sub_model.ir_version = model.ir_version
        values = ReferenceEvaluator(sub_model).run(None, {})
        folded = helper.make_graph(
            compute_nodes,
            g.name,
            list(g.input),
            list(g.output),
            list(g.initializer)
            + [numpy_helper.from_array(v, n) for n, v in zip(frontier, values)],
        )
        folded_model = helper.make_model(folded, opset_imports=list(model.opset_import))
        folded_model.ir_version = model.ir_version
        for out in folded_model.graph.output:  # let inference replace symbolic output dims
            out.type.tensor_type.ClearField("shape")
        inferred = onnx.shape_inference.infer_shapes(folded_model, data_prop=True)
    except Exception:  # the fallback is best effort: unresolved tensors stay reported
        return
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        info = _tensor_info(value)
        old = graph.tensors.get(value.name)
        if info.elements is not None and (old is None or old.elements is None):
            graph.tensors[value.name] = TensorInfo(value.name, info.dtype or (old.dtype if old else 0), info.shape)


def _index(graph: Graph) -> None:
    defined = set(graph.inputs) | set(graph.initializers) | {""}
    for node in graph.nodes:
        for name in node.inputs:
            if name not in defined and name not in graph.producer:
                raise OracleError(
                    f"{graph.path or '<model>'}: node {node.name!r} ({node.op_type}) reads "
                    f"{name!r} before any node produces it (graph not in topological order)"
                )
            if name:
                graph.consumers.setdefault(name, []).append(node.index)
        for name in node.outputs:
            if name:
                graph.producer[name] = node.index


def _find_constants(graph: Graph) -> None:
    const = set(graph.initializers)
    for node in graph.nodes:
        if node.op_type in _NON_DETERMINISTIC or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant" or all(not n or n in const for n in node.inputs):
            # Shape-of-activation ops are constant only when shapes are static; keep them live.
            if node.op_type == "Shape" and not all(n in const for n in node.inputs if n):
                continue
            const.update(n for n in node.outputs if n)
    graph.constants = const


def is_compute(graph: Graph, node: Node) -> bool:
    """A node that runs at inference time (it reads at least one activation)."""
    return not all(o in graph.constants for o in node.outputs if o)


@dataclass
class QdqInfo:
    """How a QDQ model folds: quantized nodes, float nodes, folded tensors."""

    qdq: bool
    quantized: set[int]
    float_nodes: list[int]


def classify(graph: Graph) -> QdqInfo:
    """Which compute nodes are quantized and which stay float.

    A compute node is quantized when every activation input comes from a
    DequantizeLinear and every output goes only to QuantizeLinear nodes (it is
    then one int8 operator on the target), or when it is a QOperator node.
    """
    nodes = graph.nodes
    compute = [n for n in nodes if is_compute(graph, n)]
    qdq = any(n.op_type in Q_OPS | DQ_OPS | INT_OPS for n in compute)
    quantized: set[int] = set()
    for node in compute:
        if node.op_type in Q_OPS | DQ_OPS:
            continue
        if node.op_type in INT_OPS:
            quantized.add(node.index)
            continue
        acts = [n for n in node.inputs if n and n not in graph.constants]
        if not acts:
            continue
        ins_ok = all(
            n in graph.producer and nodes[graph.producer[n]].op_type in DQ_OPS for n in acts
        )
        outs = [o for o in node.outputs if o]
        outs_ok = bool(outs) and all(
            o not in graph.outputs
            and graph.consumers.get(o)
            and all(nodes[c].op_type in Q_OPS for c in graph.consumers[o])
            for o in outs
        )
        if ins_ok and outs_ok:
            quantized.add(node.index)
    float_nodes = [
        n.index
        for n in compute
        if n.op_type not in Q_OPS | DQ_OPS and n.index not in quantized
    ]
    return QdqInfo(qdq=qdq, quantized=quantized, float_nodes=float_nodes)


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

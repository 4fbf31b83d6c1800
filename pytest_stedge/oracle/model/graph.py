"""Load an ONNX model and describe it as deployed: constants, QDQ folding, facts.

The graph the oracle reasons about is the one a deployment runs: constant
sub-graphs (initializers, ``Constant``, ``ConstantOfShape`` of constants, DQ of
int8 weights ...) become weights in flash, and in a QDQ model each compute node
wrapped by DequantizeLinear inputs and QuantizeLinear outputs becomes one int8
operator, so the float tensors between the Q/DQ pairs do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

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
    attrs: dict[str, Any] = field(default_factory=dict)  # TFLite options the rules read


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
    source: str = "onnx"  # "onnx" or "tflite"
    notes: list[str] = field(default_factory=list)  # how the file was read (e.g. a _Q.json)

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
    index_graph(graph)
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
    # Weights (DQ outputs) have static shapes already: fold only what shapes depend on.
    frontier: list[str] = []
    for node in graph.nodes:
        if not is_compute(graph, node):
            continue
        for name in node.inputs:
            prod = graph.producer.get(name)
            if (
                name in graph.constants
                and prod is not None
                and graph.nodes[prod].op_type not in DQ_OPS
                and name not in frontier
            ):
                frontier.append(name)
    if not frontier:
        return
    needed: set[int] = set()
    stack = [graph.producer[n] for n in frontier]
    while stack:
        k = stack.pop()
        if k in needed:
            continue
        needed.add(k)
        stack.extend(graph.producer[n] for n in graph.nodes[k].inputs if n in graph.producer)
    const_nodes = [p for p, n in zip(g.node, graph.nodes) if n.index in needed]
    kept_nodes = [p for p, n in zip(g.node, graph.nodes) if n.index not in needed]
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
            kept_nodes,
            g.name,
            list(g.input),
            list(g.output),
            list(g.initializer) + [numpy_helper.from_array(v, n) for n, v in zip(frontier, values)],
        )
        folded_model = helper.make_model(folded, opset_imports=list(model.opset_import))
        folded_model.ir_version = model.ir_version
        for out in folded_model.graph.output:  # let inference replace symbolic output dims
            out.type.tensor_type.ClearField("shape")
        inferred = onnx.shape_inference.infer_shapes(folded_model, data_prop=True)
    except Exception:  # noqa: BLE001 - best effort: unresolved tensors stay reported
        return
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        info = _tensor_info(value)
        old = graph.tensors.get(value.name)
        if info.elements is not None and (old is None or old.elements is None):
            graph.tensors[value.name] = TensorInfo(
                value.name, info.dtype or (old.dtype if old else 0), info.shape
            )


def index_graph(graph: Graph) -> None:
    """Fill ``producer`` and ``consumers``; refuse a graph not in topological order."""
    defined = set(graph.inputs) | set(graph.initializers) | graph.constants | {""}
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

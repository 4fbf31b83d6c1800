"""What the fake compiler knows about a model: layers, tensors, parameters, MACC.

Everything is derived from the ONNX file itself, so two models give two sets of figures.
A QDQ model is folded the way the real front end does: Q/DQ pairs between quantized ops vanish,
the tensors they wrap are deployed as int8 (1 byte per element) and weights feeding a
DequantizeLinear count 1 byte per element.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

QDQ = ("QuantizeLinear", "DequantizeLinear")
# Ops the NPU never maps (they become SW epochs even inside a quantized region).
SW_ONLY = {
    "Softmax",
    "LogSoftmax",
    "DepthToSpace",
    "SpaceToDepth",
    "Gather",
    "GatherElements",
    "Tile",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "Log",
    "Exp",
    "Greater",
    "Less",
    "Equal",
    "Resize",
    "NonZero",
    "TopK",
    "ArgMax",
    "ArgMin",
    "Erf",
    "Einsum",
    "CumSum",
}
# Element-wise activations fused into the epoch of the op before them.
FUSABLE = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "PRelu", "Tanh"}
_ELEM_SIZE = {
    np.dtype("float32"): 4,
    np.dtype("float64"): 8,
    np.dtype("float16"): 2,
    np.dtype("int8"): 1,
    np.dtype("uint8"): 1,
    np.dtype("int16"): 2,
    np.dtype("int32"): 4,
    np.dtype("int64"): 8,
}


class ModelError(Exception):
    """The model cannot be read; the CLI turns it into an `E010(InvalidModelError)` line."""


@dataclass
class Tensor:
    """One activation tensor of the deployed graph."""

    name: str
    shape: list[int]
    quantized: bool
    scale: float | None = None
    zero_point: int | None = None

    @property
    def elems(self) -> int:
        """Number of elements (unknown dims count as 1)."""
        return int(np.prod([d if d > 0 else 1 for d in self.shape])) if self.shape else 1

    @property
    def nbytes(self) -> int:
        """Deployed size: 1 byte per element when quantized, 4 otherwise."""
        return self.elems * (1 if self.quantized else 4)


@dataclass
class Layer:
    """One deployed operator (Q/DQ pairs folded away)."""

    index: int
    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    weights: list[str]
    macc: int
    quantized: bool
    boundary: bool = False  # a Q/DQ kept at a float graph edge


@dataclass
class Weight:
    """One parameter array with its deployed size."""

    name: str
    shape: list[int]
    nbytes: int
    items: int
    quantized: bool


@dataclass
class ModelFacts:
    """The model as the fake front end sees it."""

    path: Path
    name: str
    md5: str
    size: int
    layers: list[Layer]
    tensors: dict[str, Tensor]
    weights: dict[str, Weight]
    inputs: list[str]
    outputs: list[str]
    qdq: bool
    onnx_inputs: list[dict[str, Any]] = field(default_factory=list)
    onnx_outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def params(self) -> int:
        """Number of parameter items (Q/DQ scales and zero points excluded)."""
        return sum(w.items for w in self.weights.values())

    @property
    def weights_bytes(self) -> int:
        """Deployed weight bytes."""
        return sum(w.nbytes for w in self.weights.values())

    @property
    def float_weights_bytes(self) -> int:
        """Weight bytes had the model stayed float (the report's `vs float model`)."""
        return 4 * self.params

    @property
    def macc(self) -> int:
        """Total multiply-accumulates."""
        return sum(layer.macc for layer in self.layers)


def c_name(text: str) -> str:
    """A C identifier as the tool derives it from a file stem (`a.b-c` -> `a_b_c`)."""
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)
    return out if out and not out[0].isdigit() else f"_{out}"


def _shape_of(value_info: Any) -> list[int]:
    dims = value_info.type.tensor_type.shape.dim
    return [int(d.dim_value) if d.HasField("dim_value") else 1 for d in dims]


def _macc(
    op: str, in_shapes: list[list[int]], out_shape: list[int], attrs: dict[str, Any], n_out: int
) -> int:
    """MACC per operator, counted like the tool's model table (bias adds one per output)."""
    out_elems = int(np.prod(out_shape)) if out_shape else 1
    if op in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv") and len(in_shapes) > 1:
        w = in_shapes[1]
        group = int(attrs.get("group", 1))
        per_out = (
            int(np.prod(w[1:])) if op != "ConvTranspose" else int(np.prod(w[2:])) * w[0] // group
        )
        bias = out_shape[1] if len(in_shapes) > 2 and len(out_shape) > 1 else 0
        return out_elems * per_out + bias
    if op == "Gemm" and len(in_shapes) > 1:
        a = in_shapes[0]
        k = a[0] if attrs.get("transA", 0) else a[-1]
        bias = out_shape[-1] if len(in_shapes) > 2 else 0
        return out_elems * k + bias
    if op in ("MatMul", "MatMulInteger") and in_shapes:
        return out_elems * (in_shapes[0][-1] if in_shapes[0] else 1)
    if op in (
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Identity",
        "Transpose",
        "Concat",
        "Pad",
        "Slice",
        "Split",
        "Shape",
    ):
        return 0
    return out_elems * max(1, n_out)


def load_model(path: Path) -> ModelFacts:
    """Read ``path`` (ONNX) into :class:`ModelFacts`.

    :raises ModelError: when the file is missing, not ONNX, or fails the checker.
    """
    import onnx
    from onnx import numpy_helper, shape_inference

    try:
        raw = path.read_bytes()
        model = onnx.load_from_string(raw)
        model = shape_inference.infer_shapes(model)
    except Exception as exc:  # noqa: BLE001  # any decoding problem is an invalid model for the tool
        raise ModelError(f"unable to load the model '{path.name}': {exc}") from None
    graph = model.graph
    if not graph.node:
        raise ModelError(f"unable to load the model '{path.name}': empty graph")

    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:  # Constant nodes are initializers too
        if node.op_type == "Constant" and node.attribute:
            inits[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    shapes: dict[str, list[int]] = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        shapes[vi.name] = _shape_of(vi)
    for name, arr in inits.items():
        shapes[name] = list(arr.shape)

    consumers: dict[str, list[Any]] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    qdq = any(n.op_type in QDQ for n in graph.node)
    graph_inputs = [i.name for i in graph.input if i.name not in inits]
    graph_outputs = [o.name for o in graph.output]

    # Q/DQ scale and zero-point operands are not parameters of the network.
    qparams = {
        n.input[i] for n in graph.node if n.op_type in QDQ for i in (1, 2) if i < len(n.input)
    }

    def qinfo(node: Any) -> tuple[float | None, int | None]:
        s = inits.get(node.input[1]) if len(node.input) > 1 else None
        z = inits.get(node.input[2]) if len(node.input) > 2 else None
        scale = float(np.ravel(s)[0]) if s is not None and s.size else None
        zp = int(np.ravel(z)[0]) if z is not None and z.size else 0
        return scale, zp

    # alias: DQ(Q(x)) collapses onto x's storage name; weight DQs map to their initializer.
    alias: dict[str, str] = {}
    quant: dict[str, tuple[float | None, int | None]] = {}

    def root(name: str) -> str:
        while name in alias:
            name = alias[name]
        return name

    layers: list[Layer] = []
    weights: dict[str, Weight] = {}
    for n in graph.node:
        if n.op_type == "Constant":
            continue
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            arr = inits[n.input[0]]
            weights[n.input[0]] = Weight(
                n.input[0], list(arr.shape), arr.size * _ELEM_SIZE.get(arr.dtype, 4), arr.size, True
            )
            alias[n.output[0]] = n.input[0]
            continue
        if n.op_type == "QuantizeLinear":
            src = root(n.input[0])
            users = consumers.get(n.output[0], [])
            if users and all(u.op_type == "DequantizeLinear" for u in users):
                if src in graph_inputs:  # float input quantized on entry: a boundary op
                    quant[n.output[0]] = qinfo(n)
                    layers.append(
                        Layer(
                            len(layers),
                            n.name or n.output[0],
                            n.op_type,
                            [src],
                            [n.output[0]],
                            [],
                            0,
                            True,
                            boundary=True,
                        )
                    )
                else:  # the producer writes int8 directly
                    alias[n.output[0]] = src
                    quant[src] = qinfo(n)
                continue
        if n.op_type == "DequantizeLinear":
            src = root(n.input[0])
            if src in quant:
                if n.output[0] in graph_outputs:  # int8 -> float on exit: a boundary op
                    layers.append(
                        Layer(
                            len(layers),
                            n.name or n.output[0],
                            n.op_type,
                            [src],
                            [n.output[0]],
                            [],
                            0,
                            False,
                            boundary=True,
                        )
                    )
                else:
                    alias[n.output[0]] = src
                continue
        ins = [root(i) for i in n.input if i]
        wts = [i for i in ins if i in inits or i in weights]
        for w in wts:
            if w not in weights and w not in qparams and w in inits and inits[w].dtype != np.int64:
                arr = inits[w]
                if arr.size > 1 or n.op_type in ("Conv", "Gemm", "MatMul", "PRelu"):
                    weights[w] = Weight(
                        w,
                        list(arr.shape),
                        arr.size * _ELEM_SIZE.get(arr.dtype, 4),
                        arr.size,
                        arr.dtype in (np.int8, np.uint8),
                    )
        acts = [i for i in ins if i not in inits and i not in weights]
        quantized = (
            qdq
            and bool(acts)
            and all(a in quant for a in acts)
            and all(
                consumers.get(o) and all(u.op_type == "QuantizeLinear" for u in consumers[o])
                for o in n.output
            )
        )
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        in_shapes = [shapes.get(i, shapes.get(root(i), [])) for i in n.input if i]
        out_shape = shapes.get(n.output[0], [])
        macc = _macc(n.op_type, in_shapes, out_shape, attrs, 1)
        layers.append(
            Layer(
                len(layers),
                n.name or n.output[0],
                n.op_type,
                acts,
                list(n.output),
                [w for w in wts if w in weights],
                macc,
                quantized,
            )
        )

    tensors: dict[str, Tensor] = {}
    for layer in layers:
        for name in layer.inputs + layer.outputs:
            if name in tensors or name in weights or name in inits:
                continue
            q = quant.get(name)
            tensors[name] = Tensor(
                name, shapes.get(name, [1]), q is not None, q[0] if q else None, q[1] if q else None
            )
    for name in graph_inputs:
        tensors.setdefault(name, Tensor(name, shapes.get(name, [1]), False))

    def io_desc(names: list[str], vis: Any) -> list[dict[str, Any]]:
        by_name = {v.name: v for v in vis}
        out = []
        for nm in names:
            vi = by_name.get(nm)
            elem = vi.type.tensor_type.elem_type if vi is not None else 1
            out.append(
                {
                    "name": nm,
                    "shape": shapes.get(nm, [1]),
                    "dtype": onnx.helper.tensor_dtype_to_np_dtype(elem).name,
                }
            )
        return out

    return ModelFacts(
        path=path,
        name=c_name(path.stem),
        md5=hashlib.md5(raw).hexdigest(),
        size=len(raw),
        layers=layers,
        tensors=tensors,
        weights=weights,
        inputs=graph_inputs,
        outputs=graph_outputs,
        qdq=qdq,
        onnx_inputs=io_desc(graph_inputs, graph.input),
        onnx_outputs=io_desc(graph_outputs, graph.output),
    )

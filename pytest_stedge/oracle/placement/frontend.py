"""What the N6 front end makes of a model before placement: the operators it deploys.

The epoch table names operators as the tool's own import of the model does (the
``*_OE_*.onnx``): a TFLite ``QUANTIZE`` is a ``QuantizeLinear``, a ``MEAN`` over the
spatial axes a ``GlobalAveragePool``. Placement is decided on those operators, so this
module turns every node of the user's model into the deployed operators it becomes,
each with its numeric form and the semantic facts placement rules read:

- ``int8``: the operator computes on integers (the NPU's units take 8/16-bit integers);
- ``float``: it reads or writes a float tensor (Neural-ART has no floating-point unit:
  it runs on the Cortex-M55, printed ``Sub(float)`` by 4.x reports);
- ``convert``: a float <-> integer conversion (``QuantizeLinear`` of a float input,
  ``DequantizeLinear`` to a float output or into a float operator);
- ``none``: no epoch at all (weights, shape arithmetic, Q/DQ pairs the tool folds, a
  ``Reshape`` that only renames dimensions, the QDQ model's float I/O conversions that
  the tool turns into int8 I/O).

How the tool folds a QDQ ONNX model is read from the real runs, each rule citing them:
an operator is int8 only when DequantizeLinear feeds each activation input directly and
a QuantizeLinear reads each output directly (mobilenet_v2_224: ``ReduceMean -> Reshape ->
QuantizeLinear`` ran as DequantizeLinear, GlobalAveragePool, QuantizeLinear in software,
``n6-mobilenetv2-224-onnx-irv/rev-B-ir9/2.2.0-cubemx/mobilenet_v2_224.txt``); a learned
constant that is float and not a scalar keeps the operator float (yolov8n ``Sub`` of the
anchor grid: ``Sub(float)``; the scalar ``Div`` beside it stayed in hardware).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.graph import DQ_OPS, Q_OPS, Graph, Node, is_compute
from .attributes import attribute_variant

# Operators that only rename dimensions: the front end drops them (no epoch of their own).
RESHAPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
_QUANTIZE = frozenset({"QuantizeLinear", "Quantize"})
_DEQUANTIZE = frozenset({"DequantizeLinear", "Dequantize"})
_INT_TYPES = frozenset({2, 3, 4, 5, 6, 7, 12, 13})  # u8 s8 u16 s16 s32 s64 u32 u64
_FLOAT_TYPES = frozenset({1, 10, 11, 16})
# Operators whose weights or operands the NPU needs as constants (a CONV unit's kernel).
_CONSTANT_OPERAND = frozenset({"MatMul"})
FORMS = ("int8", "float", "convert", "none")


@dataclass
class Deployed:
    """One operator the tool deploys, from one node of the user's model.

    ``count`` is how many epochs of this kind it makes when it makes one of its own (a
    float tensor read by two int8 operators is quantized once per reader; a batched
    MatMul is one product per matrix). ``inserted`` names a front-end insertion (the
    Transposes around a channel Pad); ``facts`` are the attributes the rules read.
    """

    node: int
    name: str
    op_type: str
    tool_op: str
    form: str
    count: int = 1
    inserted: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The table key: the tool's operator name, ``(float)`` when it computes in or
        converts from/to float (as 4.x prints ``Sub(float)``), ``(activations)`` for a
        product of two activations, ``+inserted`` for a front-end insertion; an attribute
        form the table keys apart (:mod:`.attributes`) in parentheses first:
        ``Conv(dilated)``."""
        key = self.tool_op
        if self.facts.get("variant"):
            key += f"({self.facts['variant']})"
        if self.form in ("float", "convert"):
            key += "(float)"
        if self.facts.get("activation_operands"):
            key += "(activations)"
        return key + ("+inserted" if self.inserted else "")


def _attrs(graph: Graph, node: Node) -> dict[str, Any]:
    if graph.model is None or graph.source != "onnx":
        return dict(node.attrs)  # TFLite: the options its reader kept
    from onnx import helper

    proto = graph.model.graph.node[node.index]
    out: dict[str, Any] = {}
    for attr in proto.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, (int, float, str, bytes)) or (
            isinstance(value, list) and all(isinstance(v, (int, float)) for v in value)
        ):
            out[attr.name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return out


def _dtype(graph: Graph, name: str) -> int:
    return graph.info(name).dtype


def _acts(graph: Graph, node: Node) -> list[str]:
    return [n for n in node.inputs if n and n not in graph.constants]


def _shape(graph: Graph, name: str) -> tuple[Any, ...] | None:
    return graph.info(name).shape


class _Folding:
    """The QDQ folding of one ONNX graph, as the tool's front end does it."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes = graph.nodes

    def producer_op(self, name: str) -> str | None:
        p = self.graph.producer.get(name)
        return self.nodes[p].op_type if p is not None else None

    def readers(self, name: str) -> list[Node]:
        return [self.nodes[i] for i in self.graph.consumers.get(name, [])]

    def through_reshapes(self, name: str) -> list[Node]:
        """The readers of a tensor, looking through dimension renames."""
        out: list[Node] = []
        for reader in self.readers(name):
            if reader.op_type in RESHAPES and reader.outputs:
                out += self.through_reshapes(reader.outputs[0])
            else:
                out.append(reader)
        return out

    def int_input(self, name: str) -> bool:
        if name in self.graph.inputs:
            # a float input read only by QuantizeLinear is an int8 input on the target
            return _dtype(self.graph, name) in _INT_TYPES or all(
                r.op_type in Q_OPS for r in self.readers(name))
        return self.producer_op(name) in DQ_OPS or _dtype(self.graph, name) in _INT_TYPES

    def int_output(self, name: str) -> bool:
        readers = self.readers(name)
        if not readers:
            return _dtype(self.graph, name) in _INT_TYPES
        return all(r.op_type in Q_OPS for r in readers) or _dtype(self.graph, name) in _INT_TYPES

    def float_constant(self, node: Node) -> bool:
        """A non-scalar float constant read directly (not through DequantizeLinear)."""
        for name in node.inputs:
            if not name or name not in self.graph.constants or self.producer_op(name) in DQ_OPS:
                continue
            info = self.graph.info(name)
            if info.dtype in _FLOAT_TYPES and (info.elements or 0) > 1 and node.op_type not in {
                "Resize", "Upsample", "Clip", "Pad"}:  # scales, bounds, amounts: not operands
                return True
        return False


def _tool_op(graph: Graph, node: Node, facts: dict[str, Any]) -> tuple[str, int]:
    """The operator name the tool prints for this node, and the epochs it makes."""
    op = node.op_type
    if op in _QUANTIZE:
        return "QuantizeLinear", 1
    if op in _DEQUANTIZE:
        return "DequantizeLinear", 1
    out_shape = _shape(graph, node.outputs[0]) if node.outputs else None
    in_shape = _shape(graph, _acts(graph, node)[0]) if _acts(graph, node) else None
    if op == "ReduceMean" and out_shape and in_shape and len(in_shape) == 4:
        spatial = (1, 2) if graph.source == "tflite" else (2, 3)
        if all(out_shape[i] == 1 for i in spatial if i < len(out_shape)) or len(out_shape) == 2:
            return "GlobalAveragePool", 1
    # nearest upsampling by an integer factor: the front end rebuilds it as a DepthToSpace
    # (yolov8n/yolov11n 4.0.1: two Resize, two DepthToSpace epochs)
    if (op == "Resize" and facts.get("mode", "nearest") == "nearest" and out_shape and in_shape
            and len(in_shape) == len(out_shape) == 4
            and all(isinstance(a, int) and isinstance(b, int) and a > 0 and b % a == 0
                    for a, b in zip(in_shape, out_shape, strict=True))):
        return "DepthToSpace", 1
    if op == "MatMul" and len(_acts(graph, node)) >= 2:
        # a product of two activations is rebuilt as convolutions, one per matrix of the
        # batch (yolov11n 4.0.1: two attention MatMuls of 2 heads, four SW Conv epochs)
        batch = 1
        for dim in (out_shape or ())[:-2]:
            batch *= dim if isinstance(dim, int) and dim > 0 else 1
        return "Conv", batch
    return op, 1


def _channel_pad(graph: Graph, node: Node) -> bool:
    """A Pad that changes the channel count (TFLite NHWC: the last axis; ONNX: axis 1)."""
    acts = _acts(graph, node)
    if node.op_type != "Pad" or not acts or not node.outputs:
        return False
    a, b = _shape(graph, acts[0]), _shape(graph, node.outputs[0])
    if not a or not b or len(a) != 4 or len(b) != 4:
        return False
    axis = 3 if graph.source == "tflite" else 1
    return bool(a[axis] != b[axis])


def deployed_ops(graph: Graph) -> list[Deployed]:
    """The operators the N6 front end deploys for every compute node, in graph order."""
    folding = _Folding(graph)
    qdq = graph.source == "onnx" and any(
        n.op_type in Q_OPS | DQ_OPS and is_compute(graph, n) for n in graph.nodes)
    out: list[Deployed] = []
    float_nodes: set[int] = set()
    float_constants: set[int] = set()
    # first pass: the form of every non Q/DQ compute node
    forms: dict[int, str] = {}
    for node in graph.nodes:
        if not is_compute(graph, node) or node.op_type in _QUANTIZE | _DEQUANTIZE:
            continue
        if node.op_type in RESHAPES:
            forms[node.index] = "none"
            continue
        acts = _acts(graph, node)
        outs = [o for o in node.outputs if o]
        if graph.source == "tflite" or not qdq:
            typed = [_dtype(graph, n) for n in acts + outs]
            integer = bool(typed) and all(t in _INT_TYPES for t in typed)
        else:
            integer = (
                all(folding.int_input(a) for a in acts)
                and all(folding.int_output(o) for o in outs)
                and not folding.float_constant(node)
            )
        forms[node.index] = "int8" if integer else "float"
        if not integer:
            float_nodes.add(node.index)
            if qdq and folding.float_constant(node):
                float_constants.add(node.index)
    for node in graph.nodes:
        if not is_compute(graph, node):
            continue
        facts = _attrs(graph, node)
        variant = attribute_variant(graph, node, facts)
        if variant is not None:
            facts["variant"], facts["variant_detail"] = variant
        if node.op_type in _QUANTIZE | _DEQUANTIZE:
            form, count = _conversion(graph, folding, node, float_nodes, qdq)
            tool, _ = _tool_op(graph, node, facts)
            out.append(Deployed(node.index, node.name, node.op_type, tool, form, count, "", facts))
            continue
        form = forms[node.index]
        if node.index in float_constants:
            facts["float_constant"] = True
        tool, count = _tool_op(graph, node, facts)
        if _channel_pad(graph, node) and form == "int8":
            # the front end pads channels in channel-first order: a Transpose each side
            # (blazeface 2.2: 11 channel Pads, 22 Transpose epochs)
            facts["channel_pad"] = True
            out.append(Deployed(node.index, node.name, node.op_type, "Transpose", form, 2,
                                "around a channel Pad", facts))
        if node.op_type in _CONSTANT_OPERAND and len(_acts(graph, node)) >= 2:
            facts["activation_operands"] = True
        out.append(Deployed(node.index, node.name, node.op_type, tool, form, count, "", facts))
    return out


def _conversion(graph: Graph, folding: _Folding, node: Node, float_nodes: set[int],
                qdq: bool) -> tuple[str, int]:
    """The form of a Quantize/Dequantize node and the epochs it makes."""
    src = node.inputs[0] if node.inputs else ""
    dst = node.outputs[0] if node.outputs else ""
    if not qdq:  # TFLite (or a QOperator ONNX): explicit operators with declared types
        if _dtype(graph, src) in _FLOAT_TYPES or _dtype(graph, dst) in _FLOAT_TYPES:
            return "convert", 1
        return "int8", 1  # an integer requantization (uint8 -> int8 input)
    if node.op_type in Q_OPS:
        if src in graph.inputs:
            return "none", 0  # the tool makes the input int8
        prod = graph.producer.get(src)
        # look back through dimension renames to the float operator that writes it
        while prod is not None and graph.nodes[prod].op_type in RESHAPES:
            inner = graph.nodes[prod].inputs[0] if graph.nodes[prod].inputs else ""
            prod = graph.producer.get(inner)
        if prod is not None and prod in float_nodes:
            # one QuantizeLinear per int8 reader (yolov8n 4.0.1: the float Sub's output,
            # read by an Add and a Sub, made two QuantizeLinear epochs)
            readers = 0
            for out in (o for o in node.outputs if o):
                for reader in folding.readers(out):
                    deq = reader.op_type in DQ_OPS and reader.outputs
                    readers += len(folding.readers(reader.outputs[0])) if deq else 1
            return "convert", max(readers, 1)
        return "none", 0
    # DequantizeLinear
    if src in graph.constants:
        return "none", 0  # weights
    if dst in graph.outputs:
        return "none", 0  # the tool makes the output int8
    if any(r.index in float_nodes for r in folding.through_reshapes(dst)):
        return "convert", 1
    return "none", 0

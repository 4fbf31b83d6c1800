"""Attributes that may decide an operator's placement beyond its type: the variants the
placement table keys apart.

Neural-ART's units take an operator only within what they implement; an operator
placed on the NPU in one form says nothing of another form of it. Three such forms are
read off the model, each keyed apart (``Conv(dilated)``), so that evidence about one
never decides the other:

- ``dilated``: a convolution with a dilation above 1 (ONNX ``dilations``, TFLite
  ``dilation_h/w_factor``). The convolution unit may take it, or the front end may
  rebuild it with a SpaceToDepth/DepthToSpace pair around a plain convolution;
- ``per-channel slope``: a PReLU whose slope has more than one value (a per-channel
  multiplier, where a scalar slope is a leaky ReLU);
- ``around a convolution``: a SpaceToDepth/DepthToSpace (TFLite SPACE_TO_BATCH_ND /
  BATCH_TO_SPACE_ND) that feeds or reads a convolution: the layout pair a dilated
  convolution is exported as, and the convolution between them.

No real N6 epoch table in ../shared shows any of these (checked for issue 27b: no
PRelu in any N6 report or model; every convolution of the N6 runs' models has dilation
1; the only DepthToSpace epochs are the front end's rebuild of nearest Resize), so the
shipped table has no row for them and the predictor says "unknown in this version".
A table built from runs that show them keys their evidence here and decides.
"""

from __future__ import annotations

from typing import Any

from ..model.graph import DQ_OPS, Q_OPS, Graph, Node

_CONVS = frozenset({"Conv", "ConvTranspose"})
_TO_DEPTH = frozenset({"SpaceToDepth", "SpaceToBatch"})
_TO_SPACE = frozenset({"DepthToSpace", "BatchToSpace"})
_QDQ = Q_OPS | DQ_OPS


def _producer(graph: Graph, name: str) -> Node | None:
    """The node writing ``name``, looking back through Q/DQ pairs."""
    index = graph.producer.get(name)
    while index is not None and graph.nodes[index].op_type in _QDQ and graph.nodes[index].inputs:
        index = graph.producer.get(graph.nodes[index].inputs[0])
    return graph.nodes[index] if index is not None else None


def _readers(graph: Graph, name: str) -> list[Node]:
    """The nodes reading ``name``, looking forward through Q/DQ pairs."""
    out: list[Node] = []
    for index in graph.consumers.get(name, []):
        node = graph.nodes[index]
        if node.op_type in _QDQ and node.outputs:
            out += _readers(graph, node.outputs[0])
        else:
            out.append(node)
    return out


def attribute_variant(graph: Graph, node: Node, attrs: dict[str, Any]) -> tuple[str, str] | None:
    """``(variant, what)`` when the node is in a form the table keys apart, else None."""
    op = node.op_type
    if op in _CONVS:
        dilations = [int(d) for d in attrs.get("dilations") or [] if isinstance(d, (int, float))]
        if any(d > 1 for d in dilations):
            return "dilated", f"dilations {'x'.join(str(d) for d in dilations)}"
        source = _producer(graph, node.inputs[0]) if node.inputs else None
        if source is not None and source.op_type in _TO_DEPTH:
            return "around a convolution", f"between {source.op_type} {source.name} and its inverse"
        return None
    if op == "PRelu" and len(node.inputs) > 1:
        count = graph.info(node.inputs[1]).elements  # shape inference sizes a DQ's output
        if count is not None and count > 1:
            return "per-channel slope", f"a slope of {count} values"
        return None
    if op in _TO_DEPTH and node.outputs:
        if any(r.op_type in _CONVS for r in _readers(graph, node.outputs[0])):
            return "around a convolution", f"{op} feeding a convolution"
        return None
    if op in _TO_SPACE and node.inputs:
        source = _producer(graph, node.inputs[0])
        if source is not None and source.op_type in _CONVS:
            return "around a convolution", f"{op} reading a convolution"
    return None

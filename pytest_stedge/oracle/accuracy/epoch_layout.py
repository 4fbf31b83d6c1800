"""How the tool's OE model lays out each tensor, relative to the user's model.

ST's front end imports a TFLite model (channel last, NHWC) into an ONNX graph whose
convolutions take channel first (NCHW): it inserts ``Transpose`` nodes (``Transpose_1``
after the input) and, around a channel ``Pad``, more of them (NCHW -> NHCW -> NCHW).
A c_info buffer has its OE tensor's shape, so the user's tensor must be moved into that
layout before it is compared; with ``H == W == C`` the shapes alone cannot tell.

The layout is followed through the graph, from what holds by construction: an OE input
is the user's input (same shape, same order); a ``Transpose`` with ``perm`` q maps a
tensor laid out as ``P`` to ``P[q]``; an operator that keeps the rank keeps the layout
of its data input (elementwise, Q/DQ, Conv, Pad, pools: the front end feeds them the
layout it chose); an operator that reshapes keeps the order of the elements only when
its input is in the user's own order (then the output is too), else the layout is not
known (``None``), and a buffer of that tensor is not compared rather than compared in a
guessed order.
"""

from __future__ import annotations

from typing import Any

from .refmodel import RefModel

Perm = tuple[int, ...]
# Operators that move elements between axes: the output keeps the flat order of the input.
_RESHAPING = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Gemm", "MatMul",
                        "SpaceToDepth", "DepthToSpace"})


def identity(rank: int) -> Perm:
    """The user's own order for a tensor of ``rank`` dimensions."""
    return tuple(range(rank))


def _transpose_perms(space: RefModel) -> dict[str, Perm]:
    """``perm`` of every Transpose node of an ONNX model, by node name."""
    graph = getattr(space, "_graph", None)
    proto = getattr(graph, "model", None)
    out: dict[str, Perm] = {}
    if proto is None:
        return out
    for node in proto.graph.node:
        if node.op_type != "Transpose":
            continue
        for attr in node.attribute:
            if attr.name == "perm":
                out[node.name] = tuple(int(i) for i in attr.ints)
    return out


def oe_layouts(space: RefModel, user: RefModel) -> dict[str, Perm | None]:
    """For each tensor of ``space`` (the OE model), the permutation ``P`` such that its
    value is the user's tensor ``.transpose(P)``; ``None`` where the layout is unknown.

    When ``space`` is the user's model itself every tensor is in the user's order.
    """
    if space is user:
        return {name: identity(len(shape)) for name, shape in space.shapes.items()}
    perms = _transpose_perms(space)
    layout: dict[str, Perm | None] = {}
    for oe_in, user_in in zip(space.inputs, user.inputs):
        shape = space.shapes.get(oe_in)
        layout[oe_in] = identity(len(shape)) if shape is not None and shape == \
            user.shapes.get(user_in) else None
    for op in space.ops:
        data = [t for t in op.inputs if t and t not in space.constants]
        known = [layout.get(t) for t in data if t in layout]
        in_rank = len(space.shapes.get(data[0], ())) if data else 0
        source: Perm | None
        if not data or not known or any(p is None for p in known):
            source = None
        else:
            ranked = [p for p in known if p is not None and len(p) == in_rank]
            source = ranked[0] if ranked and all(p == ranked[0] for p in ranked) else None
        for out in op.outputs:
            layout[out] = _through(op.op_type, op.name, source, in_rank,
                                   len(space.shapes.get(out, ())), perms)
    return layout


def _through(op_type: str, name: str, source: Perm | None, in_rank: int, out_rank: int,
             perms: dict[str, Perm]) -> Perm | None:
    if source is None:
        return None
    if op_type == "Transpose":  # without perm, ONNX reverses the axes
        q = perms.get(name) or tuple(reversed(range(len(source))))
        if len(q) != len(source):
            return None
        return tuple(source[i] for i in q)
    if op_type in _RESHAPING or in_rank != out_rank:
        return identity(out_rank) if source == identity(len(source)) else None
    return source


def to_layout(value: Any, perm: Perm | None, shape: tuple[int, ...]) -> Any:
    """The user's tensor ``value`` in the buffer's ``shape``: transposed by ``perm``,
    then given the buffer's singleton axes.

    :raises ValueError: ``perm`` unknown, or the tensor's dimensions (singletons aside)
        are not the buffer's once transposed: comparing would pair the wrong elements.
    """
    import numpy as np

    arr = np.asarray(value)
    if perm is None:
        raise ValueError("the layout of this tensor in the tool's model is not known")
    if perm != identity(len(perm)):
        if len(perm) != arr.ndim:
            raise ValueError(f"layout {list(perm)} does not apply to a tensor of shape "
                             f"{list(arr.shape)}")
        arr = arr.transpose(perm)
    if [d for d in arr.shape if d != 1] != [d for d in shape if d != 1]:
        raise ValueError(f"the tensor's shape {list(arr.shape)} (in the tool's layout) is "
                         f"not the buffer's {list(shape)}")
    return arr.reshape(shape)

"""First divergent node: the reference with every tensor exposed against a per-node dump."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError


def _const(graph: Any, name: str) -> Any:
    from onnx import numpy_helper

    init = graph.initializers.get(name)
    if init is not None:
        return numpy_helper.to_array(init)
    for proto in graph.model.graph.node:
        if proto.op_type == "Constant" and proto.output and proto.output[0] == name:
            for attr in proto.attribute:
                if attr.name == "value":
                    return numpy_helper.to_array(attr.t)
    return None


def qparams(graph: Any, name: str) -> tuple[float, int] | None:
    """Per-tensor scale and zero point of a tensor, from the Q/DQ around it."""
    import numpy as np

    candidates = []
    prod = graph.producer.get(name)
    if prod is not None and graph.nodes[prod].op_type == "QuantizeLinear":
        candidates.append(graph.nodes[prod])
    for user in graph.consumers.get(name, []):
        if graph.nodes[user].op_type in ("QuantizeLinear", "DequantizeLinear"):
            candidates.append(graph.nodes[user])
    for node in candidates:
        scale = _const(graph, node.inputs[1]) if len(node.inputs) > 1 else None
        zp = _const(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0
        if scale is not None and np.size(scale) == 1:
            return float(np.asarray(scale).ravel()[0]), int(np.asarray(zp).ravel()[0])
    return None


def _align(ref: Any, pred: Any) -> tuple[Any, Any]:
    """Bring the reference to the dump's layout (NCHW -> NHWC when that is the difference)."""
    import numpy as np

    ref = np.asarray(ref)
    pred = np.asarray(pred)
    if ref.shape == pred.shape or ref.size != pred.size:
        return ref, pred
    squeezed = tuple(d for d in pred.shape if d != 1)
    if ref.ndim == 4:
        nhwc = ref.transpose(0, 2, 3, 1)
        if nhwc.shape == pred.shape or tuple(d for d in nhwc.shape if d != 1) == squeezed:
            return nhwc.reshape(pred.shape), pred
    if ref.ndim == 3:
        nwc = ref.transpose(0, 2, 1)
        if nwc.shape == pred.shape or tuple(d for d in nwc.shape if d != 1) == squeezed:
            return nwc.reshape(pred.shape), pred
    return ref.reshape(pred.shape), pred


def diverge(
    model: Path | str,
    dump: dict[str, Any] | Path | str,
    *,
    min_cos: float = 0.99,
    max_l2r: float | None = None,
) -> dict[str, Any]:
    """Name the first node, in execution order, whose output leaves the tolerance.

    :param dump: ``{tensor or node name: array}`` of the compiled network for one
        input; the input itself under the model's input names (else the default
        stimulus' first sample is used, and the report says so).
    :returns: ``rows`` ([{node, op_type, tensor, cos, l2r, rmse, ok}] up to and
        including the first divergent one), ``first_divergent`` (a row or None),
        ``unmatched`` dump keys, ``input_source``.
    :raises OracleError: no dump key names a tensor of the model, or onnxruntime fails.
    """
    import numpy as np
    from onnx import helper

    from ..model.graph import build_graph, is_compute
    from .metrics import compute_metrics, load_arrays
    from .reference import session
    from .stimulus import default_stimulus

    where = str(model)
    arrays = load_arrays(dump) if isinstance(dump, (str, Path)) else dict(dump)
    graph = build_graph(model)
    by_node = {n.name: n.outputs[0] for n in graph.nodes if n.outputs}
    wanted: dict[str, Any] = {}
    unmatched = []
    for key, value in arrays.items():
        if key in graph.inputs:
            continue
        name = key if key in graph.tensors or key in graph.producer else by_node.get(key)
        if name is None:
            unmatched.append(key)
        else:
            wanted[name] = value
    if not wanted:
        raise OracleError(
            f"{where}: no key of the dump names a tensor or node of the model "
            f"(dump keys: {sorted(arrays)[:8]}; model tensors e.g. {list(graph.producer)[:5]})"
        )
    if all(name in arrays for name in graph.inputs):
        feed = {name: np.asarray(arrays[name]) for name in graph.inputs}
        source = "dump"
    else:
        stim = default_stimulus(model, samples=1)
        feed = {name: value for name, value in stim.items()}
        source = "default stimulus, sample 0 (the dump has no input arrays)"
    proto = graph.model
    exposed = helper.make_model(proto.graph, opset_imports=list(proto.opset_import))
    exposed.ir_version = proto.ir_version
    existing = {o.name for o in exposed.graph.output}
    for name in wanted:
        if name not in existing and name not in graph.inputs:
            info = graph.info(name)
            exposed.graph.output.append(helper.make_tensor_value_info(name, info.dtype or 1, None))
    sess = session(exposed.SerializeToString(), where)
    metas = {m.name: m for m in sess.get_inputs()}
    for name, meta in metas.items():
        x = np.asarray(feed[name])
        if x.ndim == len(meta.shape) + 1 and x.shape[0] == 1:
            x = x[0]
        elif x.ndim == len(meta.shape) - 1:
            x = x[None]
        feed[name] = x
    names = [o.name for o in sess.get_outputs()]
    try:
        values = dict(zip(names, sess.run(names, feed)))
    except Exception as exc:
        raise OracleError(f"{where}: onnxruntime failed on the divergence input: {exc}") from exc
    rows: list[dict[str, Any]] = []
    first = None
    for node in graph.nodes:
        if not is_compute(graph, node):
            continue
        for out in node.outputs:
            if out not in wanted or out not in values:
                continue
            ref = np.asarray(values[out])
            pred = np.asarray(wanted[out])
            q = qparams(graph, out)
            scale, zp = q if q else (None, None)
            if np.issubdtype(pred.dtype, np.integer) and not np.issubdtype(ref.dtype, np.integer):
                pred = (pred.astype(np.int32) - (zp or 0)).astype(np.float32) * np.float32(
                    scale or 1.0
                )
            try:
                ref, pred = _align(ref, pred)
                m = compute_metrics(ref, pred, scale=scale, zero_point=zp, classifier=False)
            except OracleError as exc:
                raise OracleError(f"{where}: tensor {out!r}: {exc}") from exc
            ok = bool(m["cos"] >= min_cos) if m["cos"] == m["cos"] else bool(m["rmse"] == 0)
            if max_l2r is not None and not (m["l2r"] <= max_l2r):
                ok = False
            shown = node
            if node.op_type == "QuantizeLinear" and node.inputs[0] in graph.producer:
                shown = graph.nodes[graph.producer[node.inputs[0]]]  # the int8 operator it ends
            row = {
                "node": shown.name,
                "op_type": shown.op_type,
                "tensor": out,
                "cos": m["cos"],
                "l2r": m["l2r"],
                "rmse": m["rmse"],
                "ok": ok,
            }
            rows.append(row)
            if not ok:
                first = row
                break
        if first is not None:
            break
    return {
        "model": where,
        "tolerance": {"min_cos": min_cos, "max_l2r": max_l2r},
        "input_source": source,
        "compared": len(rows),
        "first_divergent": first,
        "rows": rows,
        "unmatched": unmatched,
    }

"""A model the epoch comparison can read every tensor of: ONNX (onnxruntime) or TFLite
(LiteRT), behind one small interface.

Operators keep the names a user sees: ONNX node names, and for TFLite
``<OPCODE>_<operator index>`` (``CONV_2D_1``), the names ST's ``*_OE_*_Q.json`` gives
the TFLite operators an OE node comes from. Values are returned as real numbers:
integer tensors are dequantized with their own quantization (ONNX: the Q/DQ around
them; TFLite: the tensor's parameters).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError


@dataclass(frozen=True)
class RefOp:
    """One operator in execution order."""

    index: int
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass
class RefModel:
    """Structure of a model and a way to run it with every tensor exposed."""

    path: Path
    kind: str  # "onnx" or "tflite"
    ops: list[RefOp]
    shapes: dict[str, tuple[int, ...]]
    inputs: list[str]
    outputs: list[str]
    constants: set[str] = field(default_factory=set)
    quant: dict[str, tuple[float, int]] = field(default_factory=dict)
    producer: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, list[int]] = field(default_factory=dict)
    _graph: Any = None
    _by_name: dict[str, RefOp] = field(default_factory=dict)
    _by_index: dict[int, RefOp] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name = {op.name: op for op in self.ops}
        self._by_index = {op.index: op for op in self.ops}
        for op in self.ops:
            for name in op.outputs:
                self.producer[name] = op.index
            for name in op.inputs:
                self.consumers.setdefault(name, []).append(op.index)

    @property
    def op_by_name(self) -> dict[str, RefOp]:
        """Operators by name."""
        return self._by_name

    @property
    def ops_by_index(self) -> dict[int, RefOp]:
        """Operators by index."""
        return self._by_index

    def elements(self, tensor: str) -> int | None:
        """Element count of a tensor when its shape is known."""
        shape = self.shapes.get(tensor)
        if shape is None:
            return None
        count = 1
        for dim in shape:
            count *= dim
        return count

    def run(self, feed: dict[str, Any]) -> dict[str, Any]:
        """Every tensor's real value for one input sample (``feed`` by input name)."""
        if self.kind == "onnx":
            return _run_onnx(self, feed)
        return _run_tflite(self, feed)


def load_reference(path: Path | str) -> RefModel:
    """An ONNX or TFLite model by its file suffix.

    :raises OracleError: missing file, unknown suffix, or a model the runtime rejects.
    """
    p = Path(path)
    if not p.is_file():
        raise OracleError(f"{p}: no such model file (expected .onnx or .tflite)")
    if p.suffix.lower() == ".tflite":
        return _load_tflite(p)
    if p.suffix.lower() == ".onnx":
        return _load_onnx(p)
    raise OracleError(f"{p}: the epoch comparison runs .onnx (onnxruntime) or .tflite "
                      "(LiteRT) models")


def _load_onnx(path: Path) -> RefModel:
    from ..model.graph import build_graph, is_compute
    from .first_node import qparams

    graph = build_graph(path)
    ops = [RefOp(n.index, n.name, n.op_type, tuple(n.inputs), tuple(n.outputs))
           for n in graph.nodes if is_compute(graph, n)]
    shapes = {name: tuple(d for d in info.shape if isinstance(d, int))
              for name, info in graph.tensors.items()
              if info.shape is not None and all(isinstance(d, int) and d >= 0
                                                for d in info.shape)}
    quant = {}
    for name in graph.inputs:
        q = qparams(graph, name)
        if q is not None:
            quant[name] = q
    for op in ops:
        for out in op.outputs:
            q = qparams(graph, out)
            if q is not None:
                quant[out] = q
    ref = RefModel(path, "onnx", ops, shapes, list(graph.inputs), list(graph.outputs),
                   set(graph.constants), quant)
    ref._graph = graph
    return ref


def _run_onnx(ref: RefModel, feed: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort
    from onnx import helper

    from .metrics import dequantize

    graph = ref._graph
    proto = graph.model
    exposed = helper.make_model(proto.graph, opset_imports=list(proto.opset_import))
    exposed.ir_version = proto.ir_version
    known = {o.name for o in exposed.graph.output} | set(graph.inputs)
    for op in ref.ops:
        for name in op.outputs:
            if name and name not in known:
                known.add(name)
                exposed.graph.output.append(
                    helper.make_tensor_value_info(name, graph.info(name).dtype or 1, None))
    # Graph optimisations off: Q/DQ pairs run as the float arithmetic the ONNX
    # specification defines, not as onnxruntime's fused int8 kernels (whose rounding
    # differs), so the reference is the model's own definition.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        sess = ort.InferenceSession(exposed.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OracleError(f"{ref.path}: onnxruntime cannot run this model: {exc}") from exc
    names = [o.name for o in sess.get_outputs()]
    try:
        values = dict(zip(names, sess.run(names, feed)))
    except Exception as exc:
        raise OracleError(f"{ref.path}: onnxruntime failed on the dump's input: {exc}") from exc
    values.update(feed)
    out = {}
    for name, value in values.items():
        q = ref.quant.get(name)
        arr = np.asarray(value)
        out[name] = dequantize(arr, q[0], q[1]) if q and arr.dtype.kind in "iu" else arr
    return out


def _interpreter(path: Path) -> Any:
    try:
        from ai_edge_litert.interpreter import (  # type: ignore[import-untyped]
            Interpreter,
            OpResolverType,
        )
    except ImportError as exc:
        raise OracleError(f"{path}: a TFLite model needs LiteRT: pip install ai-edge-litert "
                          f"({exc})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LiteRT warns that preserving tensors costs memory
        try:
            interp = Interpreter(
                model_path=str(path), experimental_preserve_all_tensors=True,
                experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            interp.allocate_tensors()
        except Exception as exc:  # noqa: BLE001 - LiteRT raises RuntimeError/ValueError
            raise OracleError(f"{path}: LiteRT cannot load this model: {exc}") from None
    return interp


def _tensor_names(details: list[dict[str, Any]]) -> dict[int, str]:
    names: dict[int, str] = {}
    seen: set[str] = set()
    for t in details:
        name = str(t["name"]) or f"tensor_{t['index']}"
        if name in seen:
            name = f"{name}#{t['index']}"
        seen.add(name)
        names[int(t["index"])] = name
    return names


def _load_tflite(path: Path) -> RefModel:
    interp = _interpreter(path)
    details = interp.get_tensor_details()
    names = _tensor_names(details)
    ops = []
    produced: set[int] = set()
    for op in interp._get_ops_details():  # the only LiteRT call that lists operators
        ins = tuple(names[int(i)] for i in op["inputs"] if int(i) >= 0)
        outs = tuple(names[int(i)] for i in op["outputs"] if int(i) >= 0)
        produced.update(int(i) for i in op["outputs"])
        ops.append(RefOp(int(op["index"]), f"{op['op_name']}_{op['index']}", str(op["op_name"]),
                         ins, outs))
    inputs = [names[int(d["index"])] for d in interp.get_input_details()]
    const = {names[i] for i in names if i not in produced and names[i] not in inputs}
    shapes = {names[int(t["index"])]: tuple(int(d) for d in t["shape"]) for t in details}
    quant = {names[int(t["index"])]: (float(t["quantization"][0]), int(t["quantization"][1]))
             for t in details if t["quantization"][0]}
    ref = RefModel(path, "tflite", ops, shapes, inputs,
                   [names[int(d["index"])] for d in interp.get_output_details()], const, quant)
    ref._graph = interp
    return ref


def _run_tflite(ref: RefModel, feed: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from .metrics import dequantize

    interp = ref._graph
    details = interp.get_tensor_details()
    names = _tensor_names(details)
    for d in interp.get_input_details():
        value = np.asarray(feed[names[int(d["index"])]])
        interp.set_tensor(int(d["index"]), value.astype(d["dtype"]).reshape(d["shape"]))
    try:
        interp.invoke()
    except Exception as exc:  # noqa: BLE001
        raise OracleError(f"{ref.path}: LiteRT failed on the dump's input: {exc}") from None
    out = {}
    for index, name in names.items():
        if name in ref.constants:
            continue
        try:
            arr = np.array(interp.get_tensor(index))
        except ValueError:  # tensors LiteRT did not keep
            continue
        q = ref.quant.get(name)
        out[name] = dequantize(arr, q[0], q[1]) if q and arr.dtype.kind in "iu" else arr
    return out

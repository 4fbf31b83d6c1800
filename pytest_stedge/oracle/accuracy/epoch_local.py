"""An epoch's buffers recomputed from the board's own values of the buffers it reads.

Two correct int8 implementations of one network (the NPU and onnxruntime, or LiteRT and
onnxruntime) differ by a rounding step here and there, and those differences travel
down the graph: on BlazeFace the cosine between LiteRT's and onnxruntime's tensors falls
from 0.99999 after the first convolution to 0.97 after the fortieth, with no operator
wrong. A tolerance on the end-to-end comparison either flags a healthy board deep in
the graph or misses a real fault early in it.

An epoch is wrong when its outputs are wrong *for its inputs*. So each epoch's buffers
are recomputed by the ONNX model whose tensor names the c_info uses (the tool's OE
model, or the user's own ONNX), fed at the epoch's entry with what the board itself
wrote in the buffers the epoch reads (``inputs`` of the epoch node); anything else the
computation needs comes from the full reference run. What is left between the board
and this local reference is the epoch's own rounding, whatever came before it.
"""

from __future__ import annotations

from typing import Any

from pytest_stedge.errors import OracleError

from .refmodel import RefModel

_RESULT_BYTES = 64 << 20  # recomputed tensors kept for the next dump of one compilation


def _digest(key: tuple[tuple[str, ...], tuple[str, ...]], feeds: dict[str, Any]) -> bytes:
    """What identifies one recomputation: the part (wanted, frontier) and the feeds'
    names, types, shapes and bytes."""
    import hashlib

    h = hashlib.sha256(repr(key).encode())
    for name in sorted(feeds):
        value = feeds[name]
        h.update(f"{name}|{value.dtype}|{value.shape}|".encode())
        h.update(value.tobytes())
    return h.digest()


# ONNX TensorProto element types that hold integer codes, and their numpy names.
_INT_TYPES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64"}


class LocalReference:
    """Runs the part of an ONNX model between given tensors and wanted ones.

    :param space: the ONNX model in the c_info's names (loaded by
        :func:`.refmodel.load_reference`).
    :param full: every tensor's real value from a full run on the same input (what
        :meth:`RefModel.run` returns); it supplies whatever the board does not give.
    """

    def __init__(self, space: RefModel, full: dict[str, Any]) -> None:
        graph = getattr(space, "_graph", None)
        if space.kind != "onnx" or graph is None or graph.model is None:
            raise OracleError(f"{space.path}: a local recomputation needs an ONNX model")
        self.space, self.full = space, full
        self.graph = graph
        self.proto = graph.model
        self.nodes = list(self.proto.graph.node)
        self.producer = {out: i for i, node in enumerate(self.nodes) for out in node.output}
        self.inits = {init.name: init for init in self.proto.graph.initializer}
        self._sessions: dict[tuple[tuple[str, ...], tuple[str, ...]], Any] = {}
        # Results by part and feed bytes: dumps of one compilation (a board run again, a
        # fault at another epoch) feed most epochs the same bytes, and one comparer serves
        # them all. Bounded, oldest first.
        self._results: dict[bytes, dict[str, Any]] = {}
        self._result_bytes = 0

    def recompute(self, wanted: list[str], given: dict[str, Any]) -> dict[str, Any]:
        """Real values of the ``wanted`` tensors computed from the ``given`` ones (real
        values, each in its tensor's own shape); every other frontier tensor takes its
        value from the full run.

        :raises OracleError: onnxruntime rejects the part, or a value is missing.
        """
        import numpy as np

        needed: set[int] = set()
        frontier: list[str] = []
        todo = list(wanted)
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or not name:
                continue
            seen.add(name)
            if name in self.inits:
                continue
            if name in given or name not in self.producer:
                frontier.append(name)
                continue
            index = self.producer[name]
            if index not in needed:
                needed.add(index)
                todo.extend(self.nodes[index].input)
        feeds = {}
        for name in frontier:
            value = given.get(name, self.full.get(name))
            if value is None:
                raise OracleError(f"{self.space.path}: no value for {name!r}, which "
                                  f"{', '.join(wanted)} depend(s) on")
            feeds[name] = self._typed(name, np.asarray(value), self.graph.info(name).dtype)
        key = (tuple(wanted), tuple(sorted(frontier)))
        digest = _digest(key, feeds)
        if digest in self._results:  # copies: a caller's change never reaches the memory
            return {t: v.copy() for t, v in self._results[digest].items()}
        try:
            if key not in self._sessions:
                self._sessions[key] = self._session(wanted, feeds, needed)
            values = self._sessions[key].run(wanted, feeds)
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
            raise OracleError(f"{self.space.path}: onnxruntime cannot recompute "
                              f"{', '.join(wanted)} from the board's buffers: {exc}") from None
        out = {t: self._real(t, np.asarray(v)) for t, v in zip(wanted, values)}
        self._remember(digest, out)
        return {t: v.copy() for t, v in out.items()}

    def _remember(self, digest: bytes, out: dict[str, Any]) -> None:
        size = sum(int(getattr(v, "nbytes", 0)) for v in out.values())
        while self._results and self._result_bytes + size > _RESULT_BYTES:
            oldest = next(iter(self._results))
            self._result_bytes -= sum(int(getattr(v, "nbytes", 0))
                                      for v in self._results.pop(oldest).values())
        if size <= _RESULT_BYTES:
            self._results[digest] = out
            self._result_bytes += size

    def _session(self, wanted: list[str], feeds: dict[str, Any], needed: set[int]) -> Any:
        """An onnxruntime session of the nodes ``needed`` between ``feeds`` and ``wanted``."""
        import onnxruntime as ort
        from onnx import helper

        inputs = [helper.make_tensor_value_info(name, self.graph.info(name).dtype or 1,
                                                list(arr.shape)) for name, arr in feeds.items()]
        outputs = [helper.make_tensor_value_info(t, self.graph.info(t).dtype or 1, None)
                   for t in wanted]
        used = {t for i in needed for t in self.nodes[i].input}
        part = helper.make_graph([self.nodes[i] for i in sorted(needed)], "epoch", inputs,
                                 outputs, [self.inits[t] for t in sorted(used & set(self.inits))])
        model = helper.make_model(part, opset_imports=list(self.proto.opset_import))
        model.ir_version = self.proto.ir_version
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        return ort.InferenceSession(model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])

    def _typed(self, name: str, real: Any, dtype: int) -> Any:
        """A real value as the tensor's element type: integer codes by its quantization."""
        import numpy as np

        if dtype in _INT_TYPES and real.dtype.kind == "f":
            q = self.space.quant.get(name)
            if q is None:
                raise OracleError(f"{self.space.path}: tensor {name!r} holds integer codes "
                                  "and no quantization of it is known")
            info = np.iinfo(_INT_TYPES[dtype])
            codes = np.clip(np.round(real / np.float32(q[0])) + q[1], info.min, info.max)
            return codes.astype(_INT_TYPES[dtype])
        if dtype == 1:
            return real.astype(np.float32)
        return real

    def _real(self, name: str, arr: Any) -> Any:
        from .metrics import dequantize

        q = self.space.quant.get(name)
        return dequantize(arr, q[0], q[1]) if q and arr.dtype.kind in "iu" else arr

"""The network a :mod:`board_sim` simulator serves: an ONNX model run by onnxruntime.

Every ONNX node is reported as one operator, its typed outputs as its tensors, so a
per-layer dump is keyed by ONNX tensor names (what ``stedge diverge`` expects).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt
from pytest_stedge.errors import BoardError

CPU_HZ = 800_000_000  # N6 core clock, for cycle counters derived from durations


@dataclass(frozen=True)
class SimNode:
    """One ONNX node as the simulated firmware reports it."""

    name: str
    op_type: str
    tensors: tuple[str, ...]
    duration_ms: float


class SimModel:
    """Loads an ONNX model and runs it with every node output exposed."""

    def __init__(self, path: Path) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import helper

        try:
            model = onnx.load(str(path))
        except Exception as exc:
            raise BoardError(f"{path}: not a readable ONNX model ({exc})") from exc
        inferred = onnx.shape_inference.infer_shapes(model)
        graph = inferred.graph
        typed = {v.name: v for v in [*graph.value_info, *graph.output]}
        initializers = {i.name for i in graph.initializer}
        self.inputs = tuple(self._desc(v, bp.TENSOR_INPUT) for v in graph.input
                            if v.name not in initializers)
        self.outputs = tuple(self._desc(v, bp.TENSOR_OUTPUT) for v in graph.output)
        nodes, extra = [], []
        out_names = {v.name for v in graph.output}
        for node in graph.node:
            names = tuple(o for o in node.output if o and o in typed)
            extra += [typed[o] for o in names if o not in out_names]
            nodes.append(SimNode(node.name, node.op_type, names, 0.0))
        del model.graph.output[:]
        model.graph.output.extend([*graph.output, *extra])
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(model.SerializeToString(), opts,
                                            providers=["CPUExecutionProvider"])
        self.output_names = [o.name for o in self.session.get_outputs()]
        # Deterministic durations from one reference run, proportional to output size.
        values = self.infer({d.name: np.zeros(d.shape, d.dtype) for d in self.inputs})
        self.nodes = [SimNode(n.name, n.op_type, n.tensors,
                              round(0.01 + sum(values[t].size for t in n.tensors) * 2e-5, 6))
                      for n in nodes]
        self.params_bytes = sum(
            int(np.prod(i.dims, dtype=np.int64))
            * np.dtype(helper.tensor_dtype_to_np_dtype(i.data_type)).itemsize
            for i in graph.initializer)
        self.activations_bytes = sum(values[t].nbytes for n in self.nodes for t in n.tensors)

    @staticmethod
    def _desc(value: Any, flags: int) -> bt.TensorDesc:
        from onnx import helper

        ttype = value.type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(ttype.elem_type))
        shape = tuple(d.dim_value if d.dim_value > 0 else 1 for d in ttype.shape.dim)
        return bt.TensorDesc(value.name, dtype, shape, flags=flags,
                             format=bt.format_word(dtype), dims=shape)

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every exposed tensor by name."""
        results = self.session.run(self.output_names, feeds)
        return dict(zip(self.output_names, (np.asarray(r) for r in results)))

    def node_index(self, ref: str | int | None) -> int | None:
        """Position of a node given by name, output tensor name or index; ``"outputs"`` =
        after the last node."""
        if ref is None:
            return None
        if ref == "outputs":
            return len(self.nodes)
        if isinstance(ref, int) or str(ref).isdigit():
            return int(ref)
        for i, node in enumerate(self.nodes):
            if ref == node.name or ref in node.tensors:
                return i
        raise BoardError(f"fault node {ref!r}: no node or tensor of that name in the model "
                         f"(nodes: {', '.join(n.name or '?' for n in self.nodes[:10])} ...)")

    @staticmethod
    def maybe_corrupt(arr: np.ndarray, bad: bool) -> np.ndarray:
        """Values uncorrelated with the right ones (same shape, dtype and rough scale)."""
        if not bad:
            return arr
        rng = np.random.default_rng(arr.size)
        if arr.dtype.kind == "f":
            scale = float(np.std(arr)) or 1.0
            return (rng.standard_normal(arr.shape) * scale).astype(arr.dtype)
        if arr.dtype.kind == "b":
            return ~arr
        info = np.iinfo(arr.dtype)
        return rng.integers(max(info.min, -128), min(info.max, 127), arr.shape,
                            endpoint=True).astype(arr.dtype)

    def op_msg(self, idx: int) -> dict[str, Any]:
        """The ``aiOperatorMsg`` of node ``idx`` (N6 style: 3 32-bit cycle counters)."""
        node = self.nodes[idx]
        flags = bp.OP_INTERNAL | (bp.OP_LAST if idx == len(self.nodes) - 1 else 0)
        if not node.tensors:
            flags |= bp.OP_WITHOUT_TENSOR
        cycles = int(node.duration_ms * CPU_HZ / 1000)
        return {"name": node.name, "type": flags << 24, "id": len(self.nodes) << 16 | (idx + 1),
                "duration": node.duration_ms, "counter_type": bp.COUNTER_FMT_32B << 16,
                "counters": [cycles // 10, cycles - cycles // 5, cycles // 10],
                "stack_used": -1, "heap_used": -1}

    @staticmethod
    def model_op_msg(name: str, total_ms: float) -> dict[str, Any]:
        """The model-level ``aiOperatorMsg`` (flags NONE, one 64-bit cycle counter)."""
        cycles = int(total_ms * CPU_HZ / 1000)
        return {"name": name, "type": 0, "id": 0, "duration": total_ms,
                "counter_type": bp.COUNTER_FMT_64B << 16,
                "counters": [cycles & 0xFFFFFFFF, cycles >> 32], "stack_used": -1,
                "heap_used": -1}

    def info_msg(self, name: str, signature: str) -> dict[str, Any]:
        """The ``aiModelInfoMsg`` (ATONN runtime, GCC, MACC unknown)."""
        def descs(items: tuple[bt.TensorDesc, ...], flag: int) -> list[dict[str, Any]]:
            return [bt.tensor_desc_msg(d.name, d.dtype, d.shape, flag | bp.TENSOR_IN_MEMPOOL)
                    for d in items]

        def pool(size: int) -> dict[str, Any]:
            return bt.tensor_desc_msg("", np.dtype(np.uint8), (size,), bp.TENSOR_MEMPOOL)

        return {"name": name, "rtid": 0x04010004, "signature": signature,
                "compile_datetime": "Jan 30 2026 14:44:19", "runtime_version": 0x0A020000,
                "tool_version": 0x04000000, "n_macc": 0, "n_nodes": len(self.nodes),
                "n_inputs": len(self.inputs), "inputs": descs(self.inputs, bp.TENSOR_INPUT),
                "n_outputs": len(self.outputs),
                "outputs": descs(self.outputs, bp.TENSOR_OUTPUT),
                "n_activations": 1, "activations": [pool(self.activations_bytes)],
                "n_params": 1, "params": [pool(self.params_bytes)],
                "runtime_desc": "onnxruntime simulator (pytest-stedge) 00000000"}

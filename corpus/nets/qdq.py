"""Static QDQ int8 quantization as ST recommends for the STM32N6.

QDQ format, int8 activations (asymmetric, per tensor), int8 weights symmetric per
output channel, MinMax calibration on seeded uniform random inputs. onnxruntime's
quantizer gives the same bytes for the same float model and data (its temporary
files and generated names do not reach the output).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx


@dataclass(frozen=True)
class Quantize:
    """How to turn a float model into a QDQ int8 one.

    :param seed: seed of the calibration inputs.
    :param samples: number of calibration inputs.
    :param low: calibration inputs are uniform in [low, high).
    :param float_op_types: operator types left in float (their nodes are excluded).
    :param keep_activations: keep ReLU/Clip nodes the quantizer would fold away.
    """

    seed: int
    samples: int = 8
    low: float = 0.0
    high: float = 1.0
    float_op_types: tuple[str, ...] = ()
    keep_activations: bool = False


@contextmanager
def _quiet_logging() -> Iterator[None]:
    # onnxruntime.quantization logs a "consider pre-processing" warning on the
    # root logger for every call; the graphs are already shape-complete.
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def quantize_qdq(model: onnx.ModelProto, spec: Quantize) -> onnx.ModelProto:
    """Quantize ``model`` statically to QDQ int8 the way ST recommends for the N6."""
    import numpy as np
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    graph_input = model.graph.input[0]
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    rng = np.random.default_rng(spec.seed)
    batches = [
        {graph_input.name: rng.uniform(spec.low, spec.high, shape).astype(np.float32)}
        for _ in range(spec.samples)
    ]

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(batches)

        def get_next(self) -> dict[str, Any] | None:
            return next(self._items, None)

    op_types = sorted({n.op_type for n in model.graph.node} - set(spec.float_op_types))
    excluded = [n.name for n in model.graph.node if n.op_type in spec.float_op_types]
    with tempfile.TemporaryDirectory(prefix="stedge-corpus-") as tmp, _quiet_logging():
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(model, source)
        quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=op_types,
            nodes_to_exclude=excluded,
            extra_options={
                "WeightSymmetric": True,
                "ActivationSymmetric": False,
                "QDQKeepRemovableActivations": spec.keep_activations,
            },
        )
        quantized = onnx.load(target)
    _quantize_float_inputs(quantized, [b[graph_input.name] for b in batches])
    return quantized


def _quantize_float_inputs(model: onnx.ModelProto, samples: list[Any]) -> None:
    """Give the graph input a Q/DQ pair when onnxruntime left it float.

    onnxruntime keeps a removable activation (ReLU) that reads the graph input
    unquantized; the NPU reads int8, so the reproducer must too. Scale and zero
    point follow onnxruntime's MinMax rule for asymmetric int8 over the range
    widened to include 0.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    name = graph.input[0].name
    consumers = [n for n in graph.node if name in n.input]
    if not consumers or all(n.op_type == "QuantizeLinear" for n in consumers):
        return
    low = min(0.0, float(min(s.min() for s in samples)))
    high = max(0.0, float(max(s.max() for s in samples)))
    scale = np.float32((high - low) / 255.0)
    zero = np.int8(np.clip(round(-128 - low / float(scale)), -128, 127))
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(scale), f"{name}_scale"),
            numpy_helper.from_array(np.array(zero), f"{name}_zero_point"),
        ]
    )
    quantized, dequantized = f"{name}_QuantizeLinear_Output", f"{name}_DequantizeLinear_Output"
    for node in consumers:
        node.input[:] = [dequantized if i == name else i for i in node.input]
    q = helper.make_node(
        "QuantizeLinear", [name, f"{name}_scale", f"{name}_zero_point"], [quantized],
        name=f"{name}_QuantizeLinear",
    )
    dq = helper.make_node(
        "DequantizeLinear", [quantized, f"{name}_scale", f"{name}_zero_point"], [dequantized],
        name=f"{name}_DequantizeLinear",
    )
    nodes = [q, dq, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)



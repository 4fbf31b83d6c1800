"""Deployment rules of the STM32N6 software path (``--target stm32n6`` without Neural-ART).

The Cortex-M55 runs the same software runtime as the MCUs (one ``heap_overlay_pool``),
so the MCU rules apply: overlay of convolution, pad and pooling outputs on their dying
inputs, dense layers not overlaid. What the N6 software path adds is in RULES.
"""

from __future__ import annotations

from ..model.graph import Graph, Node
from .rules_mcu import FLOOR, overlays

__all__ = ["FLOOR", "RULES", "Graph", "Node", "overlays"]

RULES: list[tuple[str, str, list[str]]] = [
    (
        "n6sw-runtime",
        (
            "Without --st-neural-art the N6 runs the software runtime: one heap_overlay_pool "
            "(alignment 4), no epochs, the MCU overlay rules."
        ),
        [
            "n6-packetqc-tcn-qwen2/model_npu_int8.onnx@tcn/4.0.0",
            "n6-packetqc-tcn-qwen2/model_npu_qdq.onnx@qwen2-qdq/4.0.0-host",
        ],
    ),
    (
        "n6sw-int64-inputs",
        "int64 inputs (token ids, masks) are int32 on the target: 4 bytes per element.",
        ["n6-packetqc-tcn-qwen2/model_npu_qdq.onnx@qwen2-qdq/4.0.0-host"],
    ),
]

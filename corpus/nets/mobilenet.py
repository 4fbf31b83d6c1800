"""MobileNetV2 (Sandler et al. 2018) as Keras builds it for alpha < 1 (the ST model
zoo's person-detection backbone): channels rounded to multiples of 8, last conv
kept at 1280, ReLU6 as Clip, stride-2 depthwise padded (0, 1)."""

from __future__ import annotations

import onnx

from .graph import Graph

# (expansion t, output channels c, repeats n, first stride s), the paper's Table 2
_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
             (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def make_divisible(value: float, divisor: int = 8) -> int:
    """Keras' channel rounding: nearest multiple of ``divisor``, never 10% below."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def mobilenet_v2(seed: int, alpha: float = 0.35, size: int = 128, classes: int = 2) -> onnx.ModelProto:
    """MobileNetV2 at ``alpha`` and ``size`` x ``size`` x 3 with a ``classes``-way head.

    At alpha 0.35 and 128x128 the largest live pair is block 2's expansion output
    (64x64x48 = 196,608 B int8) with its stride-2 depthwise output (32x32x48 =
    49,152 B): 245,760 B = 240 KiB, the activation figure ST Edge AI Core 2.1, 2.2
    and 3.0 report for the model zoo's 128x128 person detector (real-cases
    n6-mobilenetv2-qdq-3versions)."""
    g = Graph(f"mobilenet_v2_{alpha}_{size}", seed, (1, 3, size, size))
    x = g.relu6(g.conv("input", make_divisible(32 * alpha), 3, stride=2, pads=(0, 0, 1, 1)))
    for t, c, n, s in _SETTINGS:
        out = make_divisible(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            channels = g.shapes[x][1]
            y = x if t == 1 else g.relu6(g.conv(x, channels * t, 1))
            hidden = g.shapes[y][1]
            pads = (0, 0, 1, 1) if stride == 2 else (1, 1, 1, 1)
            y = g.relu6(g.conv(y, hidden, 3, stride=stride, groups=hidden, pads=pads))
            y = g.conv(y, out, 1)
            x = g.add(x, y) if stride == 1 and channels == out else y
    x = g.relu6(g.conv(x, 1280, 1))
    x = g.flatten(g.global_avgpool(x))
    g.output(g.softmax(g.dense(x, classes)))
    return g.model()

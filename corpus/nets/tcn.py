"""A temporal convolutional network (Bai et al. 2018 residual blocks) shaped like
the int8 TCN of the 4.0.1 report: 23 features x 60 time steps in, 30 x 5 out."""

from __future__ import annotations

import onnx

from .graph import Graph


def tcn_23x60(seed: int, channels: int = 32, kernel: int = 3) -> onnx.ModelProto:
    """Input projection, four residual blocks of two causal dilated convs (dilations
    1, 2, 4, 8), then a stride-2 head to 5 channels, transposed to (1, 30, 5)."""
    g = Graph("tcn_23x60", seed, (1, 23, 60))
    x = g.conv("input", channels, 1)
    for dilation in (1, 2, 4, 8):
        causal = (dilation * (kernel - 1), 0)  # pad the past only
        y = g.relu(g.conv(x, channels, kernel, dilation=dilation, pads=causal))
        y = g.conv(y, channels, kernel, dilation=dilation, pads=causal)
        x = g.relu(g.add(x, y))
    y = g.conv(x, 5, 2, stride=2, pads=(0, 0))
    g.output(g.transpose(y, (0, 2, 1)))
    return g.model()

"""The user-report CNN and the small known-bug reproducers."""

from __future__ import annotations

import onnx

from .graph import Graph


def mvs_cnn(seed: int) -> onnx.ModelProto:
    """10 Conv3x3+ReLU layers on a 320x240 RGB frame, as in the forum report
    "Unexplainably high RAM consumption" (22.9 MB reported, ~2.5 MB liveness bound).

    The widest pair of live tensors is layer 2's input and output, 16x240x320 each:
    2 x 1,228,800 B = 2,457,600 B in int8, which is the "about 2.5 MB" of the report.
    """
    g = Graph("mvs_cnn", seed, (1, 3, 240, 320))
    x = "input"
    for channels, stride in [
        (16, 1), (16, 1), (32, 2), (32, 1), (32, 1), (64, 2), (64, 1), (64, 1), (64, 1), (32, 1)
    ]:
        x = g.relu(g.conv(x, channels, 3, stride=stride))
    g.output(x)
    return g.model()


def relu_dw7(seed: int) -> onnx.ModelProto:
    """ReLU feeding a 7x7 depthwise convolution without bias: the smallest graph of the
    NPU hang reported for an activation in front of a large-kernel depthwise conv.
    Quantized with the ReLU kept, the QDQ graph has 9 nodes."""
    g = Graph("relu_dw7", seed, (1, 16, 32, 32))
    x = g.relu("input")
    g.output(g.conv(x, 16, 7, groups=16, bias=False))
    return g.model()


def dw_stride2(seed: int) -> onnx.ModelProto:
    """One 3x3 stride-2 depthwise convolution + ReLU, padded (0, 1) as Keras' correct_pad
    does for even inputs: the shape of the reported NPU stall on stride-2 depthwise."""
    g = Graph("dw_stride2", seed, (1, 32, 32, 32))
    x = g.conv("input", 32, 3, stride=2, groups=32, pads=(0, 0, 1, 1))
    g.output(g.relu(x))
    return g.model()


def conv2d_16f_3x3(seed: int) -> onnx.ModelProto:
    """One Conv 16 filters 3x3 'same' + ReLU + mean over H and W on 64x64x3, 16 outputs:
    the shape of the stm32n6-edge-ai-benchmarks micro-benchmark baseline_conv2d_16f_3x3
    (real-cases n6-micro-convs-4flows: CONV_2D with fused ReLU, then MEAN to [1, 16]),
    whose validate run reported other activations than generate."""
    g = Graph("conv2d_16f_3x3", seed, (1, 3, 64, 64))
    x = g.global_avgpool(g.relu(g.conv("input", 16, 3)))
    g.output(g.flatten(x))
    return g.model()

"""The MLPerf Tiny v1.0 reference networks (mlcommons/tiny, benchmark/training/*),
layer for layer, with batch norm folded and dropout dropped as at inference."""

from __future__ import annotations

import onnx

from .graph import Graph


def resnet8(seed: int) -> onnx.ModelProto:
    """Image classification (CIFAR-10, 32x32x3): ResNet-8, three stacks of 16/32/64
    filters, 1x1 stride-2 shortcuts, 8x8 average pooling, 10 classes."""
    g = Graph("resnet8", seed, (1, 3, 32, 32))
    x = g.relu(g.conv("input", 16, 3))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = g.relu(g.conv(x, filters, 3, stride=stride))
        y = g.conv(y, filters, 3)
        shortcut = x if stride == 1 else g.conv(x, filters, 1, stride=stride)
        x = g.relu(g.add(shortcut, y))
    x = g.flatten(g.avgpool(x, (8, 8)))
    g.output(g.softmax(g.dense(x, 10)))
    return g.model()


def ds_cnn(seed: int) -> onnx.ModelProto:
    """Keyword spotting (Speech Commands, 49x10 MFCC): DS-CNN small, a 10x4 stride-2
    conv of 64 filters, four depthwise-separable blocks, average pooling, 12 classes."""
    g = Graph("ds_cnn", seed, (1, 1, 49, 10))
    x = g.relu(g.conv("input", 64, (10, 4), stride=2, pads=(4, 1, 5, 1)))  # TF 'same'
    for _ in range(4):
        x = g.relu(g.conv(x, 64, 3, groups=64))
        x = g.relu(g.conv(x, 64, 1))
    x = g.flatten(g.avgpool(x, (25, 5)))
    g.output(g.softmax(g.dense(x, 12)))
    return g.model()


def autoencoder(seed: int) -> onnx.ModelProto:
    """Anomaly detection (ToyADMOS, 5 frames x 128 mel = 640): the fully connected
    autoencoder 640-128-128-128-128-8-128-128-128-128-640, ReLU after hidden layers."""
    g = Graph("fc_autoencoder", seed, (1, 640))
    x = "input"
    for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        x = g.relu(g.dense(x, units))
    g.output(g.dense(x, 640))
    return g.model()


def mobilenet_v1_vww(seed: int, alpha: float = 0.25) -> onnx.ModelProto:
    """Visual wake words (96x96x3): MobileNetV1 alpha 0.25, 13 depthwise-separable
    blocks, ReLU, 3x3 average pooling, 2 classes."""
    g = Graph("mobilenet_v1_025_vww", seed, (1, 3, 96, 96))
    x = g.relu(g.conv("input", int(32 * alpha), 3, stride=2, pads=(0, 0, 1, 1)))
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    blocks += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for filters, stride in blocks:
        channels = g.shapes[x][1]
        pads = (0, 0, 1, 1) if stride == 2 else (1, 1, 1, 1)
        x = g.relu(g.conv(x, channels, 3, stride=stride, groups=channels, pads=pads))
        x = g.relu(g.conv(x, int(filters * alpha), 1))
    x = g.flatten(g.avgpool(x, (3, 3)))
    g.output(g.softmax(g.dense(x, 2)))
    return g.model()

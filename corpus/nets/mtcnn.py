"""MTCNN's refine (RNet) and output (ONet) stages, layer for layer as in the
paper's Caffe models (Zhang et al. 2016, det2/det3): 3x3 convs, PReLU after every
conv and hidden FC, 3x3 stride-2 max pooling with Caffe's ceil rounding."""

from __future__ import annotations

import onnx

from .graph import Graph


def rnet(seed: int) -> onnx.ModelProto:
    """RNet, 24x24 input: face score (softmax over 2) and box regression (4). 4 PReLU."""
    g = Graph("mtcnn_rnet", seed, (1, 3, 24, 24))
    x = g.maxpool(g.prelu(g.conv("input", 28, 3, pads=(0, 0, 0, 0))), 3, 2, ceil=True)
    x = g.maxpool(g.prelu(g.conv(x, 48, 3, pads=(0, 0, 0, 0))), 3, 2, ceil=True)
    x = g.prelu(g.conv(x, 64, 2, pads=(0, 0, 0, 0)))
    x = g.prelu(g.dense(g.flatten(x), 128))
    g.output(g.softmax(g.dense(x, 2)))
    g.output(g.dense(x, 4))
    return g.model()


def onet(seed: int) -> onnx.ModelProto:
    """ONet, 48x48 input: score (2), box (4) and 5 landmarks (10). 5 PReLU."""
    g = Graph("mtcnn_onet", seed, (1, 3, 48, 48))
    valid = (0, 0, 0, 0)
    x = g.maxpool(g.prelu(g.conv("input", 32, 3, pads=valid)), 3, 2, ceil=True)
    x = g.maxpool(g.prelu(g.conv(x, 64, 3, pads=valid)), 3, 2, ceil=True)
    x = g.maxpool(g.prelu(g.conv(x, 64, 3, pads=valid)), 2, 2)
    x = g.prelu(g.conv(x, 128, 2, pads=valid))
    x = g.prelu(g.dense(g.flatten(x), 256))
    g.output(g.softmax(g.dense(x, 2)))
    g.output(g.dense(x, 4))
    g.output(g.dense(x, 10))
    return g.model()

"""Write small int8 TFLite models with LiteRT's flatbuffer schema (corpus, benchmarks, tests).

``detector(path)`` writes a YOLO-sized int8 detector: a strided convolution stem, a
backbone of conv + depthwise + pointwise blocks with residual ADDs, and a head; about
3.5 MB of int8 weights, runnable by LiteRT and TFLite Micro.
"""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as s

_CONV = s.BuiltinOperator.CONV_2D
_DW = s.BuiltinOperator.DEPTHWISE_CONV_2D
_ADD = s.BuiltinOperator.ADD
_MEAN = s.BuiltinOperator.MEAN
_FC = s.BuiltinOperator.FULLY_CONNECTED


class _Model:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.RandomState(seed)
        self.tensors: list[s.TensorT] = []
        self.buffers: list[s.BufferT] = [s.BufferT()]  # buffer 0: empty, by convention
        self.ops: list[s.OperatorT] = []
        self.codes: list[int] = []

    def tensor(self, name: str, shape: list[int], ttype: int, data: np.ndarray | None = None,
               scale: float = 0.05, zero: int = 0, axis_scales: int = 0) -> int:
        t = s.TensorT()
        t.name = name.encode()
        t.shape = list(shape)
        t.type = ttype
        q = s.QuantizationParametersT()
        q.scale = [scale] * (axis_scales or 1)
        q.zeroPoint = [zero] * (axis_scales or 1)
        q.quantizedDimension = 0
        t.quantization = q
        if data is not None:
            b = s.BufferT()
            b.data = np.frombuffer(data.tobytes(), np.uint8).tolist()
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        else:
            t.buffer = 0
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, code: int, inputs: list[int], outputs: list[int], options: object, kind: int) -> None:
        if code not in self.codes:
            self.codes.append(code)
        o = s.OperatorT()
        o.opcodeIndex = self.codes.index(code)
        o.inputs, o.outputs = inputs, outputs
        o.builtinOptionsType, o.builtinOptions = kind, options
        self.ops.append(o)

    def conv(self, x: int, shape: list[int], out_c: int, k: int, stride: int, dw: bool = False) -> tuple[int, list[int]]:
        n, h, w, c = shape
        oh, ow = -(-h // stride), -(-w // stride)
        if dw:
            weights = self.rng.randint(-127, 128, (1, k, k, c)).astype(np.int8)
            wt = self.tensor(f"w{len(self.ops)}", [1, k, k, c], s.TensorType.INT8, weights, 0.01, 0, c)
            self.tensors[wt].quantization.quantizedDimension = 3  # per output channel
            out_c = c
        else:
            weights = self.rng.randint(-127, 128, (out_c, k, k, c)).astype(np.int8)
            wt = self.tensor(f"w{len(self.ops)}", [out_c, k, k, c], s.TensorType.INT8, weights, 0.01, 0, out_c)
        bias = self.tensor(f"b{len(self.ops)}", [out_c], s.TensorType.INT32, np.zeros(out_c, np.int32), 0.0005, 0, out_c)
        y = self.tensor(f"act{len(self.ops)}", [n, oh, ow, out_c], s.TensorType.INT8, None, 0.05, -128)
        if dw:
            opt = s.DepthwiseConv2DOptionsT()
            opt.depthMultiplier = 1
            kind = s.BuiltinOptions.DepthwiseConv2DOptions
        else:
            opt = s.Conv2DOptionsT()
            kind = s.BuiltinOptions.Conv2DOptions
        opt.padding = s.Padding.SAME
        opt.strideH = opt.strideW = stride
        opt.fusedActivationFunction = s.ActivationFunctionType.RELU
        self.op(_DW if dw else _CONV, [x, wt, bias], [y], opt, kind)
        return y, [n, oh, ow, out_c]

    def add(self, a: int, b: int, shape: list[int]) -> int:
        y = self.tensor(f"add{len(self.ops)}", shape, s.TensorType.INT8, None, 0.05, -128)
        self.op(_ADD, [a, b], [y], s.AddOptionsT(), s.BuiltinOptions.AddOptions)
        return y

    def write(self, path: Path, inputs: list[int], outputs: list[int]) -> None:
        sub = s.SubGraphT()
        sub.tensors, sub.operators, sub.inputs, sub.outputs = self.tensors, self.ops, inputs, outputs
        model = s.ModelT()
        model.version = 3
        codes = []
        for code in self.codes:
            c = s.OperatorCodeT()
            c.builtinCode = code
            c.deprecatedBuiltinCode = min(code, 127)
            c.version = 1
            codes.append(c)
        model.operatorCodes = codes
        model.subgraphs = [sub]
        model.buffers = self.buffers
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        path.write_bytes(bytes(builder.Output()))


def micro_conv_bytes(filters: int = 16, seed: int = 0) -> bytes:
    """The bytes of :func:`micro_conv` (for corpus/build.py recipes)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return micro_conv(Path(tmp) / "m.tflite", filters, seed).read_bytes()


def detector(path: Path, seed: int = 0) -> Path:
    """A YOLO-sized int8 detector (about 3.5 MB) at ``path``."""
    m = _Model(seed)
    shape = [1, 224, 224, 3]
    x = inp = m.tensor("images", shape, s.TensorType.INT8, None, 1 / 128, 0)
    x, shape = m.conv(x, shape, 16, 3, 2)
    for out_c, blocks in ((32, 1), (64, 2), (128, 2), (256, 2), (288, 1)):
        x, shape = m.conv(x, shape, out_c, 3, 2)
        for _ in range(blocks):
            skip = x
            y, _ = m.conv(x, shape, out_c, 3, 1, dw=True)
            y, _ = m.conv(y, shape, out_c, 1, 1)
            y, _ = m.conv(y, shape, out_c, 3, 1)
            x = m.add(skip, y, shape)
    head, _ = m.conv(x, shape, 255, 1, 1)
    m.write(path, [inp], [head])
    return path


def micro_conv(path: Path, filters: int = 16, seed: int = 0) -> Path:
    """CONV_2D (ReLU fused) 3x3 on 64x64x3 then MEAN over H, W: the real micro model's shape."""
    m = _Model(seed)
    shape = [1, 64, 64, 3]
    inp = m.tensor("input", shape, s.TensorType.INT8, None, 1 / 128, 0)
    x, shape = m.conv(inp, shape, filters, 3, 1)
    axes = m.tensor("axes", [2], s.TensorType.INT32, np.array([1, 2], np.int32))
    out = m.tensor("output", [1, filters], s.TensorType.INT8, None, 0.05, -128)
    opt = s.ReducerOptionsT()
    opt.keepDims = False
    m.op(_MEAN, [x, axes], [out], opt, s.BuiltinOptions.ReducerOptions)
    m.write(path, [inp], [out])
    return path

"""A small NCHW graph builder over ``onnx.helper`` with seeded weights.

Every layer method takes a tensor name and returns the name of its output, and
the builder tracks shapes itself so that weight shapes follow from the layer
arguments. Weights are He-normal from one ``numpy`` generator seeded by the
caller, so a network built twice is the same network bit for bit. Batch
normalisation is folded into the preceding convolution's bias, as exporters do
for deployment.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13  # QDQ per-channel needs 13; ST Edge AI Core 2.x and later accept it
IR_VERSION = 8  # ST Edge AI Core 2.2 rejects ir_version 10 (real-cases n6-mobilenetv2-224-onnx-irv)


class Graph:
    """Accumulates nodes, initializers and shapes of one network."""

    def __init__(self, name: str, seed: int, input_shape: tuple[int, ...]) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {"input": tuple(input_shape)}
        self.outputs: list[str] = []
        self._count: dict[str, int] = {}

    # -- bookkeeping -------------------------------------------------------
    def _name(self, kind: str) -> str:
        index = self._count.get(kind, 0) + 1
        self._count[kind] = index
        return f"{kind}{index}"

    def _node(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs: object) -> str:
        name = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        self.shapes[name] = shape
        return name

    def _init(self, base: str, array: np.ndarray) -> str:
        name = f"{base}_{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def _he(self, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)

    # -- layers --------------------------------------------------------------
    def conv(
        self,
        x: str,
        out_channels: int,
        kernel: int | tuple[int, ...],
        stride: int = 1,
        dilation: int = 1,
        groups: int = 1,
        pads: tuple[int, ...] | None = None,
        bias: bool = True,
    ) -> str:
        """Conv over 1-D or 2-D input; default padding is 'same' for stride 1."""
        n, c, *spatial = self.shapes[x]
        kernel_shape = (kernel,) * len(spatial) if isinstance(kernel, int) else tuple(kernel)
        if pads is None:
            half = [dilation * (k - 1) // 2 for k in kernel_shape]
            pads = tuple(half + [dilation * (k - 1) - h for k, h in zip(kernel_shape, half)])
        rank = len(spatial)
        out_spatial = tuple(
            (spatial[i] + pads[i] + pads[i + rank] - dilation * (kernel_shape[i] - 1) - 1) // stride
            + 1
            for i in range(rank)
        )
        fan_in = (c // groups) * int(np.prod(kernel_shape))
        weight = self._init("w", self._he((out_channels, c // groups, *kernel_shape), fan_in))
        inputs = [x, weight]
        if bias:
            inputs.append(self._init("b", self.rng.standard_normal(out_channels) * 0.05))
        return self._node(
            "Conv",
            inputs,
            (n, out_channels, *out_spatial),
            kernel_shape=list(kernel_shape),
            strides=[stride] * rank,
            dilations=[dilation] * rank,
            group=groups,
            pads=list(pads),
        )

    def relu(self, x: str) -> str:
        """ReLU."""
        return self._node("Relu", [x], self.shapes[x])

    def relu6(self, x: str) -> str:
        """ReLU6 as Clip(0, 6), as Keras/TF exporters write it."""
        low = self._init("clip_min", np.array(0.0))
        high = self._init("clip_max", np.array(6.0))
        return self._node("Clip", [x, low, high], self.shapes[x])

    def prelu(self, x: str) -> str:
        """PReLU with one learned slope per channel (Caffe/MTCNN style)."""
        channels = self.shapes[x][1]
        extra = (1,) * (len(self.shapes[x]) - 2)
        slope = self._init("slope", 0.25 + 0.05 * self.rng.standard_normal((channels, *extra)))
        return self._node("PRelu", [x, slope], self.shapes[x])

    def maxpool(self, x: str, kernel: int, stride: int, ceil: bool = False) -> str:
        """2-D max pooling without padding (ceil_mode as Caffe when asked)."""
        n, c, h, w = self.shapes[x]
        rounding = np.ceil if ceil else np.floor
        oh, ow = (int(rounding((d - kernel) / stride)) + 1 for d in (h, w))
        return self._node(
            "MaxPool",
            [x],
            (n, c, oh, ow),
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            ceil_mode=int(ceil),
        )

    def global_avgpool(self, x: str) -> str:
        """Global average pooling to 1x1."""
        n, c, *spatial = self.shapes[x]
        return self._node("GlobalAveragePool", [x], (n, c, *([1] * len(spatial))))

    def avgpool(self, x: str, kernel: tuple[int, int]) -> str:
        """Average pooling with stride = kernel (no padding)."""
        n, c, h, w = self.shapes[x]
        return self._node(
            "AveragePool",
            [x],
            (n, c, h // kernel[0], w // kernel[1]),
            kernel_shape=list(kernel),
            strides=list(kernel),
        )

    def add(self, a: str, b: str) -> str:
        """Element-wise sum (residual connections)."""
        return self._node("Add", [a, b], self.shapes[a])

    def flatten(self, x: str) -> str:
        """Flatten to (N, features)."""
        n, *rest = self.shapes[x]
        return self._node("Flatten", [x], (n, int(np.prod(rest))), axis=1)

    def dense(self, x: str, units: int) -> str:
        """Fully connected layer as Gemm (transB=1, as PyTorch exports Linear)."""
        n, features = self.shapes[x]
        weight = self._init("fc_w", self._he((units, features), features))
        bias = self._init("fc_b", self.rng.standard_normal(units) * 0.05)
        return self._node("Gemm", [x, weight, bias], (n, units), transB=1)

    def softmax(self, x: str) -> str:
        """Softmax over the last axis."""
        return self._node("Softmax", [x], self.shapes[x], axis=-1)

    def transpose(self, x: str, perm: tuple[int, ...]) -> str:
        """Transpose."""
        shape = self.shapes[x]
        return self._node("Transpose", [x], tuple(shape[p] for p in perm), perm=list(perm))

    def output(self, x: str) -> None:
        """Mark ``x`` as a graph output."""
        self.outputs.append(x)

    # -- result --------------------------------------------------------------
    def model(self) -> onnx.ModelProto:
        """The checked float ONNX model (opset 13, ir_version 8)."""
        inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, self.shapes["input"])]
        renamed = {old: f"output{i}" if len(self.outputs) > 1 else "output"
                   for i, old in enumerate(self.outputs)}
        for node in self.nodes:
            node.output[:] = [renamed.get(o, o) for o in node.output]
            node.input[:] = [renamed.get(i, i) for i in node.input]
        outputs = [
            helper.make_tensor_value_info(renamed[o], TensorProto.FLOAT, self.shapes[o])
            for o in self.outputs
        ]
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model

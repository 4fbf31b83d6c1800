"""Deployment rules of the STM32 MCU software runtime (every ``--target`` but the N6 NPU).

Each rule names the real (model, run) pairs of ``../shared/real-cases`` that show it.
The runtime keeps each layer's output in the activation pool; its allocator lets the
output of a convolution, a pad or a pooling overwrite the input it is consuming when
that input dies there (overlay), which a plain liveness sum cannot see.
"""

from __future__ import annotations

from ..model.graph import Graph, Node
from .floor import Capabilities
from .opclass import ACTIVATIONS, BINARY, CONVERSIONS, CONVOLUTIONS, POOLS, UNARY, overlay_mode

# Layers whose output may overwrite their dying input: the runtime writes each output
# row after the input rows it needs are read. Dense layers (Gemm/MatMul) are not.
OVERLAY_OPS = frozenset(
    {"Conv", "ConvInteger", "QLinearConv", "Pad", "MaxPool", "AveragePool", "GlobalAveragePool",
     "GlobalMaxPool", "ReduceMean", "ReduceMax", "LpPool", "QLinearAveragePool",
     "QLinearGlobalAveragePool", "Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "Tanh",
     "HardSwish", "HardSigmoid", "Elu", "QLinearLeakyRelu", "QLinearSigmoid"}
)

RULES: list[tuple[str, str, list[str]]] = [
    (
        "mcu-io",
        (
            "Inputs and outputs are allocated in the activations unless --no-inputs-allocation "
            "/ --no-outputs-allocation put them in user buffers (stm32f4 mobilenetv2 -O ram: "
            "266,292 B of activations, the 49,152 B input and 4 B output outside); a TFLite "
            "model keeps its declared I/O types (uint8 input, float32 output)."
        ),
        [
            "stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20194-cubemx",
            "stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20182-devcloud",
        ],
    ),
    (
        "mcu-overlay",
        (
            "A convolution, depthwise convolution, pad or pooling output may overwrite its dying "
            "input: yamnet 4.0.0 with HSP allocates 101,440 B where the plain liveness of its own "
            "buffers is 147,456 B (conv2d_2's 98,304 B output over conv2d_1's 49,152 B input); "
            "the balanced mobilenetv2 build lays the 202,800 B pad output over its 196,608 B input."
        ),
        [
            "stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite@4.0.0-hsp-run1",
            "stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite@4.0.0-no-hsp",
            "stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20182-devcloud",
        ],
    ),
    (
        "mcu-dense-not-overlaid",
        (
            "Dense layers (Gemm, MatMul, FULLY_CONNECTED) are not overlaid: the MLP and policy "
            "cases allocate exactly the plain liveness of their tensors."
        ),
        [
            "stm32-mlp-validate-host/actor_joint_12d_c860k.onnx@2.2.0/generate",
            "stm32h7-policy-3regens/policy.onnx@2.2.0/run-2026-06-19",
            "stm32-mnist-onnx-3runs/mnist_model-2_PerChannel_quant_random_1.onnx@1.0.0-19899-cubemx-analyze-stm32h7",
        ],
    ),
    (
        "mcu-elementwise-in-place",
        (
            "Element-wise arithmetic and conversions write over a dying input, the graph "
            "input included: an Add over its MatMul/Gemm/Conv input (eltwise_11_output_array at "
            "conv2d_10_output_array's offset), a QUANTIZE over the input it converts "
            "(conversion_0_output_array across serving_default_input_10_output_array), in "
            "../shared/public-runs/stm32h7-9.0.0-generate-mobilenet_v2_0_35_128_fft_int8 "
            "(9.0.0; its model is not published)."
        ),
        [],
    ),
    (
        "mcu-fused-conv-pool",
        (
            "A convolution (and its activation) followed by a max or average pooling that "
            "alone reads it is one C layer (forward_conv2d_..._nl_pool): the convolution "
            "output never exists (HandWriteNumber: 39,744 B, its 28x28x32 float conv output "
            "would be 100,352 B)."
        ),
        ["stm32f7-9.0.0-generate-HandWriteNumber/HandWriteNumber.tflite"],
    ),
    (
        "mcu-activation-in-place",
        (
            "An activation after a layer (Relu, Clip ...) runs in the layer or in place: the "
            "runtime merges it ('nl_1_nl (Nonlinearity, CONV_2D)' with -65,536 B c_size)."
        ),
        [
            "stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20194-cubemx",
        ],
    ),
]

# What the admissible floor assumes the software runtime may do wherever it is legal
# (docs/oracle.md prints them): (id, text, evidence).
FLOOR: list[tuple[str, str, list[str]]] = [
    (
        "any-order",
        (
            "Any topological order: at an operator the floor counts only the tensors EVERY "
            "order holds there (producer an ancestor, a reader a descendant), never those of "
            "a branch some order runs first or last (the tool runs independent branches in "
            "its own order). Checked by exhaustive search on random graphs "
            "(tests/test_oracle_floor_properties.py)."
        ),
        [],
    ),
    (
        "in-place",
        (
            "An output may be written over an input that dies at its operator when each "
            "output element reads a bounded part of that input: element-wise operators, "
            "conversions (a same-size QUANTIZE over the graph input), convolutions, pooling, "
            "pads, layout moves, softmax and normalisations; a concatenation's inputs lie "
            "inside its output. Not a dense layer on one row: each output reads the whole "
            "input, so input and output coexist (the MLP, policy and sine runs allocate "
            "exactly that)."
        ),
        [
            "stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite@4.0.0-hsp-run1",
            "stm32-mlp-validate-host/actor_joint_12d_c860k.onnx@actor_joint_12d_c860k/2.2.0/generate",
            "stm32h7-9.0.0-generate-sine_model/sine_model.tflite",
        ],
    ),
    (
        "fused-layers",
        (
            "An activation runs inside the layer before it, a pooling or reduction inside "
            "the convolution before it, a pad inside the convolution or pooling after it: "
            "the tensor between them never exists (HandWriteNumber 9.0.0: CONV_2D + ReLU + "
            "MAX_POOL_2D is one C layer, 39,744 B where storing the 100,352 B conv output "
            "would need more; the stm32f4 -O ram build stores no pad tensor)."
        ),
        [
            "stm32f7-9.0.0-generate-HandWriteNumber/HandWriteNumber.tflite",
            "stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20194-cubemx",
        ],
    ),
]


def overlays(graph: Graph, node: Node) -> bool:
    """Whether the runtime typically writes this layer's output over its dying data input:
    convolutions, pads, pooling and activations (``mcu-overlay``), element-wise
    arithmetic and conversions (``mcu-elementwise-in-place``)."""
    return node.op_type in OVERLAY_OPS or node.op_type in BINARY | CONVERSIONS


# Pooling the runtime's fused convolution kernels compute (forward_conv2d_..._nl_pool).
WINDOW_POOLS = frozenset({"MaxPool", "AveragePool", "QLinearAveragePool"})


def software_fuses(producer: Node, consumers: list[Node], *, typical: bool = False) -> bool:
    """Whether a software kernel may compute ``consumers`` inside ``producer`` (the tensor
    between them never stored): an activation after any layer, a pooling after a
    convolution (and its activation), each the tensor's only reader. The runtime's
    ``forward_conv2d_..._nl_pool`` kernels do both (HandWriteNumber, 9.0.0: CONV_2D +
    ReLU + MAX_POOL_2D is one C layer whose 28x28x32 output never exists). ``typical``:
    only what the runtime is seen doing (window pooling); otherwise any pooling or
    reduction, which a kernel could accumulate as the convolution produces its rows."""
    if len(consumers) != 1:
        return False
    op = consumers[0].op_type
    if op in ACTIVATIONS:
        return True
    if producer.op_type == "Pad" and not typical:
        # a convolution or pooling kernel reads the unpadded input and takes the border as
        # zeros: the stm32f4 mobilenetv2 -O ram build stores no conv2d_6_pad_before tensor
        # where the balanced build stores its 202,800 B
        return op in CONVOLUTIONS | POOLS
    pools = WINDOW_POOLS if typical else POOLS
    return op in pools and producer.op_type in CONVOLUTIONS | UNARY


def floor_capabilities(graph: Graph) -> Capabilities:
    """What the software runtime may do, for the admissible floor: every legal in-place
    write (:func:`.opclass.overlay_mode`) and the software fusions."""
    return Capabilities(fuses=software_fuses, overlay=lambda node: overlay_mode(graph, node))

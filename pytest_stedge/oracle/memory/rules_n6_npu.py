"""Deployment rules of the STM32N6 Neural-ART NPU (``--target stm32n6 --st-neural-art``).

Each rule names the real (model, run) pairs of ``../shared/real-cases`` that show it
(``case/model@run``); docs/oracle.md prints them with the figures.

The NPU chains its units (convolution, pooling, activation, arithmetic) through a
stream switch inside one epoch: a tensor that only streams from one unit into the
next is never written to memory. The floor assumes every such chain the real runs
show; a tool that materialises the tensor anyway is above the floor, never below.
"""

from __future__ import annotations

from ..model.graph import Graph, Node
from .floor import Capabilities
from .opclass import CONVOLUTIONS, DENSE, POOLS, overlay_mode

CONV_OPS = frozenset(
    {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "Gemm", "MatMul", "QLinearMatMul",
     "MatMulInteger"}
)
POOL_OPS = frozenset(
    {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceMax",
     "QLinearAveragePool", "QLinearGlobalAveragePool", "LpPool"}
)
ACTIVATION_OPS = frozenset(
    {"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu",
     "QLinearSigmoid", "QLinearLeakyRelu"}
)
ARITHMETIC_OPS = frozenset({"Add", "Sub", "Mul", "QLinearAdd", "QLinearMul"})
# Units whose output can stream into another unit, and units that can take a stream.
STREAM_PRODUCERS = CONV_OPS | POOL_OPS | ACTIVATION_OPS | ARITHMETIC_OPS
STREAM_CONSUMERS = POOL_OPS | ACTIVATION_OPS | ARITHMETIC_OPS
PAD_CONSUMERS = CONV_OPS | POOL_OPS

RULES: list[tuple[str, str, list[str]]] = [
    (
        "n6-io",
        (
            "Inputs and outputs are allocated in the activations (2.2+: 'input/output buffers "
            "are allocated in the activations buffer'); a TFLite model keeps its declared I/O "
            "types (a float32 input stays 4 bytes per element and a software Quantize makes its "
            "int8 copy); a QDQ ONNX float input read by a QuantizeLinear is an int8 input, a "
            "float output made by a DequantizeLinear an int8 output."
        ),
        [
            "n6-blazeface-2profiles/blazeface_front_128_quant_pc_ff_od_wider_face.tflite@2.2.0-profile-default-cli/generate-2025-08-25",
            "n6-yolo-micro-onnx/yolov8n_micro_224_int8.onnx@4.0.1-aistudio",
            "n6-mobilenetv1-cubemx/mobilenetv1_a025_224_fft_int8.tflite@2.2.0-cubemx",
        ],
    ),
    (
        "n6-conv-pool-stream",
        (
            "A convolution (or depthwise convolution) whose output only feeds a pooling or MEAN "
            "unit streams into it: the convolution output is never stored. The tool's figure is "
            "input + output exactly (12,288 + 16 ... 64 B)."
        ),
        [
            "n6-micro-convs-4flows/baseline_conv2d_16f_3x3_int8.tflite@2.2.0-cubemx-target",
            "n6-micro-convs-4flows/baseline_conv2d_3x3_int8.tflite@4.0.0-aistudio",
            "n6-micro-convs-4flows/baseline_conv2d_pool_int8.tflite@4.0.0-devcloud",
            "n6-micro-convs-4flows/baseline_depthwise_3x3_int8.tflite@4.0.0-aistudio",
        ],
    ),
    (
        "n6-activation-stream",
        (
            "A convolution's activation runs in the same epoch: Conv + Relu/Clip/LeakyRelu, and "
            "SiLU written as Sigmoid(x) * x, never store the pre-activation tensor (yolov8n: the "
            "unfused SiLU would need 3 x 200,704 B, the tool allocates 401,408 B in all)."
        ),
        [
            "n6-yolo-micro-onnx/yolov8n_micro_224_int8.onnx@4.0.1-aistudio",
            "n6-yolo-micro-onnx/yolov11n_micro_224_int8.onnx@4.0.1-aistudio",
        ],
    ),
    (
        "n6-residual-add",
        (
            "A residual Add takes the convolution's output as a stream and the skip tensor from "
            "memory: the convolution output that only feeds the Add is never stored. Bound, not "
            "proven: no public N6 c_info of a residual network resolves its buffers; with this rule "
            "the floor stays below the tool on these pairs (1,505,280 <= 2,107,392 B; 327,680 <= "
            "540,672 B)."
        ),
        [
            "n6-mobilenetv2-224-onnx-irv/mobilenet_v2_224_int8.onnx@4.0.1-aistudio",
            "n6-blazeface-2profiles/blazeface_front_128_quant_pc_ff_od_wider_face.tflite@2.2.0-n6-allmems-O3-cubemx",
        ],
    ),
    (
        "n6-pad-into-consumer",
        (
            "A Pad (or the layout Transpose ST's front end puts before the first layer) whose "
            "output only feeds a convolution or pooling is done by that unit's input DMA: the "
            "padded or transposed tensor is never stored (the OE model's input Transpose: floor "
            "12,304 B = the tool's figure; blazeface's 11 PAD: bound only, floor below the tool)."
        ),
        [
            "n6-micro-convs-4flows/baseline_conv2d_16f_3x3_int8_OE_3_3_0.onnx@2.2.0-cubemx-target",
            "n6-blazeface-2profiles/blazeface_front_128_quant_pc_ff_od_wider_face.tflite@2.2.0-profile-default-cli/analyze",
        ],
    ),
    (
        "n6-float-not-fused",
        (
            "Float operators run in software epochs on the Cortex-M55 and never stream: a float "
            "node keeps its tensors in memory at 4 bytes per element."
        ),
        [
            "n6-blazeface-2profiles/blazeface_front_128_quant_pc_ff_od_wider_face.tflite@2.2.0-profile-default-cli/generate-2025-08-25",
        ],
    ),
]

# What the admissible floor assumes the N6 may do wherever it is legal, and the one
# relaxation it does not take (docs/oracle.md prints them): (id, text, evidence).
FLOOR: list[tuple[str, str, list[str]]] = [
    (
        "n6-any-order-and-streams",
        (
            "Any topological order (as for the MCU) and every stream chain of the rules "
            "above wherever it is legal, whether or not the tool takes it (the typical "
            "deployment streams only when it costs no more than storing)."
        ),
        [],
    ),
    (
        "n6-integer-qdq",
        (
            "Every node of a QDQ region runs on integer tensors, a node whose learned "
            "parameter stayed float (a per-channel PRelu slope left out of quantization) "
            "included: the tool runs such PReLUs in software epochs on S8 and Q16 buffers, "
            "never FLOAT ones (seen on a public run not held here; the corpus's "
            "mtcnn-rnet model_prelu_float.onnx has the shape)."
        ),
        [],
    ),
    (
        "n6-elementwise-in-place",
        (
            "Element-wise operators, conversions, copies and concatenations may write over a "
            "dying input (the tool transposes its input in place: Input_0_out_0 and "
            "Transpose_1_out_0 share their addresses; float nodes run the MCU runtime's "
            "kernels, with its in-place writes and fusions)."
        ),
        ["n6-mobilenetv1-cubemx/mobilenetv1_a025_224_fft_int8.tflite@2.2.0-cubemx"],
    ),
    (
        "n6-units-keep-their-input (relaxation not taken)",
        (
            "A convolution, pooling or dense unit never writes its output over its own "
            "input: its input and output DMA streams run together, no N6 c_info in "
            "../shared has an epoch output sharing addresses with its input, and the micro "
            "convolutions allocate input + output exactly on 24 runs of 2.2.0 and 4.0.0. "
            "Assuming it would lower those 24 floors to the input alone (12,288 B) for a "
            "layout the tool has never used."
        ),
        [
            "n6-micro-convs-4flows/baseline_conv2d_3x3_int8.tflite@conv2d_3x3/4.0.0-aistudio",
            "n6-micro-convs-4flows/baseline_conv2d_pool_int8.tflite@conv2d_pool/2.2.0-devcloud",
        ],
    ),
]


def streams(graph: Graph, producer: Node, consumers: list[Node], quantized: set[int]) -> bool:
    """Whether the producer's output streams into every consumer (never stored)."""
    if not consumers or producer.index not in quantized:
        return False
    if any(c.index not in quantized for c in consumers):
        return False
    if producer.op_type in ("Pad", "Transpose"):
        return all(c.op_type in PAD_CONSUMERS for c in consumers)
    if producer.op_type not in STREAM_PRODUCERS:
        return False
    return all(c.op_type in STREAM_CONSUMERS for c in consumers)


def floor_capabilities(graph: Graph, integer: set[int]) -> Capabilities:
    """What the N6 may do, for the admissible floor. Integer nodes (every node of a QDQ
    region, float-parameter ones included: the tool may run them in integer) stream as
    :func:`streams` says; element-wise operators, conversions and concatenations may
    write over a dying input; convolutions, pooling and dense units never do (their
    input and output DMA streams run together: every N6 c_info in ../shared keeps an
    epoch's input and output apart, and the micro convolutions allocate input + output
    exactly). Float nodes run in software on the Cortex-M55 with the MCU runtime's
    kernels, so the MCU classes apply to them."""
    from .rules_mcu import software_fuses

    def fuses(producer: Node, consumers: list[Node]) -> bool:
        nodes = [producer, *consumers]
        if all(n.index in integer for n in nodes):
            return streams(graph, producer, consumers, integer)
        if not any(n.index in integer for n in nodes):
            return software_fuses(producer, consumers)
        return False

    def overlay(node: Node) -> tuple[str, int | None]:
        if node.index in integer and node.op_type in CONVOLUTIONS | POOLS | DENSE:
            return "none", None
        return overlay_mode(graph, node)

    return Capabilities(fuses=fuses, overlay=overlay)

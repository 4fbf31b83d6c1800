"""Operator classes by data dependency: what an implementation may legally do with memory.

The admissible floor (:mod:`.floor`) and the rules of each target family reason about
operators by how their output elements depend on their input elements, not by the
operators the real pairs happen to show:

- element-wise (unary, binary, conversions): output element i reads input element i
  only, so the output may be written over an input that dies there (in place);
- local (convolution, pooling, pad, resize, layout moves, softmax and normalisations
  over a few scalars): an output element reads a bounded window of the input, or the
  input plus scalars computed first; written row by row, the output may overlay the
  input it consumes (the MCU runtime does it: ``mcu-overlay``);
- dense (a fully connected layer on one row, an RNN cell): every output element reads
  the whole input row, so no input byte can be released before the last output is
  computed: input and output coexist whatever the tool does;
- concatenation: each input may be written by its producer straight into its slice
  of the output (no copy), so the inputs and the output share memory.
"""

from __future__ import annotations

from ..model.graph import Graph, Node

ACTIVATIONS = frozenset(
    {"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
     "Elu", "Selu", "Celu", "Gelu", "Softplus", "Softsign", "ThresholdedRelu", "Mish",
     "QLinearSigmoid", "QLinearLeakyRelu"}
)
UNARY = ACTIVATIONS | frozenset(
    {"Abs", "Neg", "Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Sin", "Cos", "Tan", "Erf",
     "Floor", "Ceil", "Round", "Sign", "Square", "Not", "IsNaN", "IsInf", "BitShift"}
)
BINARY = frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "FloorDiv", "SquaredDifference",
     "Sum", "Mean", "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater",
     "GreaterOrEqual", "NotEqual", "Where", "QLinearAdd", "QLinearMul"}
)
CONVERSIONS = frozenset(
    {"Quantize", "Dequantize", "Cast", "QuantizeLinear", "DequantizeLinear", "CastLike"}
)
ELEMENTWISE = UNARY | BINARY | CONVERSIONS
CONVOLUTIONS = frozenset(
    {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose"}
)
POOLS = frozenset(
    {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool",
     "QLinearAveragePool", "QLinearGlobalAveragePool", "ReduceMean", "ReduceMax",
     "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
     "ReduceSumSquare"}
)
DENSE = frozenset(
    {"Gemm", "MatMul", "MatMulInteger", "QLinearMatMul", "Einsum", "LSTM", "GRU", "RNN",
     "Attention", "MultiHeadAttention"}
)
CONCAT = frozenset({"Concat", "QLinearConcat"})


def rows(graph: Graph, node: Node) -> int:
    """Independent rows of a dense operator's activation input (product of the leading
    dimensions; 1 when unknown)."""
    acts = [n for n in node.inputs if n and n not in graph.constants]
    if not acts:
        return 1
    shape = graph.info(acts[0]).shape
    if not shape or len(shape) < 2:
        return 1
    count = 1
    for dim in shape[:-1]:
        if not isinstance(dim, int) or dim <= 0:
            return 1
        count *= dim
    return count


def overlay_mode(graph: Graph, node: Node) -> tuple[str, int | None]:
    """How the output of ``node`` may share memory with inputs that die at it, and which
    input position may be overwritten (None: any).

    ``"all"``: every dying input may lie inside the output (concatenation);
    ``"one"``: the output may be written over one dying input (element-wise and local
    operators; a dense operator over several independent rows, written row by row over
    its first operand, the one it reads row by row);
    ``"none"``: input and output coexist (a dense operator on a single row).
    """
    op = node.op_type
    if op in CONCAT:
        return "all", None
    if op in DENSE:
        return ("one", 0) if rows(graph, node) > 1 else ("none", None)
    return "one", None

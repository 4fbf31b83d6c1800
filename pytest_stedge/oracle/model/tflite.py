"""Read a TFLite flatbuffer (with the ``tflite`` package) into the oracle's :class:`Graph`.

Operators get the ONNX name of the same computation (``CONV_2D`` -> ``Conv``,
``MEAN`` -> ``ReduceMean`` ...) so that one set of deployment rules serves both
formats; ``QUANTIZE``/``DEQUANTIZE`` become ``Quantize``/``Dequantize``, real
operators (a float network input converted to int8 in software), not the
``QuantizeLinear`` pairs a QDQ ONNX model folds away. Tensor types are the
file's own: a TFLite model keeps its declared I/O types. Activation functions
fused into an operator (``fused_activation_function``) never make a tensor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .graph import Graph, Node, TensorInfo, index_graph

# TFLite TensorType -> ONNX TensorProto data type.
_TYPES = {0: 1, 1: 10, 2: 6, 3: 2, 4: 7, 5: 8, 6: 9, 7: 5, 9: 3, 10: 11, 12: 13, 15: 12, 16: 4, 17: 22}

# Builtin operator name -> the ONNX op_type the rules know it by.
OPS: dict[str, str] = {
    "ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "MAXIMUM": "Max", "MINIMUM": "Min",
    "SQUARED_DIFFERENCE": "SquaredDifference", "POW": "Pow", "ADD_N": "Sum",
    "CONV_2D": "Conv", "DEPTHWISE_CONV_2D": "Conv", "TRANSPOSE_CONV": "ConvTranspose",
    "CONV_3D": "Conv", "FULLY_CONNECTED": "Gemm", "BATCH_MATMUL": "MatMul",
    "AVERAGE_POOL_2D": "AveragePool", "MAX_POOL_2D": "MaxPool", "L2_POOL_2D": "LpPool",
    "MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax",
    "REDUCE_MIN": "ReduceMin", "REDUCE_PROD": "ReduceProd",
    "RELU": "Relu", "RELU6": "Clip", "RELU_N1_TO_1": "Clip", "RELU_0_TO_1": "Clip",
    "LEAKY_RELU": "LeakyRelu", "PRELU": "PRelu", "LOGISTIC": "Sigmoid", "TANH": "Tanh",
    "HARD_SWISH": "HardSwish", "ELU": "Elu", "GELU": "Gelu", "EXP": "Exp", "LOG": "Log",
    "SQRT": "Sqrt", "RSQRT": "Rsqrt", "ABS": "Abs", "NEG": "Neg", "SIN": "Sin", "COS": "Cos",
    "SQUARE": "Square", "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round", "SIGN": "Sign",
    "SOFTMAX": "Softmax", "LOG_SOFTMAX": "LogSoftmax", "L2_NORMALIZATION": "LpNormalization",
    "LOCAL_RESPONSE_NORMALIZATION": "LRN",
    "RESHAPE": "Reshape", "SQUEEZE": "Squeeze", "EXPAND_DIMS": "Unsqueeze",
    "TRANSPOSE": "Transpose", "CONCATENATION": "Concat", "PACK": "Concat", "UNPACK": "Split",
    "SPLIT": "Split", "SPLIT_V": "Split", "SLICE": "Slice", "STRIDED_SLICE": "Slice",
    "GATHER": "Gather", "GATHER_ND": "GatherND", "TILE": "Tile", "BROADCAST_TO": "Expand",
    "PAD": "Pad", "PADV2": "Pad", "MIRROR_PAD": "Pad",
    "RESIZE_BILINEAR": "Resize", "RESIZE_NEAREST_NEIGHBOR": "Resize",
    "DEPTH_TO_SPACE": "DepthToSpace", "SPACE_TO_DEPTH": "SpaceToDepth",
    "QUANTIZE": "Quantize", "DEQUANTIZE": "Dequantize", "CAST": "Cast",
    "ARG_MAX": "ArgMax", "ARG_MIN": "ArgMin", "SHAPE": "Shape", "FILL": "ConstantOfShape",
    "ZEROS_LIKE": "ZerosLike", "SELECT": "Where", "SELECT_V2": "Where",
    "EQUAL": "Equal", "NOT_EQUAL": "NotEqual", "LESS": "Less", "LESS_EQUAL": "LessOrEqual",
    "GREATER": "Greater", "GREATER_EQUAL": "GreaterOrEqual", "LOGICAL_AND": "And",
    "LOGICAL_OR": "Or", "LOGICAL_NOT": "Not", "FLOOR_DIV": "FloorDiv", "FLOOR_MOD": "Mod",
    "BATCH_TO_SPACE_ND": "BatchToSpace", "SPACE_TO_BATCH_ND": "SpaceToBatch",
    "CUMSUM": "CumSum", "TOPK_V2": "TopK", "ONE_HOT": "OneHot", "RANGE": "Range",
    "REVERSE_V2": "ReverseSequence", "EMBEDDING_LOOKUP": "Gather",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM": "LSTM",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "RNN", "HARD_SIGMOID": "HardSigmoid",
}

_TFLITE_IDENTIFIER = b"TFL3"


def _builtin_names() -> dict[int, str]:
    import tflite

    return {
        value: name
        for name, value in vars(tflite.BuiltinOperator).items()
        if not name.startswith("_") and isinstance(value, int)
    }


def is_tflite(data: bytes) -> bool:
    """A TFLite flatbuffer carries the file identifier ``TFL3`` at bytes 4..8."""
    return len(data) >= 8 and data[4:8] == _TFLITE_IDENTIFIER


def read_tflite(path: Path) -> Graph:
    """The main subgraph of a ``.tflite`` file as a :class:`Graph`.

    :raises OracleError: not a TFLite flatbuffer, a custom or unknown operator,
        control flow (several subgraphs called by WHILE/IF), or a tensor whose
        shape is not static.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OracleError(f"{path}: cannot read the model ({exc.strerror or exc})") from exc
    if not is_tflite(data):
        raise OracleError(
            f"{path}: not a TFLite flatbuffer (no 'TFL3' file identifier at byte 4; "
            f"expected a .tflite model written by the TFLite converter)"
        )
    try:
        return _graph(path, data)
    except OracleError:
        raise
    except Exception as exc:  # a truncated or corrupt flatbuffer fails deep in its reader
        raise OracleError(
            f"{path}: not a readable TFLite flatbuffer ({type(exc).__name__}: {exc})"
        ) from exc


def _graph(path: Path, data: bytes) -> Graph:
    import tflite

    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() < 1:
        raise OracleError(f"{path}: the TFLite model has no subgraph")
    names = _builtin_names()
    sub = model.Subgraphs(0)
    tensors: dict[str, TensorInfo] = {}
    by_index: dict[int, str] = {}
    constants: set[str] = set()
    dynamic: list[str] = []
    for i in range(sub.TensorsLength()):
        t = sub.Tensors(i)
        raw = t.Name()
        name = raw.decode("utf-8", "replace") if raw else f"tensor_{i}"
        if name in tensors:  # names are not unique in every converter's output
            name = f"{name}#{i}"
        by_index[i] = name
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        signature = [int(d) for d in t.ShapeSignatureAsNumpy()] if t.ShapeSignatureLength() else []
        if any(d < 0 for d in signature[1:]) or any(d < 0 for d in shape):
            dynamic.append(name)
        tensors[name] = TensorInfo(name, _TYPES.get(int(t.Type()), 0), shape)
        buffer = model.Buffers(t.Buffer()) if t.Buffer() < model.BuffersLength() else None
        if buffer is not None and (buffer.DataLength() > 0 or buffer.Offset() > 1):
            constants.add(name)
    nodes: list[Node] = []
    for k in range(sub.OperatorsLength()):
        op = sub.Operators(k)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        tfl_name = names.get(builtin, f"builtin {builtin}")
        if tfl_name == "CUSTOM":
            custom = code.CustomCode()
            tfl_name = f"CUSTOM ({custom.decode('utf-8', 'replace') if custom else '?'})"
        op_type = OPS.get(tfl_name)
        if op_type is None:
            raise OracleError(
                f"{path}: unsupported TFLite operator {tfl_name} (operator {k}); the oracle "
                f"knows {len(OPS)} builtin operators: {', '.join(sorted(OPS))}"
            )
        ins = [by_index[int(j)] if j >= 0 else "" for j in op.InputsAsNumpy()] if op.InputsLength() else []
        outs = [by_index[int(j)] for j in op.OutputsAsNumpy()] if op.OutputsLength() else []
        nodes.append(Node(k, f"{tfl_name.lower()}_{k}", op_type, ins, outs,
                          attrs=_options(op, tfl_name)))
    inputs = [by_index[int(j)] for j in sub.InputsAsNumpy()] if sub.InputsLength() else []
    outputs = [by_index[int(j)] for j in sub.OutputsAsNumpy()] if sub.OutputsLength() else []
    live = {n for node in nodes for n in node.inputs + node.outputs if n and n not in constants}
    unresolved = [n for n in dynamic if n in live or n in inputs]
    if unresolved:
        raise OracleError(
            f"{path}: unresolved shapes: tensor(s) {', '.join(unresolved[:5])} have dynamic "
            f"dimensions (shape_signature -1 past the batch); convert with a fixed input shape"
        )
    graph = Graph(
        path=path,
        nodes=nodes,
        tensors=tensors,
        inputs=inputs,
        outputs=outputs,
        constants=constants,
        initializers={},
        opset=0,
        model=None,
        source="tflite",
    )
    index_graph(graph)
    return graph


def _options(op: Any, tfl_name: str) -> dict[str, Any]:
    """The builtin options the placement rules read, as ONNX names them: a convolution's
    ``dilations`` ([h, w] factors)."""
    import tflite

    kinds = {"CONV_2D": tflite.Conv2DOptions, "DEPTHWISE_CONV_2D": tflite.DepthwiseConv2DOptions}
    kind = kinds.get(tfl_name)
    table = op.BuiltinOptions() if kind is not None else None
    if kind is None or table is None:
        return {}
    options = kind()
    options.Init(table.Bytes, table.Pos)
    return {"dilations": [int(options.DilationHFactor()), int(options.DilationWFactor())]}


def tflite_io(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Inputs and outputs of a TFLite model: name, shape, dtype name, scale, zero point."""
    import numpy as np
    import tflite

    data = path.read_bytes()
    if not is_tflite(data):
        raise OracleError(f"{path}: not a TFLite flatbuffer (no 'TFL3' file identifier)")
    model = tflite.Model.GetRootAsModel(data, 0)
    sub = model.Subgraphs(0)
    numpy_names = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                   7: "int16", 9: "int8", 10: "float64", 16: "uint16"}

    def describe(j: int) -> dict[str, Any]:
        t = sub.Tensors(j)
        q = t.Quantization()
        scale = q.ScaleAsNumpy() if q is not None and q.ScaleLength() else None
        zero = q.ZeroPointAsNumpy() if q is not None and q.ZeroPointLength() else None
        return {
            "name": (t.Name() or b"").decode("utf-8", "replace"),
            "shape": [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else [],
            "dtype": numpy_names.get(int(t.Type()), "unknown"),
            "scale": float(np.asarray(scale).ravel()[0]) if scale is not None else None,
            "zero_point": int(np.asarray(zero).ravel()[0]) if zero is not None else 0,
        }

    ins = [describe(int(j)) for j in sub.InputsAsNumpy()] if sub.InputsLength() else []
    outs = [describe(int(j)) for j in sub.OutputsAsNumpy()] if sub.OutputsLength() else []
    return ins, outs

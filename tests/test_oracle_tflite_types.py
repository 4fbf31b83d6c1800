"""TFLite activations are counted at the width their tensor type gives them.

A 16x8 model keeps int16 activations, an int32 or float16 tensor its own width: the
int8 folding of QDQ models never applies to a TFLite file, whose tensors are typed
already. The model here is built with LiteRT's own flatbuffer schema: input x [1, N],
r = RELU(x), y = ADD(r, x), all of one type.
"""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import pytest
from ai_edge_litert import schema_py_generated as s

from pytest_stedge.oracle import analyze_model

N = 1024


def _relu_add(path: Path, ttype: int) -> Path:
    tensors = []
    for name in ("x", "r", "y"):
        t = s.TensorT()
        t.name, t.shape, t.type, t.buffer = name.encode(), [1, N], ttype, 0
        q = s.QuantizationParametersT()
        q.scale, q.zeroPoint = [0.01], [0]
        t.quantization = q
        tensors.append(t)
    codes = []
    for builtin in (s.BuiltinOperator.RELU, s.BuiltinOperator.ADD):
        code = s.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, builtin, 1
        codes.append(code)
    relu, add = s.OperatorT(), s.OperatorT()
    relu.opcodeIndex, relu.inputs, relu.outputs = 0, [0], [1]
    add.opcodeIndex, add.inputs, add.outputs = 1, [1, 0], [2]
    add.builtinOptionsType, add.builtinOptions = s.BuiltinOptions.AddOptions, s.AddOptionsT()
    sub = s.SubGraphT()
    sub.tensors, sub.operators, sub.inputs, sub.outputs = tensors, [relu, add], [0], [2]
    model = s.ModelT()
    model.version, model.operatorCodes, model.subgraphs = 3, codes, [sub]
    model.buffers = [s.BufferT()]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    return path


@pytest.mark.parametrize(
    ("ttype", "width"),
    [
        (s.TensorType.INT8, 1),
        (s.TensorType.INT16, 2),
        (s.TensorType.INT32, 4),
        (s.TensorType.FLOAT16, 2),
        (s.TensorType.FLOAT32, 4),
    ],
    ids=["int8", "int16", "int32", "float16", "float32"],
)
def test_activations_at_their_type_width(tmp_path: Path, ttype: int, width: int) -> None:
    model = _relu_add(tmp_path / "m.tflite", ttype)
    r = analyze_model(model, target="stm32h7")
    # three tensors of N elements, none stored twice
    assert r["naive_bytes"] == 3 * N * width
    # x is read again by ADD, so RELU holds x and r; ADD writes y over r (or x): 2 tensors
    assert r["lower_bound_bytes"] == 2 * N * width
    assert [i["shape"] for i in r["inputs"]] == [[1, N]]

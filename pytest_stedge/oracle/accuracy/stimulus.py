"""The tool's default validation stimulus (validation-and-protocol.md §1.3).

``generating random data, size=10, seed=42, range=(0, 1)``: float inputs are
``RandomState(42).uniform(0, 1, (10,) + shape)`` in float32; quantized inputs
draw over their whole representable range, ``uniform((qmin - zp) * s, (qmax -
zp) * s)``, then quantize with round-half-to-even and clip. Several inputs draw
from one generator in input order (our reading: ST's multi-input order is not
documented).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

_INT_RANGES = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-32768, 32767),
    "uint16": (0, 65535),
}
_ONNX_TYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    10: "float16",
    11: "float64",
}


@dataclass
class InputSpec:
    """One model input as the tool feeds it: per-sample shape (no batch), type, quantization.

    ``feed_float`` marks a float ONNX input that a QuantizeLinear reads first: the
    tool drives it as int8, and the reference receives the dequantized codes.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    scale: float | None = None
    zero_point: int = 0
    feed_float: bool = False


def _as_specs(source: Any) -> list[InputSpec]:
    if isinstance(source, (str, Path)):
        return input_specs(source)
    if hasattr(source, "graph") and hasattr(source.graph, "input"):
        return input_specs(source)
    specs: list[InputSpec] = []
    for item in source:
        if isinstance(item, InputSpec):
            specs.append(item)
        elif isinstance(item, dict):
            specs.append(
                InputSpec(
                    str(item.get("name", f"input_{len(specs) + 1}")),
                    tuple(int(d) for d in item["shape"]),
                    str(item.get("dtype", "float32")),
                    item.get("scale"),
                    int(item.get("zero_point") or 0),
                    bool(item.get("feed_float", False)),
                )
            )
        else:
            raise OracleError(
                f"input spec {item!r}: expected a dict with name, shape, dtype[, scale, zero_point]"
            )
    return specs


def _tflite_specs(path: Path) -> list[InputSpec]:
    """A TFLite model's inputs: their declared type and quantization, batch dropped."""
    from ..model.tflite import tflite_io

    specs = []
    for item in tflite_io(path)[0]:
        dims = list(item["shape"])
        if len(dims) >= 2 and dims[0] == 1:
            dims = dims[1:]
        if item["dtype"] not in _INT_RANGES and not item["dtype"].startswith("float"):
            raise OracleError(
                f"{path}: input {item['name']!r} has type {item['dtype']}: the stimulus supports "
                f"float, int8, uint8, int16 and uint16 inputs"
            )
        specs.append(
            InputSpec(item["name"], tuple(dims), item["dtype"], item["scale"], item["zero_point"])
        )
    return specs


def input_specs(model: Any) -> list[InputSpec]:
    """The input specs of an ONNX or TFLite model (path or ONNX ModelProto).

    The batch dimension (the first one, of size 1 or symbolic) is dropped; a float
    input read only by QuantizeLinear takes that node's type, scale and zero point.
    """
    import numpy as np

    from ..model.graph import load_model

    if isinstance(model, (str, Path)) and _is_tflite_file(Path(model)):
        return _tflite_specs(Path(model))
    proto = load_model(model)
    g = proto.graph
    inits = {i.name: i for i in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    specs: list[InputSpec] = []
    for value in g.input:
        if value.name in inits:
            continue
        ttype = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in ttype.shape.dim]
        if len(dims) >= 2 and (dims[0] in (None, 1)):
            dims = dims[1:]
        if any(d is None or d <= 0 for d in dims):
            raise OracleError(
                f"input {value.name!r} has dynamic dimensions {dims}: the stimulus needs a "
                f"static per-sample shape"
            )
        dtype = _ONNX_TYPES.get(ttype.elem_type)
        if dtype is None:
            raise OracleError(
                f"input {value.name!r} has ONNX type {ttype.elem_type}: the stimulus supports "
                f"{sorted(set(_ONNX_TYPES.values()))}"
            )
        spec = InputSpec(value.name, tuple(int(d or 0) for d in dims), dtype)
        users = [n for n in g.node if value.name in n.input]
        if dtype in _INT_RANGES:
            dq = _downstream_dq(g, value.name)
            if dq is not None:
                scale, zp = _const(inits, consts, dq.input[1]), None
                if len(dq.input) > 2 and dq.input[2]:
                    zp = _const(inits, consts, dq.input[2])
                if scale is not None and np.size(scale) == 1:
                    spec.scale = float(np.asarray(scale).ravel()[0])
                    spec.zero_point = int(np.asarray(zp).ravel()[0]) if zp is not None else 0
        if (
            dtype.startswith("float")
            and users
            and all(n.op_type == "QuantizeLinear" for n in users)
        ):
            q = users[0]
            scale = _const(inits, consts, q.input[1])
            zp = (
                _const(inits, consts, q.input[2])
                if len(q.input) > 2 and q.input[2]
                else np.zeros((), np.uint8)
            )
            if scale is not None and np.size(scale) == 1 and zp is not None:
                spec = InputSpec(
                    value.name,
                    spec.shape,
                    str(np.asarray(zp).dtype),
                    float(np.asarray(scale).ravel()[0]),
                    int(np.asarray(zp).ravel()[0]),
                    feed_float=True,
                )
        specs.append(spec)
    return specs


def _is_tflite_file(path: Path) -> bool:
    from ..model.tflite import is_tflite

    if path.suffix.lower() == ".tflite":
        return True
    try:
        with path.open("rb") as handle:
            return is_tflite(handle.read(8))
    except OSError:
        return False


def _const(inits: dict[str, Any], consts: dict[str, Any], name: str) -> Any:
    from onnx import numpy_helper

    if name in inits:
        return numpy_helper.to_array(inits[name])
    if name in consts:
        for attr in consts[name].attribute:
            if attr.name == "value":
                return numpy_helper.to_array(attr.t)
    return None


def _downstream_dq(g: Any, name: str) -> Any:
    """The DequantizeLinear that reads an int8 input, directly or through layout ops."""
    from ..model.facts import TRANSPARENT_OPS

    frontier = [name]
    for _ in range(8):  # a few layout hops at most (Transpose, Reshape ...)
        nxt = []
        for node in g.node:
            if any(i in frontier for i in node.input[:1]):
                if node.op_type == "DequantizeLinear":
                    return node
                if node.op_type in TRANSPARENT_OPS:
                    nxt.extend(node.output[:1])
        if not nxt:
            return None
        frontier = nxt
    return None


def quantize(x: Any, scale: float, zero_point: int, dtype: str) -> Any:
    """ST's quantizer: ``clip(round(x / s) + zp)`` with round-half-to-even."""
    import numpy as np

    lo, hi = _INT_RANGES[dtype]
    return np.clip(np.round(x / np.float32(scale)) + zero_point, lo, hi).astype(dtype)


def draw(spec: InputSpec, samples: int, rng: Any) -> Any:
    """The float32 draw for one input (before quantization)."""
    import numpy as np

    size = (samples,) + tuple(spec.shape)
    if spec.dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[spec.dtype]
        s = 1.0 if spec.scale is None else spec.scale
        return rng.uniform(
            (lo - spec.zero_point) * s, (hi - spec.zero_point) * s, size=size
        ).astype(np.float32)
    return rng.uniform(0, 1, size=size).astype(np.float32)


def default_stimulus(
    model_or_input_specs: Any, samples: int = 10, seed: int = 42
) -> dict[str, Any]:
    """The tool's default random inputs, ``{input name: array (samples, *shape)}``.

    :param model_or_input_specs: an ONNX path/ModelProto, or a list of
        :class:`InputSpec` / dicts ``{name, shape, dtype, scale, zero_point}``
        where ``shape`` excludes the batch.
    :returns: float32 arrays for float inputs, integer codes for quantized ones
        (dequantized float32 for float inputs that a QuantizeLinear reads).
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    out: dict[str, Any] = {}
    for spec in _as_specs(model_or_input_specs):
        x = draw(spec, samples, rng)
        if spec.dtype in _INT_RANGES:
            s = 1.0 if spec.scale is None else spec.scale
            codes = quantize(x, s, spec.zero_point, spec.dtype)
            if spec.feed_float:
                x = ((codes.astype(np.int32) - spec.zero_point).astype(np.float32)) * np.float32(s)
            else:
                x = codes
        elif spec.dtype != "float32":
            x = x.astype(spec.dtype)
        out[spec.name] = x
    return out

"""One inference on a board, written as a dump: the ``.npz`` of every tensor the board sent
and its JSON sidecar (schema ``stedge.board-dump/1``) that ``stedge diverge`` reads.

Shared by ``stedge board-run`` and the pytest stage that dumps a per-layer run after a
failing validation (``--stedge-board``); prints nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import BoardClient
    from .specs import BoardSpec

DUMP_SCHEMA = "stedge.board-dump/1"


DEFAULT_OP_TIMEOUT = 50.0  # seconds of silence allowed during an inference


def board_client(spec: BoardSpec | str, *, baud: int | None, header_bytes: int,
                 timeout: float) -> BoardClient:
    from dataclasses import replace

    from .client import BoardClient
    from .messages import Timeouts
    from .specs import parse_board_spec

    if isinstance(spec, str):
        spec = parse_board_spec(spec)
    # --baud only fills in a baud rate the spec does not give itself
    has_baud = any(t.isdigit() for t in spec.text.split(":")[1:])
    if baud and spec.kind == "serial" and not has_baud:
        spec = replace(spec, baud=baud)
    return BoardClient(spec, header_bytes=header_bytes, timeouts=Timeouts(op=timeout))


def _resolve(text: str) -> tuple[Path, str | None]:
    """(model path, C name from a case or None)."""
    path = Path(text)
    if path.is_dir() and (path / "case.toml").is_file():
        path = path / "case.toml"
    if path.suffix == ".toml":
        from ..case.load import load_cases

        case = load_cases(path)[0]
        return case.model, case.c_name
    return path, None


def default_stimulus(descs: Any, seed: int, samples: int = 10) -> list[Any]:
    """Sample 0 of stedgeai validate's random stimulus (10 samples, seed 42) for these
    board inputs, drawn as ``stedge reference``/``diverge`` draw it.

    Float: ``RandomState(seed).uniform(0, 1, (samples,) + shape)``; quantised integer
    inputs: uniform over the representable real range, then ``clip(round(x / s) + zp)``.
    Several inputs draw their samples from one generator in input order.
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    out = []
    for d in descs:
        per_sample = d.shape[1:] if d.shape and d.shape[0] == 1 else d.shape
        size = (samples, *per_sample)
        if d.dtype.kind in "iu" and d.scale:
            info = np.iinfo(d.dtype)
            lo, hi = (info.min - d.zero_point) * d.scale, (info.max - d.zero_point) * d.scale
            x = rng.uniform(lo, hi, size=size).astype(np.float32)
            q = np.clip(np.round(x / np.float32(d.scale)) + d.zero_point, info.min, info.max)
            first = q.astype(d.dtype)[0]
        elif d.dtype.kind == "b":
            first = (rng.uniform(0, 1, size=size) > 0.5)[0]
        else:
            first = rng.uniform(0, 1, size=size).astype(np.float32).astype(d.dtype)[0]
        out.append(first.reshape(d.shape))
    return out


@dataclass(frozen=True)
class DumpInfo:
    """What :func:`run_dump` wrote: the ``.npz`` dump, its JSON sidecar and the sidecar's
    content (schema ``stedge.board-dump/1``: board, network, timings, nodes, quantisation)."""

    path: Path
    sidecar: Path
    meta: dict[str, Any]
    arrays: int  # how many arrays the .npz holds

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """The board's node reports: name, type, id, duration_ms, counters, tensors, quant."""
        return list(self.meta.get("nodes") or [])


def run_dump(model: Path | str, board: BoardSpec | str, *, out: Path,
             per_layer: bool = False, inputs: Path | None = None, seed: int = 42,
             name: str | None = None, signature: str | None = None, baud: int | None = None,
             header_bytes: int = 2, timeout: float = DEFAULT_OP_TIMEOUT,
             c_info: Path | None = None) -> DumpInfo:
    """Run one sample on a board and write ``out`` (.npz keyed by tensor name) and its
    ``.json`` sidecar; prints nothing.

    :param model: ONNX model, or a case.toml (or its folder) naming the model and C name.
    :param board: board spec (text as ``--board`` takes it, or a parsed :class:`BoardSpec`).
    :param per_layer: per-layer run with intermediate data (slow on a UART).
    :param inputs: .npz of inputs by name (or in order); default: sample 0 of
        :func:`default_stimulus` with ``seed``.
    :param name: expected network C name (default: the case's, else not checked).
    :param signature: expected network signature (default: not checked).
    :param baud: baud rate for a serial spec that gives none.
    :param header_bytes: packet header width of the firmware (2: stedgeai >= 2.2, 1: older).
    :param timeout: seconds of silence allowed during the inference.
    :param c_info: the N6 compilation's ``network_c_info.json``, recorded in the sidecar.
    :raises BoardError: (a subclass naming what went wrong) when the board fails.
    """
    import numpy as np

    from pytest_stedge.errors import BoardError

    model, c_name = _resolve(str(model))
    onnx_in, onnx_out = _onnx_io_names(model)
    client = board_client(board, baud=baud, header_bytes=header_bytes, timeout=timeout)
    mode = "per-layer-data" if per_layer else "io"
    with client:
        sysinfo = client.system_info()
        net = client.check_network(name=name or c_name, signature=signature)
        if inputs:
            with np.load(inputs) as f:
                given = {k: f[k] for k in f.files}
            named = [given.get(d.name, given.get(o)) for d, o in
                     zip(net.inputs, onnx_in or [d.name for d in net.inputs])]
            arrs: list[Any] = list(given.values()) if any(v is None for v in named) else named
        else:
            arrs = default_stimulus(net.inputs, seed)
        if len(arrs) != len(net.inputs):
            raise BoardError(f"{inputs}: {len(arrs)} array(s), the board's network "
                             f"{net.name!r} takes {len(net.inputs)}")
        result = client.run(arrs, mode=mode)
    arrays: dict[str, Any] = {}
    for node in result.nodes:
        arrays.update({k: v for k, v in node.tensors.items() if v.size})
    out_names = list(result.outputs)
    if len(onnx_out) == len(out_names) and not set(out_names) <= set(onnx_out):
        out_names = list(onnx_out)  # board-side names (e.g. Quantize_57_out_0): the model's
    descs = list(result.output_descs.values())
    for oname, arr, desc in zip(out_names, result.outputs.values(), descs):
        arrays[oname] = _as_model_tensor(arr, desc, onnx_out.get(oname))
    in_names = list(onnx_in) if len(onnx_in) == len(arrs) else [d.name for d in net.inputs]
    for iname, arr, desc in zip(in_names, arrs, net.inputs):
        arrays[iname] = _as_model_tensor(np.asarray(arr), desc, onnx_in.get(iname))
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)
    meta = {
        "schema": DUMP_SCHEMA, "model": str(model), "board": client.where,
        "device": sysinfo.device, "network": net.name, "signature": net.signature,
        "mode": mode, "seed": seed,
        **({"c_info": str(c_info.resolve())} if c_info is not None else {}),
        "inputs": in_names, "outputs": out_names, "duration_ms": result.duration_ms,
        "quant": {qname: [d.scale, d.zero_point] for qname, d in
                  [*zip(in_names, net.inputs), *zip(out_names, result.output_descs.values())]
                  if d.scale},
        "nodes": [{"name": n.name, "type": n.type, "id": n.id, "duration_ms": n.duration_ms,
                   "counters": n.counters, "tensors": list(n.tensors),
                   "quant": {k: [d.scale, d.zero_point] for k, d in n.descs.items() if d.scale},
                   "descs": {k: {"format": d.format, "dims": list(d.dims), "addr": d.addr,
                                 "flags": d.flags} for k, d in n.descs.items()}}
                  for n in result.nodes],
    }
    sidecar = out.with_suffix(".json")
    sidecar.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return DumpInfo(path=out, sidecar=sidecar, meta=meta, arrays=len(arrays))


def _onnx_io_names(model: Path) -> tuple[dict[str, bool], dict[str, bool]]:
    """Graph inputs and outputs of an ONNX model, name -> whether it is a float tensor
    (empty when the file is not ONNX)."""
    if model.suffix.lower() != ".onnx" or not model.is_file():
        return {}, {}
    import onnx

    from pytest_stedge.errors import StedgeError

    try:
        graph = onnx.load(str(model), load_external_data=False).graph
    except Exception as exc:  # DecodeError and friends: not an ONNX file
        raise StedgeError(f"{model}: not an ONNX model ({type(exc).__name__}: {exc})") from exc
    inits = {i.name for i in graph.initializer}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}

    def is_float(v: Any) -> bool:
        return bool(v.type.tensor_type.elem_type in floats)

    return ({v.name: is_float(v) for v in graph.input if v.name not in inits},
            {v.name: is_float(v) for v in graph.output})


def _as_model_tensor(arr: Any, desc: Any, model_is_float: bool | None) -> Any:
    """Board integer codes of a quantised tensor become reals where the ONNX graph has a
    float tensor (a QDQ model's float input/output); anything else is kept as received."""
    if model_is_float and arr.dtype.kind in "iu" and desc.scale:
        return desc.dequantize(arr)
    return arr

"""``stedge boards`` (list and probe serial ports) and ``stedge board-run`` (one inference)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_stedge.board.specs import BoardSpec

DUMP_SCHEMA = "stedge.board-dump/1"
DEFAULT_OP_TIMEOUT = 50.0  # seconds of silence allowed during an inference


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``boards`` and ``board-run``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "boards", help="List serial ports; --probe asks each for the validation firmware",
        formatter_class=fmt,
        description="List the serial ports pyserial sees (ST-LINK virtual COM ports first). "
                    "With --probe, sync with each and show the device, firmware capabilities, "
                    "runtime and the networks it holds.",
        epilog="examples:\n  stedge boards\n  stedge boards --probe --baud 921600\n"
               "  stedge boards --probe --board socket://127.0.0.1:5555")
    p.add_argument("--probe", action="store_true", help="sync with each port and describe it")
    p.add_argument("--board", action="append", default=[], metavar="SPEC",
                   help="probe this board spec instead of every port (repeatable)")
    _link_options(p)
    p.set_defaults(handler=cmd_boards)

    r = subparsers.add_parser(
        "board-run", help="Run one inference on a board and save its outputs as a dump",
        formatter_class=fmt,
        description="Run one sample on a board running the validation firmware (or the "
                    "simulator), per layer if asked, and save a .npz dump keyed by tensor "
                    "name (node outputs, model outputs, and the inputs used) with a .json "
                    "sidecar (timings, counters, quantisation). `stedge diverge MODEL DUMP` "
                    "reads the dump. The input is the first sample of stedgeai validate's "
                    "default stimulus (seed 42) unless --inputs is given.",
        epilog="examples:\n"
               "  stedge board-run model.onnx --board serial:/dev/ttyACM0:921600 --per-layer "
               "--out dump.npz\n"
               "  stedge board-run corpus/mlperf-ds-cnn/case.toml --board auto --out ds-cnn.npz\n"
               "  stedge board-run model.tflite --board serial:921600 --per-layer --out n6.npz "
               "--c-info st_ai_output/network_c_info.json\n"
               "  stedge diverge model.onnx dump.npz")
    r.add_argument("model", metavar="MODEL_OR_CASE", help="ONNX model, or a case.toml (or its "
                   "folder) naming the model and the network's C name")
    r.add_argument("--board", required=True, metavar="SPEC",
                   help="serial[:PORT][:BAUD], auto, or socket://HOST:PORT")
    r.add_argument("--per-layer", action="store_true",
                   help="per-layer run with intermediate data (slow on a UART)")
    r.add_argument("--out", type=Path, default=Path("board-dump.npz"), help="dump file (.npz)")
    r.add_argument("--inputs", type=Path, help=".npz of inputs by name (or in order)")
    r.add_argument("--seed", type=int, default=42, help="stimulus seed (default 42)")
    r.add_argument("--name", help="expected network C name on the board")
    r.add_argument("--signature", help="expected network signature (c_info.json 'signature')")
    r.add_argument("--c-info", type=Path, metavar="JSON",
                   help="N6: the network_c_info.json generate wrote for the network on the "
                        "board; recorded in the dump, so that `stedge diverge` maps its epochs")
    _link_options(r)
    r.set_defaults(handler=cmd_board_run)


def _link_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baud", type=int, default=None, help="baud rate for ports without one "
                   "(default 921600, the N6 validation firmware's)")
    p.add_argument("--header-bytes", type=int, choices=(1, 2), default=2,
                   help="packet headers of the firmware: 2 = ST Edge AI Core >= 2.2 "
                        "(default), 1 = <= 2.1")
    p.add_argument("--timeout", type=float, default=DEFAULT_OP_TIMEOUT,
                   help=f"seconds of silence allowed during an inference "
                        f"(default {DEFAULT_OP_TIMEOUT:g})")


def _client(spec: BoardSpec | str, *, baud: int | None, header_bytes: int,
            timeout: float) -> Any:
    from dataclasses import replace

    from pytest_stedge.board.client import BoardClient
    from pytest_stedge.board.messages import Timeouts
    from pytest_stedge.board.specs import parse_board_spec

    if isinstance(spec, str):
        spec = parse_board_spec(spec)
    # --baud only fills in a baud rate the spec does not give itself
    has_baud = any(t.isdigit() for t in spec.text.split(":")[1:])
    if baud and spec.kind == "serial" and not has_baud:
        spec = replace(spec, baud=baud)
    return BoardClient(spec, header_bytes=header_bytes, timeouts=Timeouts(op=timeout))


def cmd_boards(args: argparse.Namespace) -> int:
    """List ports, and with --probe describe what answers on each."""
    from pytest_stedge.board.specs import list_ports
    from pytest_stedge.errors import BoardError

    specs = list(args.board)
    if not specs:
        ports = list_ports()
        if not ports:
            print("no USB serial ports found")
        for port in ports:
            mark = "ST-LINK" if port.is_stlink else ""
            print(f"{port.device:<16} {port.vid or 0:04X}:{port.pid or 0:04X} {mark:<8} "
                  f"{port.description}")
        specs = [f"serial:{p.device}" for p in ports]
    if not args.probe:
        return 0
    answered = 0
    for text in specs:
        client = _client(text, baud=args.baud, header_bytes=args.header_bytes,
                         timeout=args.timeout)
        try:
            with client:
                sync, sysinfo = client.sync(), client.system_info()
                nets = client.networks()
            answered += 1
            print(f"{client.where}: validation firmware msg v{sync.version}, {sysinfo.device} "
                  f"(0x{sysinfo.devid:03X}) at {sysinfo.sclock_hz / 1e6:g} MHz, runtime "
                  f"{sync.runtime}, capabilities {', '.join(sync.capabilities) or 'none'}")
            for net in nets:
                print(f"  network {net.name!r}: signature {net.signature or '(none)'}, "
                      f"built {net.compile_datetime}, tool {net.tool_version}, "
                      f"{len(net.inputs)} input(s), {len(net.outputs)} output(s)")
        except BoardError as exc:
            print(f"{client.where}: {exc}")
    return 0 if answered else 1


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
    client = _client(board, baud=baud, header_bytes=header_bytes, timeout=timeout)
    mode = "per-layer-data" if per_layer else "io"
    with client:
        sysinfo = client.system_info()
        net = client.check_network(name=name or c_name, signature=signature)
        if inputs:
            with np.load(inputs) as f:
                given = {k: f[k] for k in f.files}
            arrs = [given.get(d.name, given.get(o)) for d, o in
                    zip(net.inputs, onnx_in or [d.name for d in net.inputs])]
            if any(v is None for v in arrs):
                arrs = list(given.values())
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


def cmd_board_run(args: argparse.Namespace) -> int:
    """Run one sample and write the dump and its JSON sidecar (see :func:`run_dump`)."""
    if args.c_info is not None and not args.c_info.is_file():
        from pytest_stedge.errors import StedgeError

        raise StedgeError(f"--c-info {args.c_info}: no such file (give the network_c_info.json "
                          "that generate wrote)")
    info = run_dump(args.model, args.board, out=args.out, per_layer=args.per_layer,
                    inputs=args.inputs, seed=args.seed, name=args.name,
                    signature=args.signature, baud=args.baud, header_bytes=args.header_bytes,
                    timeout=args.timeout, c_info=args.c_info)
    meta = info.meta
    print(f"{meta['board']}: network {meta['network']!r}, {len(info.nodes)} node(s), "
          f"{meta['duration_ms']:.3f} ms on the board")
    print(f"wrote {info.path} ({info.arrays} arrays) and {info.sidecar}")
    for line in next_steps(meta, info.path):
        print(line)
    return 0


def next_steps(meta: dict[str, Any], dump: Path) -> list[str]:
    """What to run next on a dump: ``next:`` lines only for commands that work as printed
    (the dump's model and, for N6 epoch records, the c_info it recorded), else a note."""
    import shlex

    model = shlex.quote(str(meta["model"]))
    where = shlex.quote(str(dump))
    nodes = meta.get("nodes") or []
    epochs = any(str(n.get("name", "")).startswith("epoch_") for n in nodes)
    if meta.get("c_info"):
        return [f"next: stedge diverge {model} {where}"]
    if epochs:
        return [("note: the board reports epochs (an N6): `stedge diverge` maps them through "
                 "the compilation's network_c_info.json: run board-run with --c-info FILE, or "
                 f"stedge diverge {model} {where} --c-info FILE")]
    if nodes and not str(meta["model"]).lower().endswith(".onnx"):
        return [(f"note: node records are compared on an ONNX model; {meta['model']} is not "
                 "one")]
    return [f"next: stedge diverge {model} {where}"]


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

"""``stedge boards`` (list and probe serial ports) and ``stedge board-run`` (one inference)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_stedge.board.dump_run import DEFAULT_OP_TIMEOUT, board_client, run_dump


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
        client = board_client(text, baud=args.baud, header_bytes=args.header_bytes,
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




"""Client throughput and CPU over the board simulator at a UART line rate (issue 8's targets).

The simulator runs in its own process and sends at most baud/10 bytes per second, as a
921,600-baud 8N1 UART does. One per-layer-with-data inference of a chain model whose
intermediate tensors total about 1 MB. Prints, for the client process only:
- throughput: bytes received / wall time of the run, as a share of the line rate
  (target >= 90%), and the tensor payload rate;
- CPU: process_time / wall during the transfer (target < 20% of one core), and during a
  silent wait for a board that stopped answering.

    python benchmarks/bench_board.py [--baud 921600] [--mb 1.0] [--pty]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from pytest_stedge.board.client import BoardClient
from pytest_stedge.board.errors import BoardTimeoutError
from pytest_stedge.board.messages import Timeouts


def chain_model(path: Path, megabytes: float, width: int = 16384) -> tuple[Path, int]:
    """Tile a small input to ``width`` floats, then elementwise nodes: ~``megabytes`` of
    intermediate tensors. Returns the path and the tensor bytes a per-layer run sends."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    layers = max(2, round(megabytes * 2**20 / (width * 4)))
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t0"], name="tile")]
    inits = [numpy_helper.from_array(np.array([1, width // 256], np.int64), "reps"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    for i in range(1, layers):
        op = ("Relu", "Mul", "Sigmoid")[i % 3]
        ins = [f"t{i - 1}", "half"] if op == "Mul" else [f"t{i - 1}"]
        nodes.append(helper.make_node(op, ins, [f"t{i}"], name=f"{op.lower()}_{i}"))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info(f"t{layers - 1}", TensorProto.FLOAT, [1, width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path, layers * width * 4


def start_sim(model: Path, baud: int, pty: bool, *extra: str) -> tuple[subprocess.Popen[str], str]:
    where = ["--pty"] if pty else ["--socket", "127.0.0.1:0"]
    proc = subprocess.Popen([sys.executable, "-m", "pytest_stedge.board.sim", str(model),
                             *where, "--baud", str(baud), *extra],
                            stdout=subprocess.PIPE, text=True, cwd=PROJECT)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    return proc, (f"serial:{url}:{baud}" if pty else url)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.communicate(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baud", type=int, default=921600)
    ap.add_argument("--mb", type=float, default=1.0, help="size of the per-layer dump")
    ap.add_argument("--pty", action="store_true", help="pseudo-terminal instead of TCP")
    args = ap.parse_args()
    line_rate = args.baud / 10
    with tempfile.TemporaryDirectory() as tmp:
        model, payload = chain_model(Path(tmp) / "chain.onnx", args.mb)
        proc, url = start_sim(model, args.baud, args.pty)
        try:
            with BoardClient(url) as board:
                board.network_info()
                x = np.random.default_rng(0).random((1, 256), dtype=np.float32)
                before = board.bytes_received
                wall0, cpu0 = time.perf_counter(), time.process_time()
                out = board.run([x], mode="per-layer-data")
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                received = board.bytes_received - before
        finally:
            stop(proc)
        tensors = sum(v.nbytes for n in out.nodes for v in n.tensors.values())
        print(f"link: {'pty' if args.pty else 'tcp'} at {args.baud} baud = "
              f"{line_rate / 1000:.1f} kB/s line rate")
        print(f"per-layer dump: {len(out.nodes)} nodes, {tensors / 2**20:.2f} MiB of tensors "
              f"(planned {payload / 2**20:.2f} MiB), {received / 1e6:.3f} MB on the wire")
        print(f"run wall time: {wall:.2f} s (line-rate minimum {received / line_rate:.2f} s)")
        print(f"throughput: {received / wall / 1000:.1f} kB/s = "
              f"{100 * received / wall / line_rate:.1f}% of line rate (target >= 90%); "
              f"tensor payload {tensors / wall / 1000:.1f} kB/s")
        print(f"client CPU during transfer: {cpu:.3f} s / {wall:.2f} s = "
              f"{100 * cpu / wall:.1f}% of one core (target < 20%)")

        proc, url = start_sim(model, args.baud, args.pty, "--hang-at-node", "0")
        try:
            with BoardClient(url, timeouts=Timeouts(op=3.0)) as board:
                wall0, cpu0 = time.perf_counter(), time.process_time()
                try:
                    board.run([x], mode="per-layer")
                except BoardTimeoutError:
                    pass
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        finally:
            stop(proc)
        print(f"client CPU waiting for a silent board: {cpu:.3f} s / {wall:.2f} s = "
              f"{100 * cpu / wall:.1f}% of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())

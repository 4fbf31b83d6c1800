"""Hostile boards against the client's deadlines and caps (issue 16's figures).

Each scenario runs one client call against a loopback board that misbehaves (the test
suite's ``tests/hostile_board.py``) and prints the call's deadline, how long it took, its
peak traced memory (tracemalloc, in a second run of the scenario) and how it ended. Targets: every call ends within its
deadline + 1 s, memory under the cap :class:`Limits` documents.

    python benchmarks/bench_board_hostile.py
"""

from __future__ import annotations

import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(PROJECT), str(PROJECT / "tests")]

import hostile_board as hb

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt
from pytest_stedge.board.client import BoardClient
from pytest_stedge.board.messages import Limits, Timeouts

# ST's limits, except 5 s for each op and for per-layer node reports in all, so the run
# scenarios end in half a minute
TIMEOUTS = Timeouts(op=5.0, per_layer=5.0)
X = np.zeros((1, 4), np.float32)


def _op(i: int, flags: int = bp.OP_WITHOUT_TENSOR) -> dict[str, Any]:
    return {"state": bp.S_PROCESSING, "op": {"name": f"n{i}", "type": flags << 24 | 1,
                                             "id": i, "duration": 0.1}}


def scenarios() -> list[tuple[str, Callable[[hb.Conn], None], str]]:
    full = bp.header(32, False, 2) + bytes(32)
    huge = bt.tensor_desc_msg("x", np.dtype(np.float32), (65536, 65536, 65536, 3), 1)
    big = bytes(1 << 20)
    desc = bt.tensor_desc_msg("t", np.dtype(np.int8), (len(big),),
                              bp.TENSOR_INTERNAL | bp.TENSOR_LAST)
    tensor = {"desc": desc, "data": {"type": 0, "size": len(big), "addr": 0, "datas": big}}
    sinfo = {"devid": 0x486, "sclock": 1, "hclock": 1, "cache": 0, "com_param": 2**31}
    return [
        ("ASCII logs at line rate (92 kB/s)", hb.text_stream(), "connect"),
        ("sync answer dribbled, 1 byte / 0.25 s", hb.dribble(
            bp.CMD_SYNC, 0.25, {"state": 0, "sync": {"version": 0x0302}}), "connect"),
        ("network info dribbled, 1 byte / 0.25 s", hb.dribble(
            bp.CMD_NETWORK_INFO, 0.25, {"state": 0, "minfo": hb.minfo()}), "network_info"),
        ("protocol log lines instead of the sync", hb.answers(bp.CMD_SYNC, lambda i: {
            "state": 1, "log": {"level": 1, "str": f"busy {i}"}}), "connect"),
        ("com_param = 2**31", hb.answers(bp.CMD_SYS_INFO, lambda i: {
            "state": 0, "sinfo": sinfo}), "system_info"),
        ("input of 65536x65536x65536x3 floats", hb.answers(bp.CMD_NETWORK_INFO, lambda i: {
            "state": 0, "minfo": hb.minfo([huge])}), "network_info"),
        ("packets without end of message", hb.after(bp.CMD_SYNC, hb.endless(full * 256)),
         "connect"),
        ("garbage bytes for ever", hb.after(bp.CMD_SYNC, hb.endless(b"\xff\x13garbage" * 64),
                                            interval=0.001), "connect"),
        ("node reports for ever, at full speed", hb.answers(bp.CMD_NETWORK_RUN, _op), "run"),
        ("node reports every 0.4 s for ever", hb.answers(bp.CMD_NETWORK_RUN, _op, 0.4), "run"),
        ("1 MiB tensors for ever", hb.answers(
            bp.CMD_NETWORK_RUN, lambda i: _op(i, bp.OP_INTERNAL) if i % 2 == 0 else {
                "state": bp.S_PROCESSING, "tensor": tensor}), "run-data"),
    ]


def measure(script: Callable[[hb.Conn], None], call: str,
            traced: bool) -> tuple[float, float, int, str]:
    with hb.HostileBoard(script) as board:
        client = BoardClient(board.url, timeouts=TIMEOUTS)
        mode = {"run": "per-layer", "run-data": "per-layer-data"}.get(call, "io")
        if call != "connect":
            client.connect()
        if call.startswith("run"):
            info = client.network_info()
            deadline = client.deadline("run", info, mode)
            action: Callable[[], Any] = lambda: client.run([X], mode=mode)
        elif call == "connect":
            deadline, action = client.deadline("connect"), client.connect
        else:
            deadline, action = client.deadline(call), getattr(client, call)
        box: dict[str, Any] = {}

        def work() -> None:
            start = time.monotonic()
            try:
                action()
                box["end"] = "returned"
            except Exception as exc:  # noqa: BLE001 - reported
                box["end"] = f"{type(exc).__name__}"
            box["elapsed"] = time.monotonic() - start

        if traced:
            tracemalloc.start()
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(deadline + 30)
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        if traced:
            tracemalloc.stop()
        client.close()
    if worker.is_alive():
        return deadline, float("inf"), peak, "STILL RUNNING"
    return deadline, box["elapsed"], peak, box["end"]


def main() -> int:
    limits = Limits()
    cap = limits.run_bytes + 2 * limits.message_bytes
    print(f"timeouts: {TIMEOUTS}\nmemory cap (Limits): run_bytes + 2 x message_bytes = "
          f"{cap / 2**20:.0f} MiB + logs and node records")
    print(f"{'scenario':<42} {'deadline':>9} {'took':>7} {'peak':>9}  ended")
    worst = 0.0
    for name, script, call in scenarios():
        # time without tracing (tracemalloc slows allocation several times), then memory
        deadline, took, _, end = measure(script, call, traced=False)
        _, _, peak, _ = measure(script, call, traced=True)
        worst = max(worst, took - deadline)
        print(f"{name:<42} {deadline:>8.2f}s {took:>6.2f}s {peak / 2**20:>7.2f}MiB  {end}")
    print(f"worst overrun of a deadline: {worst:+.2f} s (target <= +1 s)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())

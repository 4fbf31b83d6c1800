"""The simulated firmware's protocol engine: one host connection, faults to inject."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt

if TYPE_CHECKING:
    from .model import SimModel


class ByteLink(Protocol):
    """What the engine needs from a transport: blocking exact reads, throttled writes."""

    def read(self, n: int) -> bytes: ...

    def write(self, data: bytes) -> None: ...


@dataclass
class Faults:
    """Faults to inject. Nodes are given by ONNX node name or by position (0-based).

    :param version: msg version word answered to SYNC (e.g. ``0x0401``).
    :param mute: never answer anything (a board running other firmware).
    :param garbage_on_sync: answer SYNC with these raw bytes instead of a packet.
    :param wrong_from_node: from this node on, tensors and outputs hold wrong values.
    :param hang_at_node: after this node's report, go silent (``"outputs"``: before outputs).
    :param disconnect_at_node: send half of this node's report, then drop the link.
    :param garbage_at_node: send non-protocol bytes in place of this node's report.
    :param log_flood_at: in place of this answer, log lines for ever, each awaiting the
        host's ack (a firmware stuck printing): a node, ``"sync"`` or ``"info"``.
    :param dribble: seconds between the bytes of every answer (a failing link).
    """

    version: int | None = None
    mute: bool = False
    garbage_on_sync: bytes | None = None
    wrong_from_node: str | int | None = None
    hang_at_node: str | int | None = None
    disconnect_at_node: str | int | None = None
    garbage_at_node: str | int | None = None
    log_flood_at: str | int | None = None
    dribble: float = 0.0


class SimulatedBoard(Protocol):
    """What a session reads from the board it plays (the simulator implements it)."""

    model: SimModel
    name: str
    header_bytes: int
    faults: Faults
    version: int
    com_param: int
    signature: str


class LinkClosed(Exception):
    """The host side went away, or the simulator is stopping."""


class Session:
    """Protocol state of one host connection (packet size, current request id)."""

    def __init__(self, sim: SimulatedBoard, stream: ByteLink) -> None:
        self.sim, self.io = sim, stream
        self.hb = sim.header_bytes
        self.payload = bp.DEFAULT_PAYLOAD
        self.reqid = 0
        self.per_layer = False
        self.schema = bp.resp_schema(self.hb)

    def receive(self) -> bytes:
        """One host message body: packets, one sync byte after each non-final packet."""
        size = self.hb + self.payload
        while True:
            pkt = self.io.read(size)
            _, n = bp.parse_header(pkt, self.hb)
            if 0 < n <= self.payload:
                break  # anything else is line noise: wait for a real packet
        data = bytearray(pkt[self.hb:self.hb + n])
        length, start = bp.read_varint(bytes(data[:10]), 0)
        while len(data) < start + length:
            self.io.write(bytes((bp.SYNC_BYTE,)))
            pkt = self.io.read(size)
            _, n = bp.parse_header(pkt, self.hb)
            data += pkt[self.hb:self.hb + min(n, self.payload)]
        return bytes(data[start:start + length])

    def send(self, state: int, **payload: Any) -> None:
        msg = bp.encode(self.schema, {"reqid": self.reqid, "state": state, **payload})
        self.write(bp.target_packets(msg, self.payload, self.hb))

    def write(self, data: bytes) -> None:
        """Send bytes, one at a time ``faults.dribble`` s apart when that fault is set."""
        delay = self.sim.faults.dribble
        if not delay:
            self.io.write(data)
            return
        for i in range(len(data)):
            time.sleep(delay)
            self.io.write(data[i:i + 1])

    def log_flood(self) -> None:
        """Log lines until the host stops acknowledging them (the link then closes)."""
        for i in itertools.count():
            self.log(f"app: still busy, retry {i}")

    def error(self, param: int, error: int) -> None:
        self.send(bp.S_ERROR, ack={"param": param, "error": error})

    def log(self, text: str) -> None:
        self.send(bp.S_WAITING, log={"level": 1, "str": text})
        bp.decode(bp.ACK, self.receive())

    def handle(self, body: bytes) -> None:
        sim, faults = self.sim, self.sim.faults
        req = bp.decode(bp.REQ, body)
        self.reqid = req["reqid"]
        if faults.mute:
            return
        cmd = req["cmd"]
        if {cmd: "sync", bp.CMD_NETWORK_INFO: "info"}.get(cmd, "") == faults.log_flood_at:
            return self.log_flood()
        if cmd == bp.CMD_SYNC:
            self.payload = bp.DEFAULT_PAYLOAD
            if faults.garbage_on_sync is not None:
                self.io.write(faults.garbage_on_sync)
                return
            self.send(bp.S_IDLE, sync={"version": faults.version or sim.version,
                                       "capability": bp.CAP_OBSERVER, "rtid": 0x10004})
        elif cmd == bp.CMD_SYS_INFO:
            info: dict[str, Any] = {"devid": 0x486, "sclock": 800_000_000,
                                    "hclock": 400_000_000, "cache": 0x05010C00,
                                    "extra": [0, 1_000_000_000, 900_000_000, 0]}
            if self.hb == 2:
                info["com_param"] = sim.com_param
            self.send(bp.S_IDLE, sinfo=info)
            if self.hb == 2 and sim.com_param:
                self.payload = sim.com_param  # switch right after the reply
        elif cmd == bp.CMD_DISCONNECT and sim.version >= 0x0302:
            self.payload = bp.DEFAULT_PAYLOAD
        elif cmd == bp.CMD_NETWORK_INFO:
            if (req["name"] and req["name"] != sim.name) or (not req["name"] and req["param"]):
                return self.error(4, bp.E_INVALID_PARAM)
            self.log("s:config:version:1.0")
            self.send(bp.S_IDLE, minfo=sim.model.info_msg(sim.name, sim.signature))
        elif cmd == bp.CMD_NETWORK_RUN:
            if req["name"] != sim.name:
                return self.error(4, bp.E_INVALID_PARAM)
            self.run(req["param"])
        else:
            self.error(4, bp.E_INVALID_PARAM)

    def run(self, param: int) -> None:
        model, faults = self.sim.model, self.sim.faults
        const = bool(param & bp.RUN_CONST_VALUE)
        self.send(bp.S_WAITING, ack={"param": model.inputs[0].nbytes, "error": 0})
        feeds = {}
        for i, desc in enumerate(model.inputs):
            data = bp.decode(bp.DATA, self.receive())["datas"]
            arr = np.frombuffer(data, dtype=desc.dtype.newbyteorder("<"))
            if const and arr.size == 1:
                arr = np.full(desc.shape, arr[0], dtype=desc.dtype)
            elif len(data) != desc.nbytes:
                return self.error(len(data), bp.E_INVALID_SIZE)
            feeds[desc.name] = arr.astype(desc.dtype).reshape(desc.shape)
            last = i == len(model.inputs) - 1
            self.send(bp.S_PROCESSING if last else bp.S_WAITING,
                      ack={"param": len(data), "error": 0})
            bp.decode(bp.ACK, self.receive())
        try:
            values = model.infer(feeds)
        except Exception:  # noqa: BLE001 - onnxruntime failures: the firmware's E_GENERIC
            return self.error(10, bp.E_GENERIC)
        bad_from = model.node_index(faults.wrong_from_node)
        per_layer = self.per_layer = bool(param & bp.RUN_PER_LAYER)
        with_data = bool(param & bp.RUN_PER_LAYER_WITH_DATA)
        total = 0.0
        for idx, node in enumerate(model.nodes):
            total += node.duration_ms
            if not per_layer:
                continue
            op = model.op_msg(idx)
            if self._fault_here(idx, op):
                return
            self.send(bp.S_PROCESSING, op=op)
            for k, tname in enumerate(node.tensors):
                arr = model.maybe_corrupt(values[tname], bad_from is not None and idx >= bad_from)
                flags = bp.TENSOR_INTERNAL | (bp.TENSOR_LAST if k == len(node.tensors) - 1 else 0)
                self.send_tensor(tname, arr, flags, with_data)
        if self._fault_here(model.node_index("outputs"), None):
            return
        self.send(bp.S_PROCESSING, op=model.model_op_msg(self.sim.name, total))
        for j, desc in enumerate(model.outputs):
            last = j == len(model.outputs) - 1
            arr = model.maybe_corrupt(values[desc.name], bad_from is not None)
            flags = bp.TENSOR_OUTPUT | (bp.TENSOR_LAST if last else 0)
            self.send_tensor(desc.name, arr, flags, not param & bp.RUN_PERF,
                             bp.S_DONE if last else bp.S_PROCESSING)

    def send_tensor(self, name: str, arr: np.ndarray, flags: int, with_data: bool,
                    state: int = bp.S_PROCESSING) -> None:
        datas = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        if not with_data:
            flags, datas = flags | bp.TENSOR_NO_DATA, b""
        desc = bt.tensor_desc_msg(name, arr.dtype, arr.shape, flags)
        self.send(state, tensor={"desc": desc, "data": {"type": 0, "size": len(datas),
                                                        "addr": 0, "datas": datas}})

    def _fault_here(self, idx: int | None, op: dict[str, Any] | None) -> bool:
        """Apply a hang/disconnect/garbage fault planned at this point; True if applied."""
        model, faults = self.sim.model, self.sim.faults

        def at(ref: str | int | None) -> int | None:  # IO mode: node faults hit the outputs
            if ref is not None and not self.per_layer:
                return len(model.nodes)
            return model.node_index(ref)

        if idx is None or all(f is None for f in (faults.hang_at_node, faults.disconnect_at_node,
                                                  faults.garbage_at_node, faults.log_flood_at)):
            return False
        if faults.log_flood_at not in ("sync", "info") and at(faults.log_flood_at) == idx:
            self.log_flood()
        msg = bp.encode(self.schema, {"reqid": self.reqid, "state": bp.S_PROCESSING,
                                      "op": op or model.model_op_msg(self.sim.name, 0.0)})
        packets = bp.target_packets(msg, self.payload, self.hb)
        if at(faults.hang_at_node) == idx:
            if op is not None:
                self.io.write(packets)
            while True:  # stay silent, but keep the link open
                self.io.read(1 << 30)
        if at(faults.disconnect_at_node) == idx:
            self.io.write(packets[:len(packets) // 2])
            raise LinkClosed()
        if at(faults.garbage_at_node) == idx:
            # A crash dump printed on the protocol UART; its first byte reads as an EOM
            # header announcing more bytes than a packet holds.
            text = b"\xff\xffHardFault_Handler: stack overflow\r\n"
            size = self.hb + self.payload
            self.io.write(text.ljust(-(-len(text) // size) * size, b"\x00"))
            return True
        return False

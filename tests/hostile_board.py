"""A hostile board on 127.0.0.1: a TCP server that speaks just enough of the validation
protocol (2-byte headers, 32-byte packets) to lead the client somewhere bad.

Each connection runs a script ``script(conn)``; :class:`Conn` reads host messages (sending
one sync byte per consumed packet, as the firmware does) and writes answers or raw bytes.
Behaviours used by the deadline tests are the functions at the end of this module.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Self

import numpy as np

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt

HB, P = 2, bp.DEFAULT_PAYLOAD


class Gone(Exception):
    """The client closed the link."""


class Conn:
    """One client connection, seen from the board."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock, self.stop = sock, stop
        self.reqid = 0
        self._buf = bytearray()

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            if self.stop.is_set():
                raise Gone()
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                raise Gone() from exc
            if not chunk:
                raise Gone()
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def message(self) -> bytes:
        """One host message body (varint-delimited across packets)."""
        pkt = self._read(HB + P)
        _, n = bp.parse_header(pkt, HB)
        data = bytearray(pkt[HB:HB + n])
        length, start = bp.read_varint(bytes(data[:10]), 0)
        while len(data) < start + length:
            self.raw(bytes((bp.SYNC_BYTE,)))
            pkt = self._read(HB + P)
            _, n = bp.parse_header(pkt, HB)
            data += pkt[HB:HB + n]
        return bytes(data[start:start + length])

    def request(self) -> dict[str, Any]:
        req = bp.decode(bp.REQ, self.message())
        self.reqid = req["reqid"]
        return req

    def answer(self, state: int, **payload: Any) -> None:
        msg = bp.encode(bp.resp_schema(HB), {"reqid": self.reqid, "state": state, **payload})
        self.raw(bp.target_packets(msg, P, HB))

    def raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a slow reader makes a send wait: keep going until it leaves
            if self.stop.is_set():
                raise Gone()
            try:
                view = view[self.sock.send(view):]
            except TimeoutError:
                continue
            except OSError as exc:
                raise Gone() from exc

    def drain_forever(self) -> None:
        """Read and drop whatever the host sends until it leaves."""
        while True:
            self._read(len(self._buf) + 1)
            self._buf.clear()


class HostileBoard:
    """Serve ``script`` to each connection, on a loopback port, in a thread per client."""

    def __init__(self, script: Callable[[Conn], None]) -> None:
        self.script = script
        self.stop = threading.Event()
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.srv.settimeout(0.1)
        self.url = f"socket://127.0.0.1:{self.srv.getsockname()[1]}"
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(1.0)  # reads poll `stop`; sends to a slow reader wait
            th = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            th.start()
            self.threads.append(th)

    def _serve(self, sock: socket.socket) -> None:
        try:
            self.script(Conn(sock, self.stop))
        except Gone:
            pass
        finally:
            sock.close()

    def close(self) -> None:
        self.stop.set()
        self.srv.close()
        for th in self.threads:
            th.join(timeout=3)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- honest answers ------------------------------------------------------------------------
SYNC = {"version": 0x0302, "capability": bp.CAP_OBSERVER, "rtid": 0x10004}
SINFO = {"devid": 0x486, "sclock": 800_000_000, "hclock": 400_000_000, "cache": 0,
         "com_param": 0, "extra": []}
SHAPE = (1, 4)


def minfo(inputs: list[dict[str, Any]] | None = None, n_nodes: int = 1) -> dict[str, Any]:
    """A network ``net`` of ``n_nodes`` nodes with one float32 [1, 4] input and output
    (unless ``inputs``)."""
    io = bt.tensor_desc_msg("x", np.dtype(np.float32), SHAPE, bp.TENSOR_INPUT)
    out = bt.tensor_desc_msg("y", np.dtype(np.float32), SHAPE, bp.TENSOR_OUTPUT | bp.TENSOR_LAST)
    return {"name": "net", "rtid": 4, "signature": "", "compile_datetime": "",
            "runtime_version": 0, "tool_version": 0, "n_macc": 0, "n_nodes": n_nodes,
            "n_inputs": 1, "inputs": inputs if inputs is not None else [io],
            "n_outputs": 1, "outputs": [out], "n_activations": 0, "activations": [],
            "n_params": 0, "params": [], "runtime_desc": "hostile"}


def honest_until(conn: Conn, last: int, n_nodes: int = 1) -> dict[str, Any]:
    """Answer requests honestly until one with command ``last`` arrives; return it
    (a run's inputs are taken and acknowledged first). The network has ``n_nodes``."""
    while True:
        req = conn.request()
        cmd = req["cmd"]
        if cmd == last:
            if cmd == bp.CMD_NETWORK_RUN:
                conn.answer(bp.S_WAITING, ack={"param": 16, "error": 0})
                size = len(bp.decode(bp.DATA, conn.message())["datas"])
                conn.answer(bp.S_PROCESSING, ack={"param": size, "error": 0})
                conn.message()  # the host's ack
            return req
        if cmd == bp.CMD_SYNC:
            conn.answer(bp.S_IDLE, sync=SYNC)
        elif cmd == bp.CMD_SYS_INFO:
            conn.answer(bp.S_IDLE, sinfo=SINFO)
        elif cmd == bp.CMD_NETWORK_INFO:
            conn.answer(bp.S_IDLE, minfo=minfo(n_nodes=n_nodes))


def endless(chunk: bytes) -> Iterator[bytes]:
    while True:
        yield chunk


# --- behaviours ----------------------------------------------------------------------------
def text_stream(rate: float = 92_160.0) -> Callable[[Conn], None]:
    """A firmware printing ASCII logs on the protocol UART, at ``rate`` bytes/s, for ever."""
    line = b"[app] sensor 17: value 0.4213, all good\r\n"

    def script(conn: Conn) -> None:
        threading.Thread(target=_drop, args=(conn,), daemon=True).start()
        while True:
            conn.raw(line)
            time.sleep(len(line) / rate)
    return script


def dribble(answer_at: int, interval: float, payload: dict[str, Any]) -> Callable[[Conn], None]:
    """Honest until command ``answer_at``, whose answer then comes one byte per ``interval`` s."""
    def script(conn: Conn) -> None:
        honest_until(conn, answer_at)
        msg = bp.encode(bp.resp_schema(HB), {"reqid": conn.reqid, **payload})
        for byte in bp.target_packets(msg, P, HB):
            time.sleep(interval)
            conn.raw(bytes((byte,)))
        conn.drain_forever()
    return script


def after(answer_at: int, data: Iterator[bytes] | bytes,
          interval: float = 0.0) -> Callable[[Conn], None]:
    """Honest until command ``answer_at``, then ``data`` (raw bytes, or chunks for ever)."""
    def script(conn: Conn) -> None:
        honest_until(conn, answer_at)
        threading.Thread(target=_drop, args=(conn,), daemon=True).start()
        for chunk in [data] if isinstance(data, bytes) else data:
            conn.raw(chunk)
            if interval:
                time.sleep(interval)
        while not conn.stop.is_set():
            time.sleep(0.05)
    return script


def answers(answer_at: int, make: Callable[[int], dict[str, Any]],
            interval: float = 0.0, n_nodes: int = 1) -> Callable[[Conn], None]:
    """Honest until command ``answer_at`` (about a network of ``n_nodes``), then protocol
    messages ``make(i)`` for ever."""
    def chunks(conn: Conn) -> Iterator[bytes]:
        for i in range(1 << 62):
            msg = bp.encode(bp.resp_schema(HB), {"reqid": conn.reqid, **make(i)})
            yield bp.target_packets(msg, P, HB)

    def script(conn: Conn) -> None:
        honest_until(conn, answer_at, n_nodes)
        threading.Thread(target=_drop, args=(conn,), daemon=True).start()
        for chunk in chunks(conn):
            conn.raw(chunk)
            if interval:
                time.sleep(interval)
    return script


def _drop(conn: Conn) -> None:
    try:
        conn.drain_forever()
    except Gone:
        pass

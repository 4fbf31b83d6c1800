"""The native client of the board's validation protocol (exposed as ``board.BoardClient``)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from pytest_stedge.errors import BoardError

from . import protocol as bp
from . import tensors as bt
from .errors import (
    FLASH_HINT,
    BoardCommunicationError,
    BoardDisconnectedError,
    BoardNetworkMismatchError,
    BoardNotValidationFirmwareError,
    BoardProtocolError,
    BoardProtocolVersionError,
    BoardRequestError,
    BoardTimeoutError,
)
from .messages import (
    MODES,
    NetworkInfo,
    NodeResult,
    RunOutput,
    SyncInfo,
    SystemInfo,
    Timeouts,
    input_bytes,
)
from .specs import BoardSpec, open_port, parse_board_spec, resolve_board_spec

_READ_POLL = 0.1  # pyserial read timeout: the longest we block before re-checking a limit


def _ms(value: float) -> float:
    """A float32 duration without its binary noise (0.01016 rather than 0.010160000063)."""
    return float(f"{value:.7g}")


class BoardClient:
    """Drive one board's validation firmware: sync, info, and one inference at a time.

    :param spec: a :class:`BoardSpec` or its text (``serial:/dev/ttyACM0:921600``, ``auto``,
        ``socket://127.0.0.1:5555``).
    :param header_bytes: packet header width of the firmware: 2 for ST Edge AI Core >= 2.2
        (msg 3.1 "2.2 variant" and 3.2), 1 for <= 2.1. The protocol cannot tell them apart.
    :param timeouts: silence limits per phase.
    :param on_log: called with each log line the firmware sends.
    """

    def __init__(self, spec: BoardSpec | str, *, header_bytes: int = 2,
                 timeouts: Timeouts | None = None,
                 on_log: Callable[[str], None] | None = None) -> None:
        if header_bytes not in (1, 2):
            raise BoardError(f"header_bytes={header_bytes}: accepted 1 (ST Edge AI Core <= 2.1)"
                             " or 2 (>= 2.2)")
        self.spec = parse_board_spec(spec) if isinstance(spec, str) else spec
        self.header_bytes = header_bytes
        self.timeouts = timeouts or Timeouts()
        self.on_log = on_log
        self.port_reason = ""
        self._ser: Any = None
        self._buf = bytearray()
        self._payload = bp.DEFAULT_PAYLOAD
        self._reqids = itertools.count(1)
        self._reqid = 0
        self._schema = bp.resp_schema(header_bytes)
        self._sync: SyncInfo | None = None
        self._networks: dict[int, NetworkInfo] = {}
        self._logs: list[str] = []
        self.bytes_received = 0

    # --- connection ----------------------------------------------------------------
    @property
    def where(self) -> str:
        """``PORT:BAUD`` or the socket URL, for messages."""
        if self.spec.kind == "socket":
            return str(self.spec.port)
        return f"{self.spec.port or 'auto'}:{self.spec.baud}"

    @property
    def connected(self) -> bool:
        """Whether the port is open (a failed run closes it)."""
        return self._ser is not None

    def connect(self) -> SyncInfo:
        """Open the port, swallow any boot banner, and sync; returns the sync answer."""
        if self._ser is not None:
            return self.sync()
        if self.spec.port is None:
            self.spec, self.port_reason = resolve_board_spec(self.spec)
        self._ser = open_port(self.spec, read_timeout=_READ_POLL,
                              write_timeout=self.timeouts.packet_sync)
        try:
            self._drain()
            return self.sync()
        except BoardError:
            self.close()
            raise

    def _drain(self) -> None:
        """Discard the boot banner and stale bytes until the line is quiet for one poll
        (at most 2 s: a port that never stops talking then fails the sync instead)."""
        try:
            self._ser.reset_input_buffer()
            end = time.monotonic() + 2.0
            while self._ser.read(4096) and time.monotonic() < end:
                pass
        except Exception as exc:  # noqa: BLE001 - pyserial raises many kinds here
            raise self._lost(exc) from exc
        self._buf.clear()

    def close(self) -> None:
        """Close the port (idempotent). A v3.2 board is told to drop back to 32-byte packets."""
        if self._ser is None:
            return
        ser, self._ser = self._ser, None
        try:
            self._disconnect_message(ser)
        except Exception:  # noqa: BLE001 - best effort while closing
            pass
        finally:
            ser.close()

    def _disconnect_message(self, ser: Any = None) -> None:
        """v3.2 boards at a large packet size: CMD_DISCONNECT resets them to 32 (no answer)."""
        ser = ser or self._ser
        if self._sync and self._sync.version_word >= 0x0302 and self._payload != 32:
            self._reqid = next(self._reqids)
            ser.write(bp.host_packets(bp.request(self._reqid, bp.CMD_DISCONNECT),
                                      self._payload, self.header_bytes)[0])
            ser.flush()
            self._payload = bp.DEFAULT_PAYLOAD

    def __enter__(self) -> BoardClient:
        self.connect()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- commands ------------------------------------------------------------------
    def sync(self) -> SyncInfo:
        """CMD_SYNC; checks the protocol version."""
        if self._payload != bp.DEFAULT_PAYLOAD:
            # A board at a large packet size would wait for a full large packet: v3.2 has
            # DISCONNECT (sent at the current size) to bring it back to 32 first.
            self._disconnect_message()
        self._payload = bp.DEFAULT_PAYLOAD  # both sides fall back to 32 on SYNC
        try:
            msg = self._transact(bp.CMD_SYNC, "sync", (bp.S_IDLE,), self.timeouts.sync)
        except (BoardTimeoutError, BoardProtocolError, BoardRequestError) as exc:
            other = 1 if self.header_bytes == 2 else 2
            raise BoardNotValidationFirmwareError(
                f"{self.where} did not answer the validation protocol's sync ({exc}); it is "
                f"not running the validation firmware, or runs at another baud rate, or uses "
                f"{other}-byte packet headers (header_bytes={other}, ST Edge AI Core "
                f"{'<= 2.1' if other == 1 else '>= 2.2'}). If unsure, {FLASH_HINT}") from exc
        word = msg["version"]
        if not bp.version_known(word):
            raise BoardProtocolVersionError(
                f"{self.where} speaks validation protocol msg v{bp.version_text(word)}; this "
                f"client knows v{bp.VERSION_MAJOR}.0 to v{bp.VERSION_MAJOR}."
                f"{bp.KNOWN_MINOR_MAX}. Flash firmware from a supported ST Edge AI Core "
                "(2.x to 4.x) or update pytest-stedge")
        self._sync = SyncInfo(bp.version_text(word), word, msg["capability"], msg["rtid"])
        return self._sync

    def system_info(self) -> SystemInfo:
        """CMD_SYS_INFO; switches packet size when the firmware asks (USB-CDC builds)."""
        msg = self._transact(bp.CMD_SYS_INFO, "sinfo", (bp.S_IDLE,), self.timeouts.sync)
        com = int(msg.get("com_param", 0))
        if self.header_bytes == 2 and com:
            self._payload = com
        return SystemInfo(msg["devid"], msg["sclock"], msg["hclock"], msg["cache"], com,
                          tuple(msg["extra"]))

    def network_info(self, index: int = 0) -> NetworkInfo:
        """CMD_NETWORK_INFO for the network at ``index``."""
        msg = self._transact(bp.CMD_NETWORK_INFO, "minfo", (bp.S_IDLE,), self.timeouts.info,
                             param=index)
        try:
            info = NetworkInfo.from_msg(msg)
        except bp.WireError as exc:
            raise BoardProtocolError(f"{self.where}: network #{index} descriptor: {exc}") from exc
        self._networks[index] = info
        return info

    def networks(self) -> list[NetworkInfo]:
        """Every network the firmware holds (asks index 0, 1, ... until refused)."""
        found = []
        for index in range(64):
            try:
                found.append(self.network_info(index))
            except BoardRequestError:
                break
        return found

    def check_network(self, *, name: str | None = None, signature: str | None = None,
                      index: int = 0) -> NetworkInfo:
        """Raise :class:`BoardNetworkMismatchError` unless the board holds that network.

        Signatures compare without case and ``0x`` prefix (``c_info.json`` writes
        ``"0x..."``); the board's string is at most 63 characters, so a board signature that
        is a prefix of ``signature`` matches. An empty board signature (N6 firmware) cannot
        be checked; only the name is then compared.
        """
        info = self._networks.get(index) or self.network_info(index)
        problems = []
        if name is not None and info.name != name:
            problems.append(f"network name {info.name!r}, expected {name!r}")
        if signature and info.signature:
            mine, theirs = (s.lower().removeprefix("0x") for s in (info.signature, signature))
            if not theirs.startswith(mine):
                problems.append(f"signature {info.signature!r}, expected {signature!r}")
        if problems:
            raise BoardNetworkMismatchError(
                f"{self.where} holds another network than expected: {'; '.join(problems)} "
                f"(compiled {info.compile_datetime or 'at an unknown date'}); load the case's "
                "network first (the loader step of validate-target does)")
        return info

    # --- inference -----------------------------------------------------------------
    def run(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray], mode: str = "io",
            *, index: int = 0) -> RunOutput:
        """One inference of one sample.

        :param inputs: arrays by input name, or in input order; dtypes must match the
            board's descriptors (quantise int8 inputs first), shapes must have its size.
        :param mode: ``io`` (outputs only), ``per-layer`` (node reports and tensor shapes,
            no data) or ``per-layer-data`` (node tensors too).
        :raises BoardCommunicationError: with ``partial`` = what arrived before the failure;
            the port is closed, so the next user reconnects.
        """
        if mode not in MODES:
            raise BoardError(f"run mode {mode!r}: accepted {', '.join(MODES)}")
        info = self._networks.get(index) or self.network_info(index)
        if mode != "io" and self._sync and not self._sync.capability & bp.CAP_OBSERVER:
            raise BoardError(f"{self.where}: the firmware was built without the observer "
                             f"capability, so mode {mode!r} is not available (use 'io')")
        arrays = input_bytes(info, inputs)
        result = RunOutput()
        try:
            self._run(info, MODES[mode], arrays, result)
        except BoardCommunicationError as exc:
            exc.partial = result
            exc.args = (f"{exc.args[0]}; received so far: {result.summary()}",)
            self.close()
            raise
        result.logs = list(self._logs)
        return result

    def _run(self, info: NetworkInfo, param: int, arrays: list[bytes], out: RunOutput) -> None:
        t = self.timeouts
        self._logs = []
        ack = self._transact(bp.CMD_NETWORK_RUN, "ack", (bp.S_WAITING,), t.run_ack,
                             param=param, name=info.name, opt=1)
        del ack
        for i, data in enumerate(arrays):
            last = i == len(arrays) - 1
            self._send(bp.host_data(data))
            got = self._expect("ack", (bp.S_PROCESSING if last else bp.S_WAITING,), t.input_ack)
            if got["param"] != len(data):
                raise BoardProtocolError(f"input #{i}: board acknowledged {got['param']} bytes "
                                         f"of {len(data)}")
            self._send(bp.host_ack())
        while True:  # node reports until the model-level op (flags NONE)
            op = self._expect("op", (bp.S_PROCESSING,), t.op)
            flags = op["type"] >> 24
            counters = bt.decode_counters(op["counter_type"], op["counters"])
            if flags == 0:
                out.duration_ms, out.counters = _ms(op["duration"]), counters
                break
            node = NodeResult(self._node_name(op, len(out.nodes)), op["type"] & 0xFFFFFF,
                              op["id"], _ms(op["duration"]), counters)
            out.nodes.append(node)
            if flags & bp.OP_WITHOUT_TENSOR:
                continue
            for k in itertools.count():
                msg = self._expect("tensor", (bp.S_PROCESSING,), t.op)
                desc, arr = self._tensor(msg)
                tname = desc.name or f"{node.name}.{k}"
                node.tensors[tname], node.descs[tname] = arr, desc
                if desc.flags & bp.TENSOR_LAST:
                    break
        for j in range(len(info.outputs)):
            last = j == len(info.outputs) - 1
            msg = self._expect("tensor", (bp.S_DONE if last else bp.S_PROCESSING,), t.op)
            desc, arr = self._tensor(msg)
            if bool(desc.flags & bp.TENSOR_LAST) != last:
                raise BoardProtocolError(f"output #{j}: LAST flag {'missing' if last else 'early'}"
                                         f"; the network has {len(info.outputs)} output(s)")
            oname = desc.name or info.outputs[j].name or f"output_{j}"
            out.outputs[oname], out.output_descs[oname] = arr, desc

    def _node_name(self, op: Mapping[str, Any], position: int) -> str:
        if op["name"]:
            return str(op["name"])
        if self._sync and self._sync.rtid & 0xFF == 4:  # N6: id = last_epoch << 16 | epoch
            return f"epoch_{op['id'] & 0xFFFF}"
        return f"node_{op['id'] if op['id'] else position}"

    def _tensor(self, msg: Mapping[str, Any]) -> tuple[bt.TensorDesc, np.ndarray]:
        try:
            desc = bt.TensorDesc.from_msg(msg["desc"])
            return desc, desc.array(msg["data"]["datas"])
        except bp.WireError as exc:
            raise BoardProtocolError(f"{self.where}: {exc}") from exc

    # --- transactions ----------------------------------------------------------------
    def _transact(self, cmd: int, payload: str, states: tuple[int, ...], timeout: float,
                  param: int = 0, name: str = "", opt: int = 0) -> dict[str, Any]:
        if self._ser is None:
            raise BoardError(f"{self.where}: not connected (call connect() or use `with`)")
        self._reqid = next(self._reqids)
        self._send(bp.request(self._reqid, cmd, param, name, opt))
        return self._expect(payload, states, timeout)

    def _expect(self, payload: str, states: tuple[int, ...], timeout: float) -> dict[str, Any]:
        """Receive the next non-log message and check its request id, state and payload."""
        while True:
            msg = self._receive(timeout, payload)
            if msg.get("log") is not None:
                line = str(msg["log"]["str"])
                self._logs.append(line)
                if self.on_log:
                    self.on_log(line)
                self._send(bp.host_ack())
                continue
            break
        if msg["reqid"] != self._reqid:
            raise BoardProtocolError(f"{self.where}: answer to request {msg['reqid']} while "
                                     f"waiting for request {self._reqid} (link out of step)")
        kind = next((k for k in bp.PAYLOADS if msg.get(k) is not None), "nothing")
        if msg["state"] == bp.S_ERROR and kind == "ack":
            err = msg["ack"]
            name = bp.ERROR_NAMES.get(err["error"], err["error"])
            raise BoardRequestError(f"{self.where} refused the request: {name} (param "
                                    f"{err['param']}) while {payload!r} was expected")
        if kind != payload or msg["state"] not in states:
            raise BoardProtocolError(
                f"{self.where}: received {kind!r} in state "
                f"{bp.STATE_NAMES.get(msg['state'], msg['state'])} while {payload!r} in "
                f"{'/'.join(bp.STATE_NAMES[s] for s in states)} was expected")
        return dict(msg[payload])

    def _receive(self, timeout: float, what: str) -> dict[str, Any]:
        hb, parts = self.header_bytes, []
        while True:
            size = hb + self._payload
            pkt = self._read(size, timeout, what)
            eom, n = bp.parse_header(pkt, hb)
            if not eom:
                parts.append(pkt[hb:])
                continue
            if n > self._payload:
                raise BoardProtocolError(
                    f"{self.where}: packet header 0x{pkt[:hb].hex()} announces {n} bytes in a "
                    f"{self._payload}-byte packet (garbage on the line, or "
                    f"{'2' if hb == 1 else '1'}-byte-header firmware)")
            parts.append(pkt[hb:hb + n])
            break
        body = b"".join(parts)
        try:
            return bp.decode(self._schema, body)
        except bp.WireError as exc:
            raise BoardProtocolError(f"{self.where}: undecodable message of {len(body)} bytes "
                                     f"while waiting for {what!r}: {exc}") from exc

    def _read(self, n: int, timeout: float, what: str) -> bytes:
        """Exactly ``n`` bytes; fails after ``timeout`` s without any byte arriving."""
        buf, ser = self._buf, self._ser
        deadline = time.monotonic() + timeout
        while len(buf) < n:
            try:
                chunk = ser.read(max(n - len(buf), ser.in_waiting))
            except Exception as exc:  # noqa: BLE001 - SerialException, OSError, socket errors
                raise self._lost(exc) from exc
            if chunk:
                buf += chunk
                self.bytes_received += len(chunk)
                deadline = time.monotonic() + timeout
            elif time.monotonic() >= deadline:
                got = f" ({len(buf)} byte(s) of a packet received)" if buf else ""
                raise BoardTimeoutError(f"{self.where}: no answer for {timeout:g} s while "
                                        f"waiting for {what!r}{got}")
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def _send(self, message: bytes) -> None:
        packets = bp.host_packets(message, self._payload, self.header_bytes)
        try:
            for i, pkt in enumerate(packets):
                if i:  # flow control: one byte from the board before each later packet
                    self._read(1, self.timeouts.packet_sync, "packet sync byte")
                self._ser.write(pkt)
        except BoardCommunicationError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._lost(exc) from exc

    def _lost(self, exc: BaseException) -> BoardDisconnectedError:
        return BoardDisconnectedError(f"{self.where}: link lost ({exc}); check the cable and "
                                      "that the board did not reset")

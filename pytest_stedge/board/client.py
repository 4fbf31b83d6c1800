"""The native client of the board's validation protocol (exposed as ``board.BoardClient``)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any, Self

import numpy as np

from pytest_stedge.errors import BoardError

from . import protocol as bp
from . import tensors as bt
from .answers import checked_answer, duration_ms, node_name
from .budgets import node_report_cap, run_budget, too_many_reports
from .errors import (
    FLASH_HINT,
    BoardCommunicationError,
    BoardNetworkMismatchError,
    BoardNotValidationFirmwareError,
    BoardProtocolError,
    BoardProtocolVersionError,
    BoardRequestError,
    BoardTimeoutError,
)
from .link import Link, Wait, preview
from .messages import (
    MODES,
    Limits,
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
_DRAIN_S = 2.0  # the longest a boot banner is swallowed before the sync


class BoardClient:
    """Drive one board's validation firmware: sync, info, and one inference at a time.

    :param spec: a :class:`BoardSpec` or its text (``serial:/dev/ttyACM0:921600``, ``auto``,
        ``socket://127.0.0.1:5555``).
    :param header_bytes: packet header width of the firmware: 2 for ST Edge AI Core >= 2.2
        (msg 3.1 "2.2 variant" and 3.2), 1 for <= 2.1. The protocol cannot tell them apart.
    :param timeouts: time limits per phase, and of per-layer runs (:class:`Timeouts`).
    :param limits: the most the client accepts of what the board announces or sends
        (:class:`Limits`).
    :param on_log: called with each log line the firmware sends.

    Every operation ends, returning or raising a :class:`BoardError`, within
    :meth:`deadline` seconds, whatever the board sends.
    """

    def __init__(self, spec: BoardSpec | str, *, header_bytes: int = 2,
                 timeouts: Timeouts | None = None, limits: Limits | None = None,
                 on_log: Callable[[str], None] | None = None) -> None:
        if header_bytes not in (1, 2):
            raise BoardError(f"header_bytes={header_bytes}: accepted 1 (ST Edge AI Core <= 2.1)"
                             " or 2 (>= 2.2)")
        self.spec = parse_board_spec(spec) if isinstance(spec, str) else spec
        self.header_bytes = header_bytes
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self.on_log = on_log
        self.port_reason = ""
        self._link: Link | None = None
        self._payload = bp.DEFAULT_PAYLOAD
        self._reqids = itertools.count(1)
        self._reqid = 0
        self._schema = bp.resp_schema(header_bytes)
        self._sync: SyncInfo | None = None
        self._networks: dict[int, NetworkInfo] = {}
        self._logs: list[str] = []
        self._logs_dropped = 0
        self._end: float | None = None  # monotonic deadline of the operation under way
        self._byte_budget: int | None = None  # bytes_received at which a run is refused
        self._received_before = 0  # bytes of links closed earlier

    @property
    def bytes_received(self) -> int:
        """Bytes received from the board since this client was made."""
        return self._received_before + (self._link.bytes_received if self._link else 0)

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
        return self._link is not None

    def connect(self) -> SyncInfo:
        """Open the port, swallow any boot banner, and sync; returns the sync answer."""
        if self._link is not None:
            return self.sync()
        if self.spec.port is None:
            self.spec, self.port_reason = resolve_board_spec(self.spec)
        # Writes never block past a poll's worth of the deadline's margin: the host sends
        # one packet per sync byte, which no healthy link's buffers refuse.
        ser = open_port(self.spec, read_timeout=_READ_POLL,
                        write_timeout=min(self.timeouts.packet_sync, 1.0))
        self._link = Link(ser, self.where, self.header_bytes, self._rate())
        try:
            with self._operation(self.deadline("connect")):
                self._drain()
                return self.sync()
        except BoardError:
            self.close()
            raise

    def _rate(self) -> float:
        """Bytes per second the deadlines assume: half the 8N1 line rate of the spec's baud
        (sockets: the default 921,600 baud, as a relay to a UART would run)."""
        return self.spec.baud / 20

    def _drain(self) -> None:
        """Discard the boot banner and stale bytes until the line is quiet for one poll
        (at most 2 s: a port that never stops talking then fails the sync instead)."""
        link = self._need_link()
        try:
            link.ser.reset_input_buffer()
            end = time.monotonic() + _DRAIN_S
            while link.ser.read(4096) and time.monotonic() < end:
                pass
        except Exception as exc:  # pyserial raises many kinds here
            raise link.lost(exc) from exc
        link.clear()

    def close(self) -> None:
        """Close the port (idempotent). A v3.2 board is told to drop back to 32-byte packets."""
        if self._link is None:
            return
        link, self._link = self._link, None
        self._received_before += link.bytes_received
        try:
            with suppress(Exception):  # best effort while closing
                self._disconnect_message(link)
        finally:
            self._payload = bp.DEFAULT_PAYLOAD
            link.ser.close()

    def _disconnect_message(self, link: Link) -> None:
        """v3.2 boards at a large packet size: CMD_DISCONNECT resets them to 32 (no answer)."""
        if self._sync and self._sync.version_word >= 0x0302 and self._payload != 32:
            self._reqid = next(self._reqids)
            link.write_raw(bp.host_packets(bp.request(self._reqid, bp.CMD_DISCONNECT),
                                           self._payload, self.header_bytes)[0])
            self._payload = link.payload = bp.DEFAULT_PAYLOAD

    def _need_link(self) -> Link:
        if self._link is None:
            raise BoardError(f"{self.where}: not connected (call connect() or use `with`)")
        return self._link

    # --- deadlines -------------------------------------------------------------------
    def deadline(self, operation: str, info: NetworkInfo | None = None,
                 mode: str = "io") -> float:
        """The most seconds ``operation`` takes, whatever the board sends (plus a 0.1 s read
        poll, and the 0.3 s pyserial sleeps when a failed call closes a ``socket://`` link).

        ``sync`` and ``system_info``: ``timeouts.sync``; ``network_info``:
        ``timeouts.info``; ``connect``: 2 s of banner draining plus a sync; ``run`` (of the
        network ``info`` in ``mode``): the run ack, each input's packets and ack, the
        inference (``timeouts.op``), the outputs, plus the node reports in per-layer modes
        (:mod:`.budgets`). Each adds the line time of the bytes it moves and of one small
        message (:attr:`Limits.info_bytes`), at half the line rate.
        """
        t = self.timeouts
        slack = self.limits.info_bytes / self._rate()
        if operation in ("sync", "system_info"):
            return t.sync + slack
        if operation == "network_info":
            return t.info + slack
        if operation == "connect":
            return _DRAIN_S + _READ_POLL + self.deadline("sync")
        if operation != "run" or info is None:
            raise BoardError(f"no deadline for {operation!r}: accepted connect, sync, "
                             "system_info, network_info, or run with the network's info")
        return run_budget(t, self.limits, self._rate(), info, mode,
                          payload=self._payload, header_bytes=self.header_bytes)

    @contextmanager
    def _operation(self, seconds: float) -> Iterator[None]:
        """Run the block under a deadline ``seconds`` from now (an operation inside another
        keeps the outer one's). Logs are collected afresh per outermost operation."""
        if self._end is not None:
            yield
            return
        self._end = time.monotonic() + seconds
        self._logs, self._logs_dropped = [], 0
        try:
            yield
        finally:
            self._end = None

    def __enter__(self) -> Self:
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
            self._disconnect_message(self._need_link())
        self._set_payload(bp.DEFAULT_PAYLOAD)  # both sides fall back to 32 on SYNC
        try:
            with self._operation(self.deadline("sync")):
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
        with self._operation(self.deadline("system_info")):
            msg = self._transact(bp.CMD_SYS_INFO, "sinfo", (bp.S_IDLE,), self.timeouts.sync)
        com = int(msg.get("com_param", 0))
        if self.header_bytes == 2 and com:
            if not bp.MIN_PAYLOAD <= com <= bp.MAX_PAYLOAD:
                self.close()
                raise BoardProtocolError(
                    f"{self.where}: system info asks for packets of {com} bytes (com_param); "
                    f"accepted 0 (keep {bp.DEFAULT_PAYLOAD}) or {bp.MIN_PAYLOAD}.."
                    f"{bp.MAX_PAYLOAD}, the firmware's largest packet size")
            self._set_payload(com)
        return SystemInfo(msg["devid"], msg["sclock"], msg["hclock"], msg["cache"], com,
                          tuple(msg["extra"]))

    def network_info(self, index: int = 0) -> NetworkInfo:
        """CMD_NETWORK_INFO for the network at ``index``."""
        with self._operation(self.deadline("network_info")):
            msg = self._transact(bp.CMD_NETWORK_INFO, "minfo", (bp.S_IDLE,),
                                 self.timeouts.info, param=index)
        try:
            info = NetworkInfo.from_msg(msg)
            for desc in (*info.inputs, *info.outputs):
                bt.check_tensor_size(desc, self.limits.tensor_bytes)
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
            with self._operation(self.deadline("run", info, mode)):
                self._byte_budget = self.bytes_received + self.limits.run_bytes
                try:
                    self._run(info, MODES[mode], arrays, result)
                finally:
                    self._byte_budget = None
                    result.logs = self._kept_logs()
        except BoardCommunicationError as exc:
            exc.partial = result
            exc.args = (f"{exc.args[0]}; received so far: {result.summary()}",)
            self.close()
            raise
        return result

    def _kept_logs(self) -> list[str]:
        dropped = [f"[{self._logs_dropped} more log line(s) not kept]"] if self._logs_dropped else []
        return [*self._logs, *dropped]

    def _run(self, info: NetworkInfo, param: int, arrays: list[bytes], out: RunOutput) -> None:
        t, caps = self.timeouts, self.limits
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
        most = node_report_cap(self.limits, info)
        while True:  # node reports until the model-level op (flags NONE)
            op = self._expect("op", (bp.S_PROCESSING,), t.op)
            flags = op["type"] >> 24
            counters = bt.decode_counters(op["counter_type"], op["counters"])
            if flags == 0:
                out.duration_ms, out.counters = duration_ms(op["duration"]), counters
                break
            if len(out.nodes) >= most:
                raise too_many_reports(self.where, most, info)
            node = NodeResult(node_name(op, len(out.nodes), self._sync), op["type"] & 0xFFFFFF,
                              op["id"], duration_ms(op["duration"]), counters)
            out.nodes.append(node)
            if flags & bp.OP_WITHOUT_TENSOR:
                continue
            for k in itertools.count():
                if k >= caps.node_tensors:
                    raise BoardProtocolError(
                        f"{self.where}: node {node.name!r} sent more than {caps.node_tensors} "
                        "tensors without one flagged LAST; at most "
                        f"{caps.node_tensors} are accepted")
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

    def _tensor(self, msg: Mapping[str, Any]) -> tuple[bt.TensorDesc, np.ndarray]:
        try:
            return bt.received_tensor(msg, self.limits.tensor_bytes)
        except bp.WireError as exc:
            raise BoardProtocolError(f"{self.where}: {exc}") from exc

    # --- transactions ----------------------------------------------------------------
    def _set_payload(self, size: int) -> None:
        self._payload = size
        if self._link is not None:
            self._link.payload = size

    def _transact(self, cmd: int, payload: str, states: tuple[int, ...], timeout: float,
                  param: int = 0, name: str = "", opt: int = 0) -> dict[str, Any]:
        self._need_link()
        self._reqid = next(self._reqids)
        self._send(bp.request(self._reqid, cmd, param, name, opt))
        return self._expect(payload, states, timeout)

    def _expect(self, payload: str, states: tuple[int, ...], timeout: float) -> dict[str, Any]:
        """Receive the next non-log message and check its request id, state and payload.

        Log lines do not extend the wait: they are acknowledged, kept (up to
        :attr:`Limits.log_lines`) and counted in the timeout's message."""
        cap = self.limits.message_bytes if payload == "tensor" else self.limits.info_bytes
        wait = Wait(payload, timeout, self._end or time.monotonic() + timeout, cap)
        while True:
            msg = self._receive(wait)
            if msg.get("log") is None:
                break
            line = str(msg["log"]["str"])[:self.limits.log_chars]
            wait.logs, wait.last_log = wait.logs + 1, line[:80]
            if len(self._logs) < self.limits.log_lines:
                self._logs.append(line)
            else:
                self._logs_dropped += 1
            if self.on_log:
                self.on_log(line)
            self._send(bp.host_ack(), wait.end)
        return checked_answer(msg, self._reqid, payload, states, self.where)

    def _receive(self, wait: Wait) -> dict[str, Any]:
        link = self._need_link()
        body = link.receive(wait)
        if self._byte_budget is not None and self.bytes_received > self._byte_budget:
            raise BoardProtocolError(
                f"{self.where}: more than {self.limits.run_bytes} bytes received in one run; "
                f"at most {self.limits.run_bytes} are accepted")
        try:
            return bp.decode(self._schema, body)
        except bp.WireError as exc:
            raise BoardProtocolError(f"{self.where}: undecodable message of {len(body)} bytes "
                                     f"({preview(body)}) while waiting for {wait.what!r}: "
                                     f"{exc}") from exc

    def _send(self, message: bytes, end: float | None = None) -> None:
        link = self._need_link()
        if end is None:
            end = self._end or time.monotonic() + self.timeouts.packet_sync * 2
        link.send(message, end, self.timeouts.packet_sync)

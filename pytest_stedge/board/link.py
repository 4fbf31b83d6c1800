"""The framed byte link under the client: packets in and out of an open port, every wait
under a deadline and every message under a size cap.

A wait for one message ends at the earliest of the operation's deadline and
``start + limit + line_time(bytes of this message so far)``: bytes that belong to the
awaited message earn their own line time (at half the line rate, so a message streaming
at line rate never runs out), nothing else does. A log line or garbage that completes a
message starts the next message at zero credit, so a chatty or dribbling board cannot keep
a wait alive, and no wait outlives its operation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from . import protocol as bp
from .errors import (
    BoardCommunicationError,
    BoardDisconnectedError,
    BoardProtocolError,
    BoardTimeoutError,
)


@dataclass
class Wait:
    """One wait for a message: what is awaited, its limit, and the operation's deadline."""

    what: str
    limit: float
    end: float  # monotonic deadline of the whole operation
    cap: int  # largest message accepted here
    start: float = field(default_factory=time.monotonic)
    logs: int = 0  # log messages that arrived during this wait (they do not extend it)
    last_log: str = ""


def preview(raw: bytes | bytearray | memoryview, n: int = 40) -> str:
    """What some bytes look like, for errors: quoted text when printable, else hex."""
    head = bytes(raw[:n])
    text = head.decode("ascii", errors="replace")
    more = "..." if len(raw) > n else ""
    if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        return f"text {text + more!r}"
    return f"bytes {head.hex(' ')}{more}"


class Link:
    """Packets of the validation protocol over an open pyserial port (serial or socket).

    :param rate: the bytes per second deadlines assume (half the line rate).
    """

    def __init__(self, ser: Any, where: str, header_bytes: int, rate: float) -> None:
        self.ser = ser
        self.where = where
        self.header_bytes = header_bytes
        self.rate = rate
        self.payload = bp.DEFAULT_PAYLOAD
        self.bytes_received = 0
        self._buf = bytearray()
        self._first = b""  # the first packet of the message in flight, for errors

    def line_time(self, nbytes: int) -> float:
        """Seconds ``nbytes`` may take at the assumed rate."""
        return nbytes / self.rate

    def clear(self) -> None:
        """Forget buffered bytes (after a drain)."""
        self._buf.clear()

    # --- receiving ---------------------------------------------------------------------
    def receive(self, wait: Wait) -> bytearray:
        """One target message body: full packets until the end-of-message packet."""
        hb, buf = self.header_bytes, self._buf
        body = bytearray()
        self._first = b""
        while True:
            size = hb + self.payload
            self._fill(size, wait, len(body))
            first = self._first = self._first or bytes(buf[:size])
            eom, n = bp.parse_header(buf, hb)
            if not eom:
                if len(body) + self.payload > wait.cap:
                    raise BoardProtocolError(
                        f"{self.where}: no end-of-message packet in {len(body)} bytes while "
                        f"waiting for {wait.what!r} (a message here holds at most {wait.cap} "
                        f"bytes); the line carries {preview(first)}")
                body += memoryview(buf)[hb:size]
                del buf[:size]
                continue
            if n > self.payload:
                head = bytes(buf[:size])
                del buf[:size]
                raise BoardProtocolError(
                    f"{self.where}: packet header 0x{head[:hb].hex()} announces {n} bytes in a "
                    f"{self.payload}-byte packet ({preview(head)}: garbage on the line, or "
                    f"{'2' if hb == 1 else '1'}-byte-header firmware)")
            body += memoryview(buf)[hb:hb + n]
            del buf[:size]
            return body

    def _fill(self, n: int, wait: Wait, got: int) -> None:
        """Buffer at least ``n`` bytes before the wait's deadline (``got``: bytes of the
        message already taken, which earn their line time)."""
        buf, ser = self._buf, self.ser
        now = time.monotonic()  # checked even when the bytes are already here: a flood
        if now >= min(wait.end, wait.start + wait.limit + self.line_time(got + len(buf))):
            raise self._late(wait, now, got + len(buf))
        while len(buf) < n:
            try:
                chunk = ser.read(max(n - len(buf), ser.in_waiting))
            except Exception as exc:  # SerialException, OSError, socket errors
                raise self.lost(exc) from exc
            if chunk:
                buf += chunk
                self.bytes_received += len(chunk)
                if len(buf) >= n:
                    break
            now = time.monotonic()
            if now >= min(wait.end, wait.start + wait.limit + self.line_time(got + len(buf))):
                raise self._late(wait, now, got + len(buf))

    def _late(self, wait: Wait, now: float, pending: int) -> BoardTimeoutError:
        if now >= wait.end:
            head = f"{self.where}: the operation's deadline passed while waiting for {wait.what!r}"
        elif not pending:
            head = f"{self.where}: no answer for {wait.limit:g} s while waiting for {wait.what!r}"
        else:
            head = (f"{self.where}: {wait.what!r} not complete after {now - wait.start:.1f} s "
                    f"(limit {wait.limit:g} s plus its own line time)")
        parts = []
        if pending:
            parts.append(f"{pending} byte(s) of a message received, starting with "
                         f"{preview(self._first or self._buf)}")
        if wait.logs:
            parts.append(f"{wait.logs} log line(s) instead, last {wait.last_log!r}")
        return BoardTimeoutError(head + (f" ({'; '.join(parts)})" if parts else ""))

    # --- sending -----------------------------------------------------------------------
    def send(self, message: bytes, end: float, packet_sync: float) -> None:
        """A delimited host message as packets; before each later packet, one byte from the
        board (its flow control), awaited at most ``packet_sync`` s and never past ``end``."""
        packets = bp.host_packets(message, self.payload, self.header_bytes)
        try:
            for i, pkt in enumerate(packets):
                if i:
                    wait = Wait("packet sync byte", packet_sync, end, cap=1)
                    self._fill(1, wait, 0)
                    del self._buf[:1]
                self.ser.write(pkt)
        except BoardCommunicationError:
            raise
        except Exception as exc:  # the port's own errors
            raise self.lost(exc) from exc

    def write_raw(self, data: bytes) -> None:
        """Bytes as they are (CMD_DISCONNECT while closing)."""
        self.ser.write(data)
        self.ser.flush()

    def lost(self, exc: BaseException) -> BoardDisconnectedError:
        """The error for a port or socket that failed under us."""
        return BoardDisconnectedError(f"{self.where}: link lost ({exc}); check the cable and "
                                      "that the board did not reset")

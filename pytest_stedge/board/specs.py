"""Where a board is: ``--stedge-board`` specs, port discovery (ST-LINK first), opening the
link (a serial port, a pseudo-terminal, or a ``socket://`` URL: a TCP relay or the
simulator of :mod:`pytest_stedge.board.sim`).

The client that talks over the link is :class:`pytest_stedge.board.client.BoardClient`::

    with BoardClient(parse_board_spec("serial:/dev/ttyACM0:921600")) as board:
        print(board.network_info().name)
"""

from __future__ import annotations

import errno
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_stedge.errors import BoardError

from .errors import BoardBusyError, BoardNotFoundError

DEFAULT_BAUD = 921600  # the N6 validation firmware's rate; ST's host assumes 115200
SPEC_FORMS = ("serial[:PORT][:BAUD] (e.g. serial:/dev/ttyACM0:921600, serial:COM7, "
              "serial:921600), auto, or socket://HOST:PORT")
STLINK_PIDS = {0x3744, 0x3748, 0x374B, 0x374D, 0x374E, 0x374F, 0x3752, 0x3753, 0x3754, 0x3757}
ST_VID = 0x0483

@dataclass(frozen=True)
class BoardSpec:
    """A parsed ``--stedge-board`` value. ``port=None`` means auto-discovery."""

    kind: str  # "serial" or "socket"
    port: str | None = None  # device path/name, or the pyserial URL for sockets
    baud: int = DEFAULT_BAUD
    text: str = ""

    @property
    def desc(self) -> str:
        """The ``--desc`` for ``stedgeai validate --mode target`` (baud always explicit)."""
        if self.kind == "socket":
            hostport = (self.port or "").removeprefix("socket://")
            return f"socket:{hostport}"
        return f"serial:{self.port}:{self.baud}" if self.port else f"serial:{self.baud}"


def parse_board_spec(text: str) -> BoardSpec:
    """Parse a board spec; raises :class:`BoardError` naming the value and what is accepted."""
    raw = text.strip()

    def bad(why: str) -> BoardError:
        return BoardError(f"board spec {text!r}: {why}; accepted: {SPEC_FORMS}")

    if raw.lower() == "auto":
        return BoardSpec("serial", None, DEFAULT_BAUD, text)
    if raw.startswith("socket://"):
        host, sep, tcp = raw[len("socket://"):].rpartition(":")
        if not sep or not host or not tcp.isdigit() or not 0 < int(tcp) < 65536:
            raise bad("a socket URL needs a host and a port 1..65535")
        return BoardSpec("socket", f"socket://{host}:{tcp}", DEFAULT_BAUD, text)
    if raw.startswith("socket:"):  # ST's own form socket:HOST:PORT
        return replace(parse_board_spec("socket://" + raw[len("socket:"):]), text=text)
    head, _, rest = raw.partition(":")
    if head.lower() != "serial":
        raise bad("it must start with 'serial', 'socket://' or be 'auto'")
    port: str | None = None
    baud = DEFAULT_BAUD
    tokens = [t for t in rest.split(":") if t] if rest else []
    if len(tokens) > 2 and not tokens[-1].isdigit():
        raise bad("more than a port and a baud rate")
    if tokens and tokens[-1].isdigit():
        baud = int(tokens.pop())
        if baud < 1200 or baud > 20_000_000:
            raise bad(f"baud rate {baud} is outside 1200..20000000")
    if tokens:
        port = ":".join(tokens)
        if port.isdigit():
            raise bad("two numbers; give the port as a device name such as /dev/ttyACM0 or COM7")
    return BoardSpec("serial", port, baud, text)


# --- discovery ------------------------------------------------------------------------
@dataclass(frozen=True)
class PortInfo:
    """One serial port seen by pyserial; ``reason`` says why auto-discovery chose it."""

    device: str
    description: str = ""
    hwid: str = ""
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None
    is_stlink: bool = False
    reason: str = ""


def list_ports() -> list[PortInfo]:
    """Serial ports, ST-LINK virtual COM ports first, then other ST USB ports, then the rest.

    Ports without a USB id (built-in PCI/legacy UARTs) are left out, as ST's host does.
    """
    from serial.tools import list_ports as lp

    ports = []
    for p in lp.comports():
        if p.vid is None:
            continue
        stlink = p.vid == ST_VID and (p.pid in STLINK_PIDS or "stlink" in
                                      (p.description or "").lower().replace("-", ""))
        ports.append(PortInfo(p.device, p.description or "", p.hwid or "", p.vid, p.pid,
                              p.serial_number, stlink))
    return sorted(ports, key=lambda p: (not p.is_stlink, p.vid != ST_VID, p.device))


def choose_auto_port(ports: Sequence[PortInfo] | None = None) -> PortInfo:
    """The port ``auto`` uses, with ``reason`` filled in; raises if there is none."""
    ports = list_ports() if ports is None else list(ports)
    if not ports:
        raise BoardNotFoundError(
            "no USB serial port found (serial.tools.list_ports sees none): plug the board's "
            "ST-LINK USB connector, check that the user may open serial ports (Linux: group "
            "dialout), or name the port, e.g. --stedge-board serial:/dev/ttyACM0:921600")
    first = ports[0]
    ids = f"USB {first.vid:04X}:{first.pid or 0:04X}"
    others = f"{len(ports) - 1} other port(s)" if len(ports) > 1 else "no other port"
    if first.is_stlink:
        why = f"first ST-LINK virtual COM port ({ids}, {first.description}); {others}"
    else:
        why = f"no ST-LINK port found; first USB serial port ({ids}, {first.description}); {others}"
    return replace(first, reason=why)


def resolve_board_spec(spec: BoardSpec) -> tuple[BoardSpec, str]:
    """Pin an ``auto`` spec to a port (for locks and ``--desc``); returns it and why.

    A spec that names its port is returned as is, with an empty reason.
    """
    if spec.port is not None:
        return spec, ""
    chosen = choose_auto_port()
    return replace(spec, port=chosen.device), chosen.reason


def open_port(spec: BoardSpec, *, read_timeout: float = 0.1, write_timeout: float = 5.0) -> Any:
    """Open the spec's port (exclusively for serial ports), as ST's host does: up to 4
    attempts 0.2 s apart while it is busy. Raises :class:`BoardNotFoundError` or
    :class:`BoardBusyError` with what to do."""
    import serial

    url = str(spec.port)
    for attempt in range(4):
        try:
            return serial.serial_for_url(url, baudrate=spec.baud, timeout=read_timeout,
                                         write_timeout=write_timeout,
                                         exclusive=True if spec.kind == "serial" else None)
        except (serial.SerialException, OSError) as exc:
            text = str(exc)
            code = getattr(exc, "errno", None)
            busy = ("lock" in text.lower() or code in (errno.EBUSY, errno.EAGAIN)
                    or "Access is denied" in text or "resource busy" in text.lower())
            if busy and attempt < 3:
                time.sleep(0.2)
                continue
            if busy:
                raise BoardBusyError(
                    f"{url} is held by another program ({text}); close the serial "
                    "terminal, STM32CubeIDE or other test using it, or pick another board"
                ) from exc
            if "denied" in text.lower() or code == errno.EACCES:
                raise BoardNotFoundError(
                    f"{url}: permission denied ({text}); on Linux add the user to the "
                    "'dialout' group") from exc
            if spec.kind == "socket":
                raise BoardNotFoundError(f"nothing accepts connections at {url} ({text}); "
                                         "is the simulator or relay running?") from exc
            raise BoardNotFoundError(
                f"cannot open serial port {url!r} ({text}); `stedge boards` lists the "
                "ports present, or use --stedge-board auto") from exc
    raise AssertionError("unreachable")

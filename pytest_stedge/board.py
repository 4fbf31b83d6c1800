"""STM32 boards running ST's validation firmware: port specs, discovery, and a native client.

The client speaks the aiValidation protocol (``../shared/board-protocol.md``) over pyserial:
a serial port, a pseudo-terminal, or a ``socket://`` URL (a TCP relay or the simulator of
:mod:`pytest_stedge.board_sim`). Wire details live in :mod:`pytest_stedge.board_protocol`.

    with BoardClient(parse_board_spec("serial:/dev/ttyACM0:921600")) as board:
        print(board.network_info().name)
        out = board.run({"input": x}, mode="per-layer-data")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import board_protocol as bp
from .errors import BoardError

DEFAULT_BAUD = 921600  # the N6 validation firmware's rate; ST's host assumes 115200
SPEC_FORMS = ("serial[:PORT][:BAUD] (e.g. serial:/dev/ttyACM0:921600, serial:COM7, "
              "serial:921600), auto, or socket://HOST:PORT")
FLASH_HINT = ("flash it with ST's validation firmware: `stedgeai generate` for the model, then "
              "the install's loader (STM32N6: scripts/N6_scripts/n6_loader.py, which pytest "
              "runs in the validate-target loader step) or STM32CubeProgrammer")
STLINK_PIDS = {0x3744, 0x3748, 0x374B, 0x374D, 0x374E, 0x374F, 0x3752, 0x3753, 0x3754, 0x3757}
ST_VID = 0x0483


# --- errors ---------------------------------------------------------------------------
class BoardNotFoundError(BoardError):
    """No such port, no port at all, or nothing listening at a socket URL."""


class BoardBusyError(BoardError):
    """The port is held by another program (a terminal, STM32CubeIDE, another test)."""


class BoardNotValidationFirmwareError(BoardError):
    """Something answered, but not the validation firmware's sync."""


class BoardProtocolVersionError(BoardError):
    """The firmware speaks a message version this client does not know."""


class BoardNetworkMismatchError(BoardError):
    """The board holds another network than the one the case expects."""


class BoardRequestError(BoardError):
    """The board refused a request (``S_ERROR``), e.g. wrong input size or unknown model."""


class BoardCommunicationError(BoardError):
    """The link broke mid-transaction; ``partial`` holds what arrived before (run only)."""

    partial: RunOutput | None = None


class BoardTimeoutError(BoardCommunicationError):
    """The board went silent longer than the phase's time limit."""


class BoardDisconnectedError(BoardCommunicationError):
    """The port or socket closed under us (cable pulled, board reset, relay died)."""


class BoardProtocolError(BoardCommunicationError):
    """Bytes that are not the protocol: garbage, wrong framing, wrong request id."""


# --- port specs -----------------------------------------------------------------------
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
        host, sep, port = raw[len("socket://"):].rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise bad("a socket URL needs a host and a port 1..65535")
        return BoardSpec("socket", f"socket://{host}:{port}", DEFAULT_BAUD, text)
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


# --- results --------------------------------------------------------------------------
@dataclass(frozen=True)
class SyncInfo:
    """The answer to CMD_SYNC: protocol version, capabilities, runtime."""

    version: str
    version_word: int
    capability: int
    rtid: int

    @property
    def capabilities(self) -> list[str]:
        """Names of the capability bits that are set."""
        return [n for bit, n in bp.CAP_NAMES.items() if self.capability & bit]

    @property
    def runtime(self) -> str:
        """Runtime name from the rtid word."""
        return bp.RUNTIME_NAMES.get(self.rtid & 0xFF, f"runtime {self.rtid & 0xFF}")


@dataclass(frozen=True)
class SystemInfo:
    """The answer to CMD_SYS_INFO."""

    devid: int
    sclock_hz: int
    hclock_hz: int
    cache: int
    com_param: int = 0
    extra: tuple[int, ...] = ()

    @property
    def device(self) -> str:
        """Human name of the MCU device id."""
        names = {0x486: "STM32N6", 0x450: "STM32H74x/75x", 0x480: "STM32H7Ax/7Bx",
                 0x483: "STM32H72x/73x", 0x482: "STM32U575/585", 0x481: "STM32U59x/5Ax"}
        return names.get(self.devid, f"device 0x{self.devid:03X}")


@dataclass(frozen=True)
class NetworkInfo:
    """The answer to CMD_NETWORK_INFO: what network the firmware holds."""

    name: str
    signature: str
    compile_datetime: str
    runtime_version: str
    tool_version: str
    macc: int | None
    n_nodes: int
    inputs: tuple[bp.TensorDesc, ...]
    outputs: tuple[bp.TensorDesc, ...]
    activations_bytes: int | None
    params_bytes: int | None
    runtime_desc: str
    rtid: int


@dataclass
class NodeResult:
    """One executed node (an epoch block on the N6): timing, counters, its tensors."""

    name: str
    type: int
    id: int
    duration_ms: float
    counters: list[int]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    descs: dict[str, bp.TensorDesc] = field(default_factory=dict)


@dataclass
class RunOutput:
    """One inference: outputs by name, per-node reports (per-layer modes), total time."""

    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[NodeResult] = field(default_factory=list)
    duration_ms: float | None = None
    counters: list[int] = field(default_factory=list)
    output_descs: dict[str, bp.TensorDesc] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line saying what arrived, for error messages."""
        last = f" (last: {self.nodes[-1].name!r})" if self.nodes else ""
        total = "model report received" if self.duration_ms is not None else "no model report"
        return f"{len(self.nodes)} node report(s){last}, {total}, {len(self.outputs)} output(s)"


@dataclass(frozen=True)
class Timeouts:
    """Silence limits per phase, in seconds (ST's host values by default)."""

    sync: float = 0.5
    info: float = 5.0
    run_ack: float = 1.0
    input_ack: float = 10.0
    op: float = 50.0
    packet_sync: float = 5.0


MODES = {"io": bp.RUN_IO_ONLY,
         "per-layer": bp.RUN_IO_ONLY | bp.RUN_PER_LAYER,
         "per-layer-data": bp.RUN_IO_ONLY | bp.RUN_PER_LAYER | bp.RUN_PER_LAYER_WITH_DATA}


def __getattr__(name: str) -> Any:
    # The client lives in board_client.py (it needs the types above); exposed here lazily.
    if name == "BoardClient":
        from .board_client import BoardClient

        return BoardClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BoardClient", "BoardSpec", "PortInfo", "RunOutput", "NodeResult", "NetworkInfo",
    "SyncInfo", "SystemInfo", "Timeouts", "parse_board_spec", "list_ports", "choose_auto_port",
]

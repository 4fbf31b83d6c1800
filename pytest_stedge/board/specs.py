"""STM32 boards running ST's validation firmware: port specs, discovery, and a native client.

The client speaks the aiValidation protocol (``../shared/board-protocol.md``) over pyserial:
a serial port, a pseudo-terminal, or a ``socket://`` URL (a TCP relay or the simulator of
:mod:`pytest_stedge.board.sim.simulator`). Wire details live in :mod:`pytest_stedge.board.protocol`.

    with BoardClient(parse_board_spec("serial:/dev/ttyACM0:921600")) as board:
        print(board.network_info().name)
        out = board.run({"input": x}, mode="per-layer-data")
"""

from __future__ import annotations

import errno
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_stedge.errors import BoardError

from . import protocol as bp
from . import tensors as bt

if TYPE_CHECKING:
    from .client import BoardClient

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
    inputs: tuple[bt.TensorDesc, ...]
    outputs: tuple[bt.TensorDesc, ...]
    activations_bytes: int | None
    params_bytes: int | None
    runtime_desc: str
    rtid: int

    @classmethod
    def from_msg(cls, msg: Mapping[str, Any]) -> NetworkInfo:
        """Build from a decoded ``aiModelInfoMsg``; rtid b31..b24 flag unknown sizes."""
        missing = msg["rtid"] >> 24

        def pool(descs: Sequence[Mapping[str, Any]], bit: int) -> int | None:
            return None if missing & bit else sum(int(d["size"]) for d in descs)

        def ver(w: int) -> str:
            return f"{w >> 24}.{(w >> 16) & 0xFF}.{(w >> 8) & 0xFF}"

        return cls(
            name=msg["name"], signature=msg["signature"],
            compile_datetime=msg["compile_datetime"],
            runtime_version=ver(msg["runtime_version"]), tool_version=ver(msg["tool_version"]),
            macc=None if missing & 4 else int(msg["n_macc"]), n_nodes=msg["n_nodes"],
            inputs=tuple(bt.TensorDesc.from_msg(d) for d in msg["inputs"]),
            outputs=tuple(bt.TensorDesc.from_msg(d) for d in msg["outputs"]),
            activations_bytes=pool(msg["activations"], 1), params_bytes=pool(msg["params"], 2),
            runtime_desc=msg["runtime_desc"], rtid=msg["rtid"])


@dataclass
class NodeResult:
    """One executed node (an epoch block on the N6): timing, counters, its tensors."""

    name: str
    type: int
    id: int
    duration_ms: float
    counters: list[int]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    descs: dict[str, bt.TensorDesc] = field(default_factory=dict)


@dataclass
class RunOutput:
    """One inference: outputs by name, per-node reports (per-layer modes), total time."""

    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[NodeResult] = field(default_factory=list)
    duration_ms: float | None = None
    counters: list[int] = field(default_factory=list)
    output_descs: dict[str, bt.TensorDesc] = field(default_factory=dict)
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


def input_bytes(info: NetworkInfo,
                inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[bytes]:
    """Input arrays (by name or in order) as the bytes the board expects; raises
    :class:`BoardError` naming the input on a wrong count, dtype or size."""
    if isinstance(inputs, Mapping):
        missing = [d.name for d in info.inputs if d.name not in inputs]
        if missing and len(inputs) == len(info.inputs):
            ordered = list(inputs.values())  # names differ (e.g. board-side names)
        elif missing:
            raise BoardError(f"inputs {missing} missing; the board's network "
                             f"{info.name!r} takes {[d.name for d in info.inputs]}")
        else:
            ordered = [inputs[d.name] for d in info.inputs]
    else:
        ordered = list(inputs)
    if len(ordered) != len(info.inputs):
        raise BoardError(f"{len(ordered)} input(s) given, network {info.name!r} takes "
                         f"{len(info.inputs)}")
    out = []
    for arr, desc in zip(ordered, info.inputs):
        a = np.asarray(arr)
        if a.dtype != desc.dtype:
            raise BoardError(f"input {desc.name!r}: dtype {a.dtype}, the board expects "
                             f"{desc.dtype} (scale {desc.scale:g}, zero point "
                             f"{desc.zero_point}); convert or quantise it first")
        if a.size * a.itemsize != desc.nbytes:
            raise BoardError(f"input {desc.name!r}: shape {list(a.shape)}, the board "
                             f"expects {list(desc.shape)}")
        out.append(np.ascontiguousarray(a, dtype=desc.dtype.newbyteorder("<")).tobytes())
    return out


MODES = {"io": bp.RUN_IO_ONLY,
         "per-layer": bp.RUN_IO_ONLY | bp.RUN_PER_LAYER,
         "per-layer-data": bp.RUN_IO_ONLY | bp.RUN_PER_LAYER | bp.RUN_PER_LAYER_WITH_DATA}


def __getattr__(name: str) -> Any:
    # The client lives in board_client.py (it needs the types above); exposed here lazily.
    if name == "BoardClient":
        from .client import BoardClient

        return BoardClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BoardClient", "BoardSpec", "PortInfo", "RunOutput", "NodeResult", "NetworkInfo",
    "SyncInfo", "SystemInfo", "Timeouts", "parse_board_spec", "list_ports", "choose_auto_port",
    "open_port", "input_bytes", "resolve_board_spec",
]

"""What a board answers (sync, system and network info, per-node results, outputs), the
time limits and size caps the client keeps, and inputs turned into the bytes the board
expects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_stedge.errors import BoardError

from . import protocol as bp
from . import tensors as bt


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
    """Time limits, in seconds (ST's host values by default for the phases).

    A phase limit is the longest wait for one message of that phase; the message's own
    bytes extend its wait by their line time (at half the line rate), so a large tensor
    streaming at line rate never times out, while log lines, garbage and a board dribbling
    bytes do not extend anything. Every operation also has a total deadline, fixed when it
    starts (see :meth:`pytest_stedge.board.client.BoardClient.deadline`): ``per_layer`` is
    the part of it the node reports of one per-layer run may take in all.
    """

    sync: float = 0.5
    info: float = 5.0
    run_ack: float = 1.0
    input_ack: float = 10.0
    op: float = 50.0
    packet_sync: float = 5.0
    per_layer: float = 3600.0  # a 300 MB per-layer dump at 921,600 baud takes ~55 min


@dataclass(frozen=True)
class Limits:
    """The most the client accepts of what a board announces or sends; beyond each, a
    :class:`~pytest_stedge.board.errors.BoardProtocolError` names what arrived.

    Memory of one call stays under ``run_bytes + 2 * message_bytes`` plus
    ``log_lines * log_chars`` characters and small per-node records: a message's body and
    its decoded tensor are the only copies held at once.
    """

    message_bytes: int = (64 << 20) + (64 << 10)  # one tensor message: data + descriptor
    info_bytes: int = 64 << 10  # any other message (sync, sysinfo, ack, log, op, minfo)
    tensor_bytes: int = 64 << 20  # one tensor a descriptor announces (dims x item size)
    run_bytes: int = 1 << 30  # everything one inference sends
    node_reports: int = 16384  # node (or N6 epoch) reports in one per-layer run
    node_tensors: int = 1024  # tensors after one node report
    log_lines: int = 256  # log lines kept per operation (the rest are counted)
    log_chars: int = 1024  # characters kept of one log line


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

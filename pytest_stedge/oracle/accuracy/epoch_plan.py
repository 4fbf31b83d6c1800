"""The Neural-ART epoch plan of a ``network_c_info.json``: epochs, their operators and
buffers, and how a buffer's bytes lie in memory.

A 3.x/4.x N6 c_info describes the compiled network as top-level graph nodes named
``epoch_<n>`` (``mapping``: ``NODE_HW``, ``NODE_EC``, ``NODE_SW``, ``NODE_SW_HW`` for
hybrid, ``NODE_NO_X`` for pseudo-epochs that never run); each lists the buffer ids it
reads (``inputs``) and writes (``outputs``) and its operators (``subgraph_nodes``).
``buffers`` give, per buffer, the logical ``shape`` (ONNX order, NCHW for 4-D), the
memory ``batch`` (channels stored together: 1 = channel first, C = channel last,
between = blocks of ``batch`` channels), the format, ``intq`` scale/offset or ``qmn``
fixed point, the pool and offset, and the epoch lifetime. ``edges`` tie buffers to the
operators that write and read them.

The validation firmware reports one record per executed epoch (block): an operator
message with ``id = last_epoch << 16 | epoch`` and one tensor per buffer of that epoch,
named with the buffer's name (``../shared/board-protocol.md`` §7.5, §8.6).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

KINDS = {"NODE_HW": "HW", "NODE_EC": "EC", "NODE_SW": "SW", "NODE_SW_HW": "hybrid",
         "NODE_NO_X": "none"}
# Low nibble of the firmware's operator type word (board-protocol.md §7.5).
BOARD_KINDS = {0: "HW", 1: "extra HW", 2: "SW", 3: "hybrid", 4: "EC"}
_INT_FORMATS = {"S8": "int8", "U8": "uint8", "S16": "int16", "U16": "uint16",
                "S32": "int32", "U32": "uint32", "S64": "int64", "U64": "uint64"}
_FLOAT_FORMATS = {"FLOAT": "float32", "FLOAT32": "float32", "FLOAT16": "float16",
                  "FLOAT64": "float64"}
_EPOCH_NAME = re.compile(r"epoch_(\d+)$")


@dataclass(frozen=True)
class Operator:
    """One operator of an epoch, as the tool names it (``Conv2D_12``, ``Conv2D_12_off_bias_30``)."""

    id: int
    name: str
    type: str
    mapping: str

    @property
    def runs_in(self) -> str:
        """``HW`` or ``SW`` (the part of a hybrid epoch this operator belongs to)."""
        return "SW" if self.mapping.startswith("NODE_SW") else "HW"


@dataclass(frozen=True)
class Buffer:
    """One c_info buffer: where it lives, its format and layout, its lifetime."""

    id: int
    name: str
    shape: tuple[int, ...]
    batch: int
    format: str
    nbits: int
    signed: bool
    scales: tuple[float, ...]
    offsets: tuple[int, ...]
    frac_bits: int
    is_param: bool
    pool_id: int
    offset: int
    address: int | None
    size_bytes: int
    start: int
    end: int

    @property
    def dtype(self) -> str:
        """The numpy dtype name of one stored element."""
        kind = self.format.removeprefix("STAI_FORMAT_")
        if kind in _FLOAT_FORMATS:
            return _FLOAT_FORMATS[kind]
        if kind in _INT_FORMATS:
            return _INT_FORMATS[kind]
        if self.nbits in (8, 16, 32, 64):  # Q (fixed point) and other integer kinds
            return f"{'int' if self.signed else 'uint'}{self.nbits}"
        raise OracleError(f"buffer {self.name!r}: format {self.format} with {self.nbits} bits "
                          "has no numpy type (8/16/32/64-bit integers and floats are read)")

    @property
    def elements(self) -> int:
        """Logical element count (``product(shape)``)."""
        return math.prod(self.shape) if self.shape else 1

    @property
    def layout(self) -> str:
        """``NCHW`` (channel first), ``NHWC`` (channel last), ``NC/bHWb`` (blocks of b
        channels) for 4-D buffers; ``as shape`` otherwise."""
        if len(self.shape) != 4 or self.batch <= 1:
            return "as shape" if len(self.shape) != 4 else "NCHW"
        if self.batch >= self.shape[1]:
            return "NHWC"
        return f"NC/{self.batch}HW{self.batch}"

    def stored_elements(self) -> int:
        """Elements in memory, channel padding included (channels rounded up to ``batch``)."""
        if len(self.shape) == 4 and 1 < self.batch < self.shape[1]:
            n, c, h, w = self.shape
            return n * -(-c // self.batch) * self.batch * h * w
        return self.elements

    @property
    def has_quantization(self) -> bool:
        """Whether the buffer carries its own scale or fractional bits."""
        return bool(self.scales) or bool(self.frac_bits)

    def to_real(self, raw: Any, *, where: str,
                fallback: tuple[float, int] | None = None) -> Any:
        """The buffer's stored elements as real values in logical (``shape``) order.

        Integer codes are dequantized with the buffer's own ``intq`` scale and offset
        (per channel along axis 1 when it has one per channel) or its ``qmn`` fractional
        bits; a buffer with neither holds the codes of the model's tensor, dequantized
        with ``fallback`` (that tensor's scale and zero point). The memory layout (``batch``) is undone and channel padding dropped.

        :raises OracleError: the element count fits neither the shape nor its padded form.
        """
        import numpy as np

        flat = np.asarray(raw).reshape(-1)
        logical = self._unlayout(flat, where)
        if fallback is not None and not self.has_quantization and logical.dtype.kind in "iu":
            # Q buffers without intq move the model's int8 codes (transposes, pads, copies)
            return (logical.astype(np.float32) - np.float32(fallback[1])) * np.float32(
                fallback[0])
        return self._dequantize(logical)

    def _unlayout(self, flat: Any, where: str) -> Any:
        import numpy as np

        if flat.size not in (self.elements, self.stored_elements()):
            raise OracleError(
                f"{where}: {flat.size} element(s) received for buffer {self.name!r}, whose "
                f"shape {list(self.shape)} (batch {self.batch}) holds {self.elements}"
                + (f" ({self.stored_elements()} with channel padding)"
                   if self.stored_elements() != self.elements else ""))
        if len(self.shape) != 4 or self.batch <= 1:
            return flat.reshape(self.shape)
        n, c, h, w = self.shape
        b = min(self.batch, c)
        groups = -(-c // b)
        if flat.size != n * groups * b * h * w:  # unpadded blocks cannot hold c channels
            raise OracleError(f"{where}: buffer {self.name!r} has {flat.size} elements, "
                              f"{c} channels do not split into blocks of {b}")
        blocks = flat.reshape(n, groups, h, w, b)
        return np.ascontiguousarray(blocks.transpose(0, 1, 4, 2, 3)).reshape(
            n, groups * b, h, w)[:, :c]

    def _dequantize(self, arr: Any) -> Any:
        import numpy as np

        if arr.dtype.kind not in "iu":
            return arr.astype(np.float32)
        if self.frac_bits:
            return arr.astype(np.float32) * np.float32(2.0 ** -self.frac_bits)
        if not self.scales:
            return arr.astype(np.float32)
        scale = np.asarray(self.scales, dtype=np.float32)
        zero = np.asarray(self.offsets or (0,) * len(self.scales), dtype=np.float32)
        if scale.size > 1 and arr.ndim > 1 and arr.shape[1] == scale.size:
            view = (1, -1) + (1,) * (arr.ndim - 2)
            scale, zero = scale.reshape(view), zero.reshape(view)
        else:
            scale, zero = scale.ravel()[:1], zero.ravel()[:1]
        return (arr.astype(np.float32) - zero) * scale


@dataclass
class Epoch:
    """One top-level epoch node of the c_info."""

    num: int
    name: str
    kind: str  # HW, EC, SW, hybrid or none
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]

    @property
    def executed(self) -> bool:
        """False for pseudo-epochs: ``NODE_NO_X`` (3.x+), and in 2.x files the ones that
        only hold parameters or the return, or touch no buffer (``epoch_1`` Transpose)."""
        if self.kind == "none" or not (self.inputs or self.outputs):
            return False
        return any(op.type not in ("Param", "Return", "") for op in self.operators)

    def describe(self) -> str:
        """``epoch_7 (HW: Conv2D_24 Conv, ...)`` for messages; hybrids say which part is SW."""
        shown = [op for op in self.operators if op.type not in ("Param", "Return")]
        if self.kind == "hybrid":
            sw = [f"{op.name} {op.type}" for op in shown if op.runs_in == "SW"]
            hw = [f"{op.name} {op.type}" for op in shown if op.runs_in == "HW"]
            parts = [f"SW {', '.join(sw)}" if sw else "", f"HW {', '.join(hw)}" if hw else ""]
            return f"{self.name} (hybrid: {'; '.join(p for p in parts if p)})"
        ops = ", ".join(f"{op.name} {op.type}" for op in shown[:6])
        more = f", ... {len(shown) - 6} more" if len(shown) > 6 else ""
        return f"{self.name} ({self.kind}: {ops}{more})"


@dataclass
class EpochPlan:
    """The epochs and buffers of one c_info file."""

    path: Path
    model_name: str
    tool_version: str
    epochs: dict[int, Epoch]
    buffers: dict[int, Buffer]
    operators: dict[int, Operator]
    producer: dict[int, int] = field(default_factory=dict)  # buffer id -> operator id
    stream_inputs: dict[int, list[int]] = field(default_factory=dict)  # op id -> op ids
    epoch_of_op: dict[int, int] = field(default_factory=dict)

    @property
    def by_name(self) -> dict[str, Buffer]:
        """Buffers by name."""
        return {b.name: b for b in self.buffers.values()}

    def executed_epochs(self) -> list[Epoch]:
        """Epochs that run on the board, in order."""
        return [e for _, e in sorted(self.epochs.items()) if e.executed]

    def producing_epoch(self, buffer: Buffer) -> Epoch | None:
        """The executed epoch that writes ``buffer`` (its ``outputs``), else the one its
        lifetime starts in."""
        for epoch in self.epochs.values():
            if buffer.id in epoch.outputs and epoch.executed:
                return epoch
        op = self.producer.get(buffer.id)
        if op is not None and op in self.epoch_of_op:
            return self.epochs.get(self.epoch_of_op[op])
        started = self.epochs.get(buffer.start)
        return started if started is not None and started.executed else None

    def find(self, name: str, address: int | None = None, size: int | None = None
             ) -> Buffer | None:
        """A buffer by name, else by address (and byte size when given)."""
        found = self.by_name.get(name)
        if found is not None or address is None:
            return found
        for buf in self.buffers.values():
            if buf.address == address and not buf.is_param and (
                    size is None or buf.size_bytes == size):
                return buf
        return None

    def upstream_operators(self, buffer: Buffer) -> list[Operator]:
        """The operators that computed ``buffer`` inside its epoch, last first: its writer,
        then the operators streaming into it (edges without a buffer)."""
        start = self.producer.get(buffer.id)
        out: list[Operator] = []
        seen: set[int] = set()
        todo = [start] if start is not None else []
        while todo:
            op_id = todo.pop(0)
            if op_id in seen or op_id not in self.operators:
                continue
            seen.add(op_id)
            out.append(self.operators[op_id])
            todo.extend(self.stream_inputs.get(op_id, []))
        return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _buffer(raw: dict[str, Any], pools: dict[int, int | None]) -> Buffer:
    intq, qmn = _dict(raw.get("intq")), _dict(raw.get("qmn"))
    fmt = str(raw.get("format") or "")
    frac = _int(qmn.get("n")) if fmt.endswith("_Q") else 0
    epochs = _dict(raw.get("epochs"))
    pool_id = _int(raw.get("mpool_id"))
    base = pools.get(pool_id)
    offset = _int(raw.get("offset_start"))
    return Buffer(
        id=_int(raw.get("id")), name=str(raw.get("name") or ""),
        shape=tuple(_int(d) for d in raw.get("shape") or ()),
        batch=max(1, _int(raw.get("batch"), 1)), format=fmt, nbits=_int(raw.get("nbits"), 8),
        signed=fmt.split("_")[-1].startswith("S") or bool(qmn.get("sign")),
        scales=tuple(float(s) for s in intq.get("scales") or ()),
        offsets=tuple(_int(o) for o in intq.get("offsets") or ()),
        frac_bits=frac, is_param=bool(raw.get("is_param")), pool_id=pool_id, offset=offset,
        address=None if base is None else base + offset, size_bytes=_int(raw.get("size_bytes")),
        start=_int(epochs.get("start")), end=_int(epochs.get("end")))


def load_plan(path: Path | str) -> EpochPlan:
    """Read the epochs, operators and buffers of an N6 c_info.

    :raises OracleError: unreadable JSON, no buffers (a validate-on-target c_info keeps
        none), or no ``epoch_<n>`` nodes (not a Neural-ART compilation).
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise OracleError(f"{p}: cannot read the c_info ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise OracleError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise OracleError(f"{p}: not a c_info (a JSON object with graphs and buffers expected)")
    graphs = doc.get("graphs") if isinstance(doc.get("graphs"), list) else []
    raw_buffers = doc.get("buffers") if isinstance(doc.get("buffers"), list) else []
    if not raw_buffers:
        raise OracleError(
            f"{p}: field 'buffers' is empty or missing, so epoch records cannot be mapped "
            "(validate --mode target writes a c_info without buffers; give the "
            "network_c_info.json that generate wrote)")
    if not graphs or not isinstance(graphs[0], dict):
        raise OracleError(f"{p}: field 'graphs' is empty: no epochs to map records to")
    pools: dict[int, int | None] = {}
    for pool in doc.get("memory_pools") or []:
        if isinstance(pool, dict):
            addr = str(pool.get("address", ""))
            pools[_int(pool.get("id"))] = int(addr) if addr.isdigit() else None
    buffers = {b.id: b for b in (_buffer(r, pools) for r in raw_buffers if isinstance(r, dict))}
    graph = graphs[0]
    epochs: dict[int, Epoch] = {}
    operators: dict[int, Operator] = {}
    epoch_of_op: dict[int, int] = {}
    for node in graph.get("nodes") or []:
        found = _EPOCH_NAME.match(str(node.get("name") or "")) if isinstance(node, dict) else None
        if not found:
            continue
        num = int(found.group(1))
        ops = []
        for sub in node.get("subgraph_nodes") or []:
            if not isinstance(sub, dict):
                continue
            op = Operator(_int(sub.get("id")), str(sub.get("name") or ""),
                          str(sub.get("type") or sub.get("description") or "")
                          .replace("Node kind=", ""), str(sub.get("mapping") or ""))
            ops.append(op)
            operators[op.id] = op
            epoch_of_op[op.id] = num
        epochs[num] = Epoch(num, found.group(0), KINDS.get(str(node.get("mapping")), "HW"), ops,
                            [_int(i) for i in node.get("inputs") or []],
                            [_int(i) for i in node.get("outputs") or []])
    if not epochs:
        raise OracleError(f"{p}: no epoch_<n> node in graphs[0].nodes: not a Neural-ART "
                          "(--st-neural-art) compilation, so there are no epoch records to map")
    producer: dict[int, int] = {}
    stream: dict[int, list[int]] = {}
    for edge in graph.get("edges") or []:
        if not isinstance(edge, dict):
            continue
        start = _int(_dict(edge.get("start")).get("node_id"))
        end = _int(_dict(edge.get("end")).get("node_id"))
        buf = _int(edge.get("buffer"))
        if buf:
            producer.setdefault(buf, start)
        elif start in operators and end in operators:
            stream.setdefault(end, []).append(start)
    env = _dict(doc.get("environment"))
    tools = env.get("tools") if isinstance(env.get("tools"), list) else []
    version = str(tools[0].get("version") or "") if tools and isinstance(tools[0], dict) else ""
    model = _dict(env.get("generated_model"))
    return EpochPlan(p, str(model.get("name") or ""), version, epochs, buffers, operators,
                     producer, stream, epoch_of_op)


def record_epochs(name: str, op_id: int | None) -> tuple[int, int] | None:
    """The (first, last) epoch numbers a board record covers: from its operator id
    (``last << 16 | epoch``), else from a name ``epoch_<n>``."""
    if op_id:
        first, last = op_id & 0xFFFF, op_id >> 16
        return first, max(first, last)
    found = _EPOCH_NAME.match(name)
    return (int(found.group(1)),) * 2 if found else None

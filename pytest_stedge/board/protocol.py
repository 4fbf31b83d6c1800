"""Wire format of ST's aiValidation host/board protocol (msg v3.x), both directions.

Messages are proto2 messages of ``stm32msg.proto`` (see ``../shared/board-protocol.md``
§4), cut into fixed-size packets (§3). Everything here is pure: bytes in, bytes out.

Why a hand-written encoder instead of the ``protobuf`` package: the protocol uses eight
small messages with scalar, string, bytes and nested fields only; nanopb on the board
needs every required field present (zeros included), which generated Python classes do
not guarantee; protoc output ties us to a protobuf runtime version; and the sysinfo
field 5 changes meaning between firmware generations, which a schema table expresses
in one line. Decoders accept packed and unpacked repeated scalars, as protobuf does.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# --- enums (§5) --------------------------------------------------------------------
VERSION_MAJOR = 3
KNOWN_MINOR_MAX = 2  # this client speaks msg 3.0 .. 3.2

CMD_SYNC, CMD_SYS_INFO, CMD_DISCONNECT = 0, 1, 2
CMD_NETWORK_INFO, CMD_NETWORK_RUN = 10, 11

S_IDLE, S_WAITING, S_PROCESSING, S_DONE, S_ERROR = 0, 1, 2, 3, 4
STATE_NAMES = {0: "S_IDLE", 1: "S_WAITING", 2: "S_PROCESSING", 3: "S_DONE", 4: "S_ERROR"}

E_NONE, E_INVALID_SIZE, E_INVALID_PARAM, E_GENERIC = 0, 1, 4, 10
ERROR_NAMES = {
    0: "E_NONE", 1: "E_INVALID_SIZE", 2: "E_INVALID_FORMAT", 3: "E_INVALID_STATE",
    4: "E_INVALID_PARAM", 5: "E_INVALID_SHAPE", 6: "E_INVALID_CMD",
    7: "E_INVALID_UNINITIALIZED", 8: "E_MEM_OVERFLOW", 10: "E_GENERIC",
}

CAP_OBSERVER, CAP_RELOC, CAP_READ_WRITE, CAP_USBC, CAP_SELF_TEST = 1, 2, 8, 64, 128
CAP_NAMES = {1: "observer", 2: "reloc", 8: "read_write", 16: "random", 32: "filtering",
             64: "usbc", 128: "self_test"}
RUNTIME_NAMES = {1: "STM.AI", 2: "TFLM", 3: "TVM", 4: "ATONN (Neural-ART)", 5: "GLOW",
                 6: "STM.AI reloc"}

RUN_IO_ONLY, RUN_PER_LAYER, RUN_PER_LAYER_WITH_DATA, RUN_PERF = 1, 2, 4, 8
RUN_CONST_VALUE = 0x200

TENSOR_INPUT, TENSOR_OUTPUT, TENSOR_INTERNAL, TENSOR_MEMPOOL = 1, 2, 4, 8
TENSOR_LAST, TENSOR_NO_DATA, TENSOR_IN_MEMPOOL = 0x100, 0x200, 0x400

OP_INTERNAL, OP_LAST, OP_WITHOUT_TENSOR = 1, 2, 4  # in aiOperatorMsg.type b31..b24

SHAPE_UND, SHAPE_BCWH, SHAPE_BHWC, SHAPE_BCHW, SHAPE_ST_AI, SHAPE_RAW = 0, 1, 2, 3, 4, 5
SHAPE_HAS_BATCH = 64

COUNTER_FMT_64B, COUNTER_FMT_32B = 0, 1

EOM_FLAG = 0x80
SYNC_BYTE = 0xAA
DEFAULT_PAYLOAD = 32
# Packet payload sizes a board may switch to (sysinfo com_param): the default up to the
# firmware's IO_IN_PACKET_SIZE_LARGE / IO_OUT_PACKET_SIZE_LARGE (§3.3).
MIN_PAYLOAD, MAX_PAYLOAD = DEFAULT_PAYLOAD, 4094

# --- schemas ------------------------------------------------------------------------
# kinds: u32/u64 (varint), i32 (varint, negatives sign-extended to 10 bytes), f32
# (fixed32), str, bytes, or a nested schema (tuple of Field).


@dataclass(frozen=True)
class Field:
    """One proto2 field: number, Python key, kind, and whether it repeats or is optional."""

    num: int
    name: str
    kind: Any
    repeated: bool = False
    optional: bool = False  # oneof members: encoded only when present


Schema = tuple[Field, ...]

REQ: Schema = (Field(1, "reqid", "u32"), Field(2, "cmd", "u32"), Field(3, "param", "u32"),
               Field(4, "name", "str"), Field(5, "opt", "u32"))
ACK: Schema = (Field(1, "param", "u32"), Field(2, "error", "u32"))
DATA: Schema = (Field(1, "type", "u32"), Field(2, "size", "u32"), Field(3, "addr", "u32"),
                Field(4, "datas", "bytes"))
SYNC: Schema = (Field(1, "version", "u32"), Field(4, "capability", "u32"),
                Field(5, "rtid", "u32"))
_SYSINFO_HEAD = (Field(1, "devid", "u32"), Field(2, "sclock", "u32"),
                 Field(3, "hclock", "u32"), Field(4, "cache", "u32"))
# ST Edge AI Core <= 2.1 firmware (1-byte headers): field 5 is `extra`.
SYSINFO_V1: Schema = (*_SYSINFO_HEAD, Field(5, "extra", "u32", repeated=True))
# 2.2 and msg 3.2 (2-byte headers): field 5 is `com_param`, `extra` moved to 6.
SYSINFO_V2: Schema = (*_SYSINFO_HEAD, Field(5, "com_param", "u32"),
                      Field(6, "extra", "u32", repeated=True))
LOG: Schema = (Field(1, "level", "u32"), Field(2, "str", "str"))
TENSOR_DESC: Schema = (
    Field(1, "name", "str"), Field(2, "format", "u32"), Field(3, "size", "u32"),
    Field(4, "n_dims", "u32"), Field(5, "dims", "u32", repeated=True),
    Field(6, "scale", "f32"), Field(7, "zeropoint", "i32"), Field(8, "addr", "u32"),
    Field(9, "flags", "u32"),
)
OPERATOR: Schema = (
    Field(1, "name", "str"), Field(2, "type", "u32"), Field(3, "id", "u32"),
    Field(4, "duration", "f32"), Field(5, "counter_type", "u32"),
    Field(6, "counters", "u32", repeated=True), Field(7, "stack_used", "i32"),
    Field(8, "heap_used", "i32"),
)
TENSOR: Schema = (Field(1, "desc", TENSOR_DESC), Field(2, "data", DATA))
MODEL_INFO: Schema = (
    Field(1, "name", "str"), Field(2, "rtid", "u32"), Field(3, "signature", "str"),
    Field(4, "compile_datetime", "str"), Field(5, "runtime_version", "u32"),
    Field(6, "tool_version", "u32"), Field(7, "n_macc", "u64"), Field(8, "n_nodes", "u32"),
    Field(10, "n_inputs", "u32"), Field(11, "inputs", TENSOR_DESC, repeated=True),
    Field(12, "n_outputs", "u32"), Field(13, "outputs", TENSOR_DESC, repeated=True),
    Field(14, "n_activations", "u32"),
    Field(15, "activations", TENSOR_DESC, repeated=True),
    Field(16, "n_params", "u32"), Field(17, "params", TENSOR_DESC, repeated=True),
    Field(20, "runtime_desc", "str"),
)
PAYLOADS = ("sync", "sinfo", "ack", "log", "data", "op", "tensor", "minfo")


def resp_schema(header_bytes: int) -> Schema:
    """The ``respMsg`` schema for a firmware generation (its sysinfo layout)."""
    sysinfo = SYSINFO_V1 if header_bytes == 1 else SYSINFO_V2
    return (
        Field(1, "reqid", "u32"), Field(2, "state", "u32"),
        Field(10, "sync", SYNC, optional=True), Field(11, "sinfo", sysinfo, optional=True),
        Field(12, "ack", ACK, optional=True), Field(13, "log", LOG, optional=True),
        Field(15, "data", DATA, optional=True), Field(16, "op", OPERATOR, optional=True),
        Field(17, "tensor", TENSOR, optional=True),
        Field(22, "minfo", MODEL_INFO, optional=True),
    )


class WireError(ValueError):
    """Bytes that do not decode as the expected message."""


# --- protobuf wire primitives ------------------------------------------------------
def varint(value: int) -> bytes:
    """Encode a non-negative integer (or a negative one, as 64-bit two's complement)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; returns (value, next position)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes")


def _encode_scalar(kind: str, value: Any) -> tuple[int, bytes]:
    if kind in ("u32", "u64", "i32"):
        return 0, varint(int(value))
    if kind == "f32":
        return 5, struct.pack("<f", float(value))
    raw = value.encode("utf-8") if kind == "str" else bytes(value)
    return 2, varint(len(raw)) + raw


def encode(schema: Schema, values: Mapping[str, Any]) -> bytes:
    """Serialise ``values`` with every required field present, in field order (as nanopb)."""
    parts: list[bytes] = []
    for f in schema:
        if f.optional and values.get(f.name) is None:
            continue
        value = values.get(f.name, [] if f.repeated else _default(f))
        for item in value if f.repeated else (value,):
            if isinstance(f.kind, tuple):
                body = encode(f.kind, item)
                parts.append(varint(f.num << 3 | 2) + varint(len(body)) + body)
            else:
                wire, payload = _encode_scalar(f.kind, item)
                parts.append(varint(f.num << 3 | wire) + payload)
    return b"".join(parts)


def _default(f: Field) -> Any:
    if isinstance(f.kind, tuple):
        return {}
    return {"str": "", "bytes": b"", "f32": 0.0}.get(f.kind, 0)


def _scalar(kind: str, wire: int, buf: memoryview, pos: int) -> tuple[Any, int]:
    if wire == 0:
        value, pos = read_varint(buf, pos)
        if kind == "i32":
            value = (value & 0xFFFFFFFF) - (1 << 32) if value & 0x80000000 else value & 0xFFFFFFFF
        elif kind == "u32":
            value &= 0xFFFFFFFF
        return value, pos
    if wire == 5:
        if pos + 4 > len(buf):
            raise WireError("truncated fixed32")
        raw = bytes(buf[pos:pos + 4])
        value = struct.unpack("<f", raw)[0] if kind == "f32" else int.from_bytes(raw, "little")
        return value, pos + 4
    raise WireError(f"wire type {wire} for a {kind} field")


def decode(schema: Schema, data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Parse bytes into a dict; absent required fields get their zero value."""
    buf = memoryview(data)
    by_num = {f.num: f for f in schema}
    out: dict[str, Any] = {f.name: [] for f in schema if f.repeated}
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = read_varint(buf, pos)
        num, wire = tag >> 3, tag & 7
        f = by_num.get(num)
        if wire == 2:
            length, pos = read_varint(buf, pos)
            if pos + length > end:
                raise WireError(f"field {num}: {length} bytes announced, {end - pos} left")
            chunk, pos = buf[pos:pos + length], pos + length
            if f is None:
                continue
            if isinstance(f.kind, tuple):
                value: Any = decode(f.kind, chunk)
            elif f.kind == "str":
                value = bytes(chunk).decode("utf-8", errors="replace")
            elif f.kind == "bytes":
                value = bytes(chunk)
            elif f.repeated:  # packed repeated scalars
                sub = 0
                while sub < len(chunk):
                    item, sub = _scalar(f.kind, 0 if f.kind != "f32" else 5, chunk, sub)
                    out[f.name].append(item)
                continue
            else:
                raise WireError(f"field {num} ({f.name}): length-delimited, expected {f.kind}")
        elif wire in (0, 5):
            if f is None or isinstance(f.kind, tuple) or f.kind in ("str", "bytes"):
                if f is not None:
                    raise WireError(f"field {num} ({f.name}): wire type {wire}")
                _, pos = _scalar("u64", wire, buf, pos)
                continue
            value, pos = _scalar(f.kind, wire, buf, pos)
        elif wire == 1:
            pos += 8  # fixed64: not used by this protocol, skip
            continue
        else:
            raise WireError(f"unsupported wire type {wire} (field {num})")
        if f.repeated:
            out[f.name].append(value)
        else:
            out[f.name] = value
    for f in schema:
        if f.name not in out and not f.optional:
            out[f.name] = _default(f)
    return out


# --- host-side messages -------------------------------------------------------------
def delimited(body: bytes) -> bytes:
    """Host messages travel as ``varint(len) || body`` (§3.1)."""
    return varint(len(body)) + body


def request(reqid: int, cmd: int, param: int = 0, name: str = "", opt: int = 0) -> bytes:
    """A delimited ``reqMsg`` with all five fields."""
    return delimited(encode(REQ, {"reqid": reqid, "cmd": cmd, "param": param, "name": name,
                                  "opt": opt}))


def host_ack() -> bytes:
    """The host's delimited ``ackMsg{0, E_NONE}`` (``04 08 00 10 00``)."""
    return delimited(encode(ACK, {"param": 0, "error": 0}))


def host_data(datas: bytes, addr: int = 0) -> bytes:
    """A delimited input ``aiDataMsg``."""
    return delimited(encode(DATA, {"type": 0, "size": len(datas), "addr": addr,
                                   "datas": datas}))


# --- framing (§3.2, §3.3) ------------------------------------------------------------
def header(size: int, eom: bool, header_bytes: int) -> bytes:
    """A packet header: 1 byte (7-bit size) or 2 bytes (15-bit big-endian size)."""
    flag = EOM_FLAG if eom else 0
    if header_bytes == 1:
        return bytes((flag | size,))
    return bytes((flag | (size >> 8), size & 0xFF))


def parse_header(raw: bytes | bytearray | memoryview, header_bytes: int) -> tuple[bool, int]:
    """(end of message, size field) of a packet header."""
    eom = bool(raw[0] & EOM_FLAG)
    if header_bytes == 1:
        return eom, raw[0] & 0x7F
    return eom, ((raw[0] & 0x7F) << 8) | raw[1]


def host_packets(message: bytes, payload: int = DEFAULT_PAYLOAD,
                 header_bytes: int = 1) -> list[bytes]:
    """Cut a delimited host message into full-size packets (zero padding, no EOM bit)."""
    packets = []
    for start in range(0, len(message), payload):
        chunk = message[start:start + payload]
        packets.append(header(len(chunk), False, header_bytes) + chunk
                       + bytes(payload - len(chunk)))
    return packets


def target_packets(message: bytes, payload: int = DEFAULT_PAYLOAD,
                   header_bytes: int = 1) -> bytes:
    """A bare ``respMsg`` as the board sends it: full packets, then one EOM packet."""
    full = len(message) // payload
    out = bytearray()
    head = header(payload, False, header_bytes)
    for i in range(full):
        out += head
        out += message[i * payload:(i + 1) * payload]
    rest = message[full * payload:]
    out += header(len(rest), True, header_bytes) + rest + bytes(payload - len(rest))
    return bytes(out)


def version_text(word: int) -> str:
    """``0x0301`` -> ``"3.1"``."""
    return f"{word >> 8}.{word & 0xFF}"


def version_known(word: int) -> bool:
    """Whether this client can talk to a board reporting this msg version (§10)."""
    return word >> 8 == VERSION_MAJOR and (word & 0xFF) <= KNOWN_MINOR_MAX

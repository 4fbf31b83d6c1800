"""Tensors on the wire: buffer-format words, dtypes, host shapes, descriptors (§7.4, §9).

Pure functions over the decoded ``aiTensorDescMsg`` dicts of :mod:`board_protocol`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import protocol as bp

_FLOAT, _INT, _BOOL, _FXP = 1, 2, 3, 15


def format_word(dtype: np.dtype[Any] | type | str) -> int:
    """The buffer-format word of a numpy dtype (0 fractional bits)."""
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    if dt.kind == "f":
        return 0x00800040 | (_FLOAT << 17) | (bits << 7)
    if dt.kind == "b":
        return (_BOOL << 17) | (8 << 7) | 0x40
    if dt.kind in "iu":
        signed = 0x00800000 if dt.kind == "i" else 0
        return signed | (_INT << 17) | (bits << 7) | 0x40
    raise bp.WireError(f"dtype {dt} has no buffer format (float, int, uint or bool are accepted)")


def format_dtype(fmt: int) -> np.dtype[Any]:
    """The numpy dtype of a buffer-format word; raises for formats the host cannot read."""
    type_id, bits, signed = (fmt >> 17) & 0xF, (fmt >> 7) & 0x7F, bool(fmt >> 23 & 1)
    if type_id == _FLOAT and bits in (16, 32, 64):
        return np.dtype(f"<f{bits // 8}")
    if type_id == _BOOL and bits == 8:
        return np.dtype(np.bool_)
    if type_id in (_INT, _FXP) and bits in (8, 16, 32, 64):
        return np.dtype(f"<{'i' if signed else 'u'}{bits // 8}")
    if type_id in (_INT, _FXP) and bits == 1:  # packed 1-bit, 32 per word
        return np.dtype("<i4" if signed else "<u4")
    raise bp.WireError(f"buffer format 0x{fmt:08X} (type {type_id}, {bits} bits) is not supported")


def fractional_bits(fmt: int) -> int:
    """Fractional bits of a format word (stored +64)."""
    return (fmt & 0x7F) - 64


def host_shape(n_dims: int, dims: Sequence[int]) -> tuple[int, ...]:
    """The host-side array shape from ``n_dims`` and ``dims`` (table of §9.1)."""
    fmt, rank = n_dims >> 24, n_dims & 0xFFFFFF
    d = tuple(dims[:rank]) if rank <= len(dims) else tuple(dims)
    kind = fmt & 0xF
    if kind in (bp.SHAPE_UND, bp.SHAPE_RAW):
        return d
    if kind == bp.SHAPE_ST_AI:
        return d if fmt & bp.SHAPE_HAS_BATCH and d and d[0] == 1 else (1, *d)
    if fmt == bp.SHAPE_BHWC:
        if len(d) == 2:
            return (d[0], 1, 1, d[1])
        if len(d) == 3:
            return (d[0], d[1], 1, d[2])
        return d
    if fmt == bp.SHAPE_BCHW:
        orders = {4: (0, 3, 1, 2), 5: (0, 1, 4, 2, 3), 6: (0, 1, 2, 5, 3, 4)}
        if len(d) not in orders:
            raise bp.WireError(f"BCHW shape of rank {len(d)} (4..6 accepted)")
        return tuple(d[i] for i in orders[len(d)])
    if fmt == bp.SHAPE_BCWH:
        orders = {4: (0, 3, 2, 1), 5: (0, 3, 2, 4, 1), 6: (0, 3, 2, 4, 5, 1)}
        if len(d) == 1:
            return (1, 1, 1, d[0])
        return tuple(d[i] for i in orders[len(d)]) if len(d) in orders else (1,)
    return (1,)


@dataclass(frozen=True)
class TensorDesc:
    """A decoded ``aiTensorDescMsg``: name, dtype, host shape, quantisation, flags."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    flags: int = 0
    format: int = 0
    addr: int = 0
    dims: tuple[int, ...] = field(default=())

    @property
    def nbytes(self) -> int:
        """Bytes of one sample of this tensor (exact: dims a board announces may be huge)."""
        return math.prod(int(d) for d in self.shape) * self.dtype.itemsize

    @classmethod
    def from_msg(cls, msg: Mapping[str, Any]) -> TensorDesc:
        """Build from a decoded message dict."""
        return cls(name=msg["name"], dtype=format_dtype(msg["format"]),
                   shape=host_shape(msg["n_dims"], msg["dims"]), scale=msg["scale"],
                   zero_point=msg["zeropoint"], flags=msg["flags"], format=msg["format"],
                   addr=msg["addr"], dims=tuple(msg["dims"]))

    def array(self, datas: bytes) -> np.ndarray:
        """The tensor bytes as an array of this descriptor's dtype and shape."""
        if not datas or self.flags & bp.TENSOR_NO_DATA:
            return np.empty((0,), dtype=self.dtype)
        if len(datas) != self.nbytes:
            raise bp.WireError(f"tensor {self.name or '?'}: {len(datas)} bytes received, "
                               f"{self.nbytes} expected for {self.dtype}{list(self.shape)}")
        return np.frombuffer(datas, dtype=self.dtype).reshape(self.shape)

    def dequantize(self, arr: np.ndarray) -> np.ndarray:
        """Real values of raw data: affine (scale, zero point) or fixed point; else as is."""
        fbits = fractional_bits(self.format)
        if arr.dtype.kind in "iu" and fbits != 0:
            return arr.astype(np.float32) * np.float32(2.0 ** -fbits)
        if arr.dtype.kind in "iu" and self.scale != 0.0:
            return (arr.astype(np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)
        return arr


def tensor_desc_msg(name: str, dtype: np.dtype[Any], shape: Sequence[int], flags: int,
                    scale: float = 0.0, zero_point: int = 0, addr: int = 0) -> dict[str, Any]:
    """An ``aiTensorDescMsg`` dict with an UND (dims as is) shape, as N6 firmware sends."""
    size = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    return {"name": name, "format": format_word(dtype), "size": size,
            "n_dims": (bp.SHAPE_UND << 24) | len(shape), "dims": [int(d) for d in shape],
            "scale": scale, "zeropoint": zero_point, "addr": addr, "flags": flags}


def decode_counters(counter_type: int, counters: Sequence[int]) -> list[int]:
    """Counter values: pairs of 32-bit words (64B format, low first) or single words."""
    if (counter_type >> 16) & 0xFFFF == bp.COUNTER_FMT_64B:
        return [counters[i] | (counters[i + 1] << 32) for i in range(0, len(counters) - 1, 2)]
    return list(counters)


def check_tensor_size(desc: TensorDesc, limit: int) -> None:
    """Refuse a descriptor that announces more than ``limit`` bytes, before any data is read.

    :raises protocol.WireError: naming the tensor, its type and shape, and the limit.
    """
    if desc.nbytes > limit:
        raise bp.WireError(
            f"tensor {desc.name or '?'}: its descriptor announces {desc.dtype}"
            f"{list(desc.shape)} = {desc.nbytes} bytes; at most {limit}"
            " bytes per tensor are accepted")


def received_tensor(msg: Mapping[str, Any], limit: int) -> tuple[TensorDesc, np.ndarray]:
    """The descriptor and array of a received tensor message (its size checked first).

    :raises protocol.WireError: an oversized or malformed tensor.
    """
    desc = TensorDesc.from_msg(msg["desc"])
    check_tensor_size(desc, limit)
    return desc, desc.array(msg["data"]["datas"])

"""The tool's buffers as a c_info lists them, placed in the pools that hold the bytes.

Counted pools are the writable ones (``rights == ACC_WRITE``) that are not unions of
other pools and not user-allocated I/O pools: ``memory_footprint.activations`` is
their used bytes. A VIRTUAL pool (a ``memory_pools`` entry with non-empty ``subpools``,
e.g. ``cpuRAM2_npuRAM3_npuRAM4_npuRAM5_npuRAM6``) lays its member pools end to end by
address; a buffer the tool placed in it lies in the member pool that holds its
address (split where it crosses from one member into the next), so its bytes count
where the memory is. Parameters (``is_param``) are never activations, even in a
writable pool; they are kept apart as weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

KINDS = ("core", "cut_16bit", "copies", "float_conversions", "pad_layers", "scratch")


@dataclass
class ToolBuffer:
    """One buffer of the tool in a counted pool, with what kind of tensor it is."""

    name: str
    pool: int
    offset: int
    size: int
    start: int
    end: int
    scratch: bool
    is_float: bool
    kind: str = "core"  # one of KINDS, or "weights" for a parameter
    nbits: int = 0


def address(value: Any) -> int | None:
    """An address field of a c_info (an int, or a string, decimal or 0x hex)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:
            return None
    return None


def counted_pools(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The pools whose used bytes make ``memory_footprint.activations``, by id."""
    return {
        int(p["id"]): p
        for p in data.get("memory_pools") or []
        if isinstance(p, dict)
        and p.get("rights") == "ACC_WRITE"
        and not p.get("subpools")
        and not p.get("user_allocated")
        and "id" in p
    }


def _virtual_members(
    data: dict[str, Any], counted: dict[int, dict[str, Any]]
) -> dict[int, list[tuple[int, int, int]]]:
    """Virtual pool id -> its members as (member id, start address, size), by address."""
    found: dict[int, list[tuple[int, int, int]]] = {}
    for pool in data.get("memory_pools") or []:
        if not isinstance(pool, dict) or not pool.get("subpools"):
            continue
        members = []
        for member in pool["subpools"]:
            entry = counted.get(int(member)) if isinstance(member, int) else None
            start = address(entry.get("address")) if entry else None
            size = int(entry.get("size_bytes") or 0) if entry else 0
            if entry is not None and start is not None and size > 0:
                members.append((int(member), start, size))
        if members:
            found[int(pool["id"])] = sorted(members, key=lambda m: m[1])
    return found


def _kind(raw: dict[str, Any], scratch: bool, is_float: bool, has_16: bool) -> str:
    name = str(raw.get("name", "")).lower()
    flags = str(raw.get("flags", "")).upper()
    if scratch:
        return "scratch"
    if "pad" in name:
        return "pad_layers"
    if "transpose" in name or "copy" in name or "_cp_" in name:
        return "copies"
    if is_float and "INPUTS" not in flags and "OUTPUTS" not in flags:
        return "float_conversions"
    if has_16 and int(raw.get("nbits") or 8) == 16:
        return "cut_16bit"
    return "core"


def read_buffers(
    data: dict[str, Any], pools: dict[int, dict[str, Any]]
) -> tuple[list[ToolBuffer], list[ToolBuffer]]:
    """The tool's activation buffers and its parameters in the counted ``pools``."""
    virtual = _virtual_members(data, pools)
    raw = [
        b for b in data.get("buffers") or []
        if isinstance(b, dict) and (b.get("mpool_id") in pools or b.get("mpool_id") in virtual)
    ]
    acts = [b for b in raw if not b.get("is_param")]
    last = max((int((b.get("epochs") or {}).get("end", 0)) for b in raw), default=0)
    formats = [str(b.get("format", "")) for b in acts]
    has_int = any("FLOAT" not in f and f for f in formats)
    # 16-bit tensors are a cut only in a network whose tensors are otherwise 8-bit.
    has_16 = any(int(b.get("nbits") or 0) == 8 for b in acts)
    buffers: list[ToolBuffer] = []
    params: list[ToolBuffer] = []
    for b in raw:
        epochs = b.get("epochs") or {"start": 0, "end": last}
        scratch = "SCRATCH" in str(b.get("flags", "")).upper() or "scratch" in str(
            b.get("name", "")
        ).lower()
        # Float buffers are a cost only in a network that is otherwise integer.
        is_float = has_int and "FLOAT" in str(b.get("format", ""))
        param = bool(b.get("is_param"))
        buf = ToolBuffer(
            name=str(b.get("name", b.get("id"))),
            pool=int(b["mpool_id"]),
            offset=int(b.get("offset_start") or 0),
            size=int(b.get("size_bytes") or 0),
            start=int(epochs.get("start", 0)),
            end=int(epochs.get("end", last)),
            scratch=scratch and not param,
            is_float=is_float,
            kind="weights" if param else _kind(b, scratch, is_float, has_16),
            nbits=int(b.get("nbits") or 0),
        )
        pieces = _place(buf, virtual.get(buf.pool), pools) if buf.pool in virtual else [buf]
        (params if param else buffers).extend(pieces)
    return buffers, params


def _place(
    buf: ToolBuffer, members: list[tuple[int, int, int]] | None, pools: dict[int, dict[str, Any]]
) -> list[ToolBuffer]:
    """A virtual pool's buffer split over the member pools its bytes lie in."""
    if not members:
        return []
    base = members[0][1]
    lo, hi = base + buf.offset, base + buf.offset + buf.size
    pieces = []
    for member, start, size in members:
        top = start + size
        a, b = max(lo, start), min(hi, top)
        if a < b:
            name = buf.name if (a, b) == (lo, hi) else f"{buf.name} [{pools[member].get('name')} part]"
            pieces.append(replace(buf, name=name, pool=member, offset=a - start, size=b - a))
    return pieces


def union(spans: list[tuple[int, int]]) -> int:
    """Bytes covered by the address ranges ``spans``."""
    total, top = 0, None
    for lo, hi in sorted(spans):
        if top is None or lo > top:
            total += hi - lo
            top = hi
        elif hi > top:
            total += hi - top
            top = hi
    return total


def profile(bufs: list[ToolBuffer], align: int = 1) -> list[int]:
    """Bytes in use at each epoch: the union of the live buffers' address ranges
    (ends rounded up to ``align``)."""
    if not bufs:
        return [0]
    nsteps = max(b.end for b in bufs) + 1
    starts: list[list[ToolBuffer]] = [[] for _ in range(nsteps)]
    for b in bufs:
        starts[max(b.start, 0)].append(b)
    live: list[ToolBuffer] = []
    out = []
    for t in range(nsteps):
        live.extend(starts[t])
        spans = []
        for b in live:
            hi = b.offset + b.size
            if align > 1:
                hi = -(-hi // align) * align
            spans.append((b.offset, hi))
        out.append(union(spans))
        live = [b for b in live if b.end > t]
    return out

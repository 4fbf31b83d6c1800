"""The tool's activation buffers as read from a c_info, and their address profile."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ToolBuffer:
    """One activation buffer of the tool, with what kind of tensor it is."""

    name: str
    pool: int
    offset: int
    size: int
    start: int
    end: int
    scratch: bool
    is_float: bool
    kind: str = "core"  # core | cut_16bit | copies | float_conversions | pad_layers | scratch


def _union(spans: list[tuple[int, int]]) -> int:
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
        out.append(_union(spans))
        live = [b for b in live if b.end > t]
    return out

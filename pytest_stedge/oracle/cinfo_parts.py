"""The parts of the tool's activation figure, from the liveness of its own buffers.

With ``S(kinds)`` the liveness bound (largest sum of live sizes at one epoch, exact
aliases once) of the tool's buffers of those kinds over every counted pool, the
figure is the telescoping sum

    floor                                        the model's floor (the oracle)
  + max(floor, S(core)) - floor                  the tool's own tensors at their peak
  + P_k - P_(k-1), P_k = max(P_(k-1), S(..k))    tensors the tool added, by kind
  + sum_internal L_p - S(internal)               pool split (L_p: one pool's liveness)
  + S(int) + S(ext) - S(all) + sum_ext L_p - S(ext)   external RAM cannot share with on-chip
  + sum_p (U_p - L_p)                            overlay (U_p: largest address union) <= 0
  + sum_p (min(U'_p, used_p) - U_p)              alignment (U'_p: buffer ends aligned)
  + sum_p (used_p - min(U'_p, used_p))           reuse lost: high-water mark above the union

which equals ``sum_p used_p``, the reported figure on every real c_info. Every part
but overlay is >= 0 by construction; a floor above the tool's whole liveness would
show as a negative ``floor_above_tool`` part (the oracle's rules are wrong there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .cinfo_buffers import ToolBuffer, profile

ADDED_KINDS = ("cut_16bit", "copies", "float_conversions", "pad_layers", "scratch")
_WORDS = {
    "cut_16bit": "16-bit intermediate tensors the tool cut an 8-bit operator into",
    "copies": "copies and layout transposes the tool inserted",
    "float_conversions": "float buffers (4 bytes per element) in an integer network",
    "pad_layers": "padded tensors the tool stores for pad layers",
    "scratch": "scratch buffers of the kernels",
}


def _merge_aliases(bufs: Iterable[ToolBuffer]) -> list[ToolBuffer]:
    """Buffers at the same pool, offset and size whose epochs overlap are one buffer."""
    merged: dict[tuple[int, int, int], list[ToolBuffer]] = {}
    out: list[ToolBuffer] = []
    for b in sorted(bufs, key=lambda b: (b.pool, b.offset, b.size, b.start)):
        group = merged.setdefault((b.pool, b.offset, b.size), [])
        if group and group[-1].end >= b.start:
            last = group[-1]
            last.end = max(last.end, b.end)
            continue
        copy = ToolBuffer(**vars(b))
        group.append(copy)
        out.append(copy)
    return out


def _liveness(bufs: list[ToolBuffer], nsteps: int) -> int:
    delta = [0] * (nsteps + 1)
    for b in bufs:
        delta[max(b.start, 0)] += b.size
        delta[b.end + 1] -= b.size
    best = live = 0
    for k in range(nsteps):
        live += delta[k]
        best = max(best, live)
    return best


def explain_parts(
    bufs: list[ToolBuffer],
    pools: dict[int, dict[str, Any]],
    used: dict[int, int],
    external: set[int],
    reported: int,
    floor: int | None,
) -> dict[str, Any]:
    """Parts summing exactly to ``reported`` (see the module docstring)."""
    unique = _merge_aliases(bufs)
    nsteps = max((b.end for b in unique), default=0) + 2

    def S(keep: Callable[[ToolBuffer], bool]) -> int:
        return _liveness([b for b in unique if keep(b)], nsteps)

    parts: list[dict[str, Any]] = []

    def part(kind: str, value: int, words: str) -> None:
        parts.append({"kind": kind, "bytes": int(value), "words": words})

    core = S(lambda b: b.kind == "core")
    if floor is not None:
        part("model", floor, f"the model needs at least {floor:,} B (the oracle's floor)")
        level = max(floor, core)
        part(
            "tool_tensors",
            level - floor,
            "the tool's own tensors for the model's operators need this much more at their "
            "peak (a different operator order, tensors it stores that the target can stream)",
        )
    else:
        level = core
        part("tool_tensors", core, f"the tool's own tensors need {core:,} B at their peak")
    kinds = {"core"}
    for kind in ADDED_KINDS:
        kinds.add(kind)
        count = sum(1 for b in unique if b.kind == kind)
        new = max(level, _liveness([b for b in unique if b.kind in kinds], nsteps))
        part(kind, new - level, f"{count} buffer(s): {_WORDS[kind]}")
        level = new
    s_all = S(lambda b: True)
    if level > s_all:  # only when the floor exceeds everything the tool holds at once
        part(
            "floor_above_tool",
            s_all - level,
            "the oracle's floor is above the liveness of all the tool's buffers: its rules "
            "miss something this tool does",
        )
    internal = [p for p in pools if p not in external]
    ext = [p for p in pools if p in external]
    by_pool = {p: [b for b in unique if b.pool == p] for p in pools}
    live_p = {p: _liveness(by_pool[p], nsteps) for p in pools}
    s_int = S(lambda b: b.pool not in external)
    s_ext = S(lambda b: b.pool in external)
    part(
        "pool_split",
        sum(live_p[p] for p in internal) - s_int,
        f"tensors split over {len(internal)} on-chip pool(s) cannot share memory across pools",
    )
    names = ", ".join(str(pools[p].get("name")) for p in ext) or "none"
    part(
        "external_ram",
        (s_int + s_ext - s_all) + (sum(live_p[p] for p in ext) - s_ext),
        f"tensors placed in external RAM (pools: {names}) cannot share memory with on-chip ones",
    )
    overlay = align = reuse = 0
    rows = []
    for p, pool in pools.items():
        union = max(profile(by_pool[p]))
        alignment = int(pool.get("alignment") or 1)
        aligned = max(profile(by_pool[p], alignment)) if alignment > 1 else union
        capped = max(min(aligned, used[p]), union)
        overlay += union - live_p[p]
        align += capped - union
        reuse += used[p] - capped
        rows.append(
            {
                "id": p,
                "name": pool.get("name"),
                "used_bytes": used[p],
                "liveness_bytes": live_p[p],
                "union_bytes": union,
                "bound_bytes": union,
                "buffers": len(by_pool[p]),
                "external": p in external,
                "alignment": pool.get("alignment"),
            }
        )
    part(
        "overlay",
        overlay,
        "outputs the tool wrote over the inputs they consume (the address ranges of live "
        "buffers overlap): the only part that can be negative",
    )
    part("alignment", align, "buffer ends rounded up to the pools' alignment")
    part(
        "reuse_lost",
        reuse,
        "memory the allocator did not reuse: the pools' high-water marks exceed the largest "
        "set of live address ranges",
    )
    rest = reported - sum(used.values())
    if rest:
        part(
            "unpooled",
            rest,
            "bytes of memory_footprint.activations outside every counted pool",
        )
    return {"parts": parts, "pools": rows, "tool_bound": s_all}

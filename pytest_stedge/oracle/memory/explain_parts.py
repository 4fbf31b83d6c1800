"""The tool's activation figure, measured part by part from its own named buffers.

Every pool's figure is its high-water mark ``used``. At any epoch ``e`` it splits into
what is live there and what is not:

    used = live sizes at e - bytes overlaid at e + alignment at e
           + (aligned union at the pool's peak - aligned union at e)   the pool peaks elsewhere
           + (used - aligned union at the pool's peak)                 memory never reused

The epoch chosen is the one where the oracle's floor tensors are all live in the
tool's buffers (matched by size: a stored tensor is at least as big as the model's,
up to its padding), so the live bytes split into the floor's tensors, the floor's
in-place writes the tool's buffers still count, and the rest by kind: model tensors
beyond the floor's set, 16-bit cuts, copies, float conversions, pad layers and scratch.
Each part is a sum over named buffers, none is the difference of two figures of a
chain, and none depends on the floor's VALUE: the floor enters once, as the ``model``
part. What the parts do not account for (floor tensors the tool never holds together,
a floor that does not add up to its own tensors, a footprint outside the pools) is the
one ``unexplained`` figure: a wrong floor shows there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .tool_buffers import KINDS, ToolBuffer, union

_WORDS = {
    "model": "the model's tensors as the oracle's floor holds them",
    "in_place_assumed": "bytes the floor saves by writing an output over its dying input; "
    "the tool's buffers count both (the overlay part shows what the tool shared)",
    "tool_tensors": "model tensors the tool holds there beyond the floor's (stored where "
    "the floor fuses them, kept longer, another order)",
    "cut_16bit": "16-bit intermediate tensors the tool cut an 8-bit operator into",
    "copies": "copies and layout transposes the tool inserted",
    "float_conversions": "float buffers (4 bytes per element) in an integer network",
    "pad_layers": "padded tensors the tool stores for pad layers",
    "scratch": "scratch buffers of the kernels, live there",
    "weights_in_activation_pools": "parameters the tool placed in writable pools",
    "overlay": "live buffers sharing addresses (outputs written over the inputs they "
    "consume): the only part that can be negative",
    "alignment": "buffer ends rounded up to the pools' alignment, and tensors stored "
    "larger than the model's",
    "peak_elsewhere": "the pool holds more at another epoch than where the floor's "
    "tensors are live",
    "pool_split": "on-chip pools peak at different epochs: what one pool holds at its "
    "peak cannot reuse another pool's memory",
    "external_ram": "external RAM pools peak at other epochs: their memory is not shared "
    "with on-chip pools",
    "reuse_lost": "memory the allocator did not reuse: a pool's high-water mark above "
    "the live address ranges at its own peak",
}
ORDER = (
    "model", "in_place_assumed", "tool_tensors", *KINDS[1:], "weights_in_activation_pools",
    "overlay", "alignment", "peak_elsewhere", "pool_split", "external_ram", "reuse_lost",
)


@dataclass(frozen=True)
class FloorTensors:
    """What the oracle's floor counts: its value, its tensors and its in-place writes."""

    bytes: int
    tensors: list[tuple[str, int]]
    saved: int = 0
    in_place: tuple[str, ...] = ()


def merge_aliases(bufs: Iterable[ToolBuffer]) -> list[ToolBuffer]:
    """Buffers at the same pool, offset and size whose epochs overlap are one buffer."""
    merged: dict[tuple[int, int, int], list[ToolBuffer]] = {}
    out: list[ToolBuffer] = []
    for b in sorted(bufs, key=lambda b: (b.pool, b.offset, b.size, b.start)):
        group = merged.setdefault((b.pool, b.offset, b.size), [])
        if group and group[-1].end >= b.start:
            last = group[-1]
            last.end = max(last.end, b.end)
            if last.kind == "core" and b.kind != "core":
                last.kind = b.kind  # a pad layer or copy done in place names the buffer
            continue
        copy = replace(b)
        group.append(copy)
        out.append(copy)
    return out


def _aligned_union(bufs: list[ToolBuffer], align: int) -> int:
    def top(b: ToolBuffer) -> int:
        hi = b.offset + b.size
        return -(-hi // align) * align if align > 1 else hi

    return union([(b.offset, top(b)) for b in bufs])


def _fits(size: int, b: ToolBuffer, exact: bool) -> bool:
    """Whether buffer ``b`` can hold a model tensor of ``size`` bytes: the same size up to
    padding (``exact``), or the tensor stored in 16 or 32 bits, or padded by a pad layer."""
    slack = max(16, size // 100)
    if exact:
        return size <= b.size <= size + slack
    if b.nbits == 16 and abs(b.size - 2 * size) <= slack:
        return True
    if b.nbits == 32 and abs(b.size - 4 * size) <= slack:
        return True
    return b.kind == "pad_layers" and size <= b.size <= size + size // 2


def _match(
    floor: FloorTensors, live: list[ToolBuffer]
) -> tuple[dict[int, tuple[str, int]], list[tuple[str, int]]]:
    """Floor tensors matched to live tool buffers: same size first, then stored wider or
    padded; each buffer holds one tensor. Buffer index -> (tensor, bytes), and the
    tensors left over. Smallest tensor first, each into the smallest buffer that holds
    it: a larger tensor first could take the only buffer a smaller one fits (90 and
    100 B tensors in 100 and 110 B buffers)."""
    free = sorted(
        (k for k, b in enumerate(live) if b.kind != "scratch"), key=lambda k: live[k].size
    )
    matched: dict[int, tuple[str, int]] = {}
    left = sorted(floor.tensors, key=lambda t: t[1])
    for exact in (True, False):
        missing = []
        for name, size in left:
            found = next((k for k in free if _fits(size, live[k], exact)), None)
            if found is None:
                missing.append((name, size))
                continue
            free.remove(found)
            matched[found] = (name, size)
        left = missing
    return matched, left


def _excess_kind(b: ToolBuffer, size: int) -> str:
    """Where the bytes of a tensor stored larger than the model's go."""
    if _fits(size, b, True):
        return "alignment"
    if b.kind == "pad_layers":
        return "pad_layers"
    return "cut_16bit" if b.nbits == 16 else "float_conversions"


def measure(
    bufs: list[ToolBuffer],
    params: list[ToolBuffer],
    pools: dict[int, dict[str, Any]],
    used: dict[int, int],
    external: set[int],
    reported: int,
    floor: FloorTensors | None,
) -> dict[str, Any]:
    """Parts of ``reported`` measured from the buffers (see the module docstring)."""
    unique = merge_aliases(bufs)
    last = max((b.end for b in unique), default=0)
    # Parameters in a writable pool occupy it at every epoch.
    constant = [replace(p, start=0, end=last) for p in params]
    epochs = sorted({0} | {max(b.start, 0) for b in unique})
    align = {p: int(pool.get("alignment") or 1) for p, pool in pools.items()}

    def live(e: int) -> list[ToolBuffer]:
        return [b for b in unique if b.start <= e <= b.end]

    def pool_union(e: int, p: int, aligned: bool) -> int:
        here = [b for b in live(e) + constant if b.pool == p]
        return _aligned_union(here, align[p] if aligned else 1)

    used_pools = [p for p in pools if used.get(p)]
    peak: dict[int, int] = {}
    for p in used_pools:
        peak[p] = max(epochs, key=lambda e: (pool_union(e, p, True), -e))

    def score(e: int) -> tuple[int, int, int]:
        found = _match(floor, live(e))[0] if floor else {}
        here = live(e)
        same = sum(s for k, (_, s) in found.items() if _fits(s, here[k], True))
        matched = sum(s for _, s in found.values())
        return matched, same, sum(pool_union(e, p, True) for p in used_pools)

    at = max(epochs, key=lambda e: (*score(e), -e))
    here = live(at)
    matched, missing = _match(floor, here) if floor else ({}, [])

    parts: dict[str, list[tuple[str, int]]] = {kind: [] for kind in ORDER}
    if floor is not None:
        parts["model"] = [(name, size) for name, size in floor.tensors]
        if floor.saved:
            parts["in_place_assumed"] = [(name, 0) for name in floor.in_place]
    for k, b in enumerate(here):
        if k in matched:
            excess = b.size - matched[k][1]
            if excess:
                kind = _excess_kind(b, matched[k][1])
                parts[kind].append((f"{b.name} (stored {excess:,} B larger)", excess))
            continue
        kind = "tool_tensors" if b.kind == "core" else b.kind
        parts[kind].append((b.name, b.size))
    weights_counted = _weights_counted(reported, used, params)
    if weights_counted:
        parts["weights_in_activation_pools"] = [(p.name, p.size) for p in params]
    figures: dict[str, int] = {kind: sum(s for _, s in items) for kind, items in parts.items()}
    if floor is not None:
        figures["model"] = floor.bytes
        figures["in_place_assumed"] = floor.saved
    rows = []
    for p, pool in pools.items():
        mine = [b for b in here if b.pool == p]
        held = mine + [c for c in constant if c.pool == p]
        sizes = sum(b.size for b in held)
        plain = _aligned_union(held, 1)
        aligned_here = _aligned_union(held, align[p])
        figures["overlay"] += plain - sizes
        if plain < sizes:
            parts["overlay"] += _shared(held)
        figures["alignment"] += aligned_here - plain
        if aligned_here > plain:
            parts["alignment"].append((f"{pool.get('name')} ends", aligned_here - plain))
        top = pool_union(peak[p], p, True) if p in peak else aligned_here
        elsewhere = top - aligned_here
        if elsewhere:
            kind = "external_ram" if p in external else (
                "pool_split" if len(used_pools) > 1 else "peak_elsewhere"
            )
            figures[kind] += elsewhere
            names = [b for b in live(peak[p]) if b.pool == p and not b.start <= at <= b.end]
            parts[kind] += [(f"{b.name} (epoch {peak[p]})", b.size) for b in names]
        lost = used.get(p, 0) - max(top, aligned_here)
        if lost:
            figures["reuse_lost"] += lost
            where = f"{pool.get('name')} above epoch {peak.get(p, at)}"
            parts["reuse_lost"].append((where, lost))
        rows.append(_row(p, pool, used.get(p, 0), unique, top, p in external))
    # Parameters sit in the pools' address ranges either way; a footprint that leaves
    # them out is matched by leaving their part out.
    unexplained = reported - sum(figures.values())
    out_parts = [
        {
            "kind": kind,
            "bytes": figures[kind],
            "buffers": [n for n, _ in sorted(parts[kind], key=lambda item: -item[1])],
            "words": _WORDS[kind],
        }
        for kind in ORDER
        if (kind == "tool_tensors" or (kind == "model" and floor is not None))
        or figures[kind] or parts[kind]
    ]
    return {
        "parts": out_parts,
        "unexplained_bytes": unexplained,
        "epoch": at,
        "floor_tensors_missing": [n for n, _ in missing],
        "pools": rows,
        "tool_bound": _liveness(unique),
        "clean": unexplained == 0 and all(
            int(str(p["bytes"])) >= 0 or p["kind"] == "overlay" for p in out_parts
        ),
    }


def _weights_counted(reported: int, used: dict[int, int], params: list[ToolBuffer]) -> bool:
    """Whether ``memory_footprint.activations`` counts the parameters in writable pools."""
    weights = sum(p.size for p in params)
    total = sum(used.values())
    return bool(weights) and abs(reported - total) <= abs(reported - (total - weights))


def _shared(bufs: list[ToolBuffer]) -> list[tuple[str, int]]:
    """Pairs of live buffers whose address ranges overlap, with the bytes they share."""
    found = []
    ordered = sorted(bufs, key=lambda b: b.offset)
    for k, a in enumerate(ordered):
        for b in ordered[k + 1:]:
            if b.offset >= a.offset + a.size:
                break
            shared = min(a.offset + a.size, b.offset + b.size) - b.offset
            found.append((f"{b.name} over {a.name}", shared))
    return found


def _liveness(bufs: list[ToolBuffer]) -> int:
    nsteps = max((b.end for b in bufs), default=0) + 2
    delta = [0] * (nsteps + 1)
    for b in bufs:
        delta[max(b.start, 0)] += b.size
        delta[b.end + 1] -= b.size
    best = running = 0
    for k in range(nsteps):
        running += delta[k]
        best = max(best, running)
    return best


def _row(
    p: int, pool: dict[str, Any], used: int, bufs: list[ToolBuffer], top: int, external: bool
) -> dict[str, Any]:
    mine = [b for b in bufs if b.pool == p]
    return {
        "id": p,
        "name": pool.get("name"),
        "used_bytes": used,
        "liveness_bytes": _liveness(mine),
        "union_bytes": top,
        "buffers": len(mine),
        "external": external,
        "alignment": pool.get("alignment"),
    }

"""Place the typical deployment's buffers in the pools of an mpool, as the tool does.

The tool fills the writable pools in the order the profile lists them: a tensor that
does not fit a pool (its place there would end past the pool's size) goes to the
next one. Tensors in different pools never share memory, so a model whose working
set overflows its first pool needs more in total than one big pool would: the
stm32f4 mobilenetv2 build with its board's pools puts the 202,800 B pad output and the
196,608 B tensor it overlays in external SDRAM (POOL_0_RAM holds 151,889 B), and
reports 339,796 B where a single pool needs 202,800 B.

Larger tensors are placed first (they are the ones that do not fit); each pool's share
is then planned again by :func:`.planner.plan_offsets` and the better of the two
placements kept. The figure is the sum of the pools' high-water marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..deployment.mpool import Pool
from .planner import Item, Plan, plan_offsets


@dataclass
class PoolPlan:
    """Where the buffers went: per pool its bytes used and its buffers."""

    size: int
    pools: list[dict[str, object]] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)  # buffers no pool could hold


def _aligned(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment if alignment > 1 else size


def _offset(item: Item, placed: list[tuple[Item, int]], capacity: int | None) -> int | None:
    """Best-fit offset of ``item`` among the placed items whose lifetimes meet its own."""
    spans = sorted(
        (off, off + other.size)
        for other, off in placed
        if other.start <= item.end and item.start <= other.end
    )
    best: int | None = None
    best_gap: int | None = None
    top = 0
    for lo, hi in spans:
        gap = lo - top
        if gap >= item.size and (best_gap is None or gap < best_gap):
            best, best_gap = top, gap
        top = max(top, hi)
    chosen = top if best is None else best
    if capacity is not None and chosen + item.size > capacity:
        return None
    return chosen


def plan_pools(items: Sequence[Item], pools: Sequence[Pool], alignment: int = 1) -> PoolPlan:
    """Place ``items`` in ``pools`` (profile order), spilling what does not fit."""
    usable = [p for p in pools if p.size is None or p.size > 0]
    if not usable:
        single = plan_offsets(list(items))
        return PoolPlan(single.size, [{"name": "(one pool)", "bytes": single.size, "buffers": len(items)}])
    raw = {it.name: it.size for it in items}
    shares: list[list[tuple[Item, int]]] = [[] for _ in usable]
    overflow: list[str] = []
    ordered = sorted(items, key=lambda it: (-it.size, it.start, it.name))
    for item in ordered:
        for k, pool in enumerate(usable):
            sized = Item(item.name, _aligned(item.size, max(pool.alignment, alignment)), item.start, item.end)
            found = _offset(sized, shares[k], pool.size)
            if found is not None:
                shares[k].append((sized, found))
                break
        else:  # no pool holds it: the last one takes it (the tool reports the overflow)
            overflow.append(item.name)
            sized = Item(item.name, _aligned(item.size, max(usable[-1].alignment, alignment)), item.start, item.end)
            found = _offset(sized, shares[-1], None)
            shares[-1].append((sized, found or 0))
    rows: list[dict[str, object]] = []
    total = 0
    for pool, share in zip(usable, shares):
        # buffers start aligned; the pool ends where its last buffer's bytes end
        greedy = max((off + raw[it.name] for it, off in share), default=0)
        used = greedy
        if share:
            again: Plan = plan_offsets([it for it, _ in share], lower_bound=None)
            ends = {it.name: raw[it.name] for it, _ in share}
            used = min(greedy, max(again.offsets[n] + ends[n] for n in again.offsets))
        rows.append({"name": pool.name, "bytes": used, "buffers": len(share), "external": pool.external})
        total += used
    return PoolPlan(total, rows, overflow)

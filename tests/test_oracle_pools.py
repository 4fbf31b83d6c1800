"""Placing buffers in an mpool's pools (``oracle/memory/pools.py``), on buffer sets counted by hand.

The rules placed here: the writable pools are filled in the profile's order, largest
buffer first; a buffer goes to the first pool where its best-fit place (the smallest
hole between the buffers alive with it that holds it, else above them) ends within the
pool's size, else to the next pool; a buffer starts at a multiple of the pool's
alignment and a pool ends where its last buffer's bytes end; a pool of no known size
holds anything, a pool of size 0 is no pool; what no pool holds goes to the last pool
and is reported as overflow. Lifetimes are inclusive step ranges.
"""

from __future__ import annotations

from pytest_stedge.oracle.deployment.mpool import Pool
from pytest_stedge.oracle.memory.planner import Item
from pytest_stedge.oracle.memory.pools import PoolPlan, plan_pools


def _bytes(plan: PoolPlan) -> dict[str, object]:
    return {str(p["name"]): p["bytes"] for p in plan.pools}


def test_a_buffer_that_fills_a_pool_exactly_stays_in_it() -> None:
    # 100 B at offset 0 of a 100 B pool ends at 100: it fits
    plan = plan_pools([Item("a", 100, 0, 0)], [Pool("P0", 100), Pool("P1", None)])
    assert _bytes(plan) == {"P0": 100, "P1": 0}
    assert plan.size == 100 and plan.overflow == []


def test_a_hole_of_exactly_the_buffers_size_is_used() -> None:
    # A (64 B, step 0) at 0; B (64 B, steps 0-2) above it at 64; C (64 B, steps 1-2)
    # lives with B only: the hole [0, 64) A leaves holds it exactly. The 128 B pool
    # holds all three; above B (at 128) C would end at 192 and spill to P1.
    items = [Item("A", 64, 0, 0), Item("B", 64, 0, 2), Item("C", 64, 1, 2)]
    plan = plan_pools(items, [Pool("P0", 128), Pool("P1", None)])
    assert _bytes(plan) == {"P0": 128, "P1": 0}
    assert plan.size == 128


def test_buffers_alive_together_never_share_bytes() -> None:
    # three buffers of one step: 64 + 64 + 32, whatever their order
    items = [Item("a", 64, 0, 0), Item("b", 64, 0, 0), Item("c", 32, 0, 0)]
    plan = plan_pools(items, [Pool("P", None)])
    assert plan.size == 64 + 64 + 32 == 160


def test_buffers_start_at_the_pools_alignment() -> None:
    # two 3 B buffers alive at step 1, 2-byte alignment: the first at 0, the second at
    # 4 (3 rounded up to 2's multiple), ending at 4 + 3 = 7
    items = [Item("a", 3, 0, 1), Item("b", 3, 1, 2)]
    plan = plan_pools(items, [Pool("P", None, alignment=2)])
    assert plan.size == 4 + 3 == 7


def test_no_pool_of_any_size_is_one_unbounded_pool() -> None:
    # a 0 B pool is no pool: 64 B (steps 0-1) and 32 B (steps 1-2) live together: 96
    items = [Item("a", 64, 0, 1), Item("b", 32, 1, 2)]
    plan = plan_pools(items, [Pool("EMPTY", 0)])
    assert plan.size == 96
    assert plan.pools == [{"name": "(one pool)", "bytes": 96, "buffers": 2}]
    assert plan.overflow == []


def test_a_pool_of_unknown_size_holds_everything() -> None:
    items = [Item("a", 64, 0, 1), Item("b", 32, 1, 2)]
    plan = plan_pools(items, [Pool("ANY", None), Pool("P1", 1000)])
    assert _bytes(plan) == {"ANY": 96, "P1": 0}


def test_a_one_byte_pool_is_a_pool() -> None:
    plan = plan_pools([Item("a", 1, 0, 0)], [Pool("ONE", 1), Pool("P1", None)])
    assert _bytes(plan) == {"ONE": 1, "P1": 0}


def test_what_no_pool_holds_overflows_into_the_last_pool() -> None:
    # one 100 B pool; big (150 B) and tiny (1 B) alive together. big fits nowhere: it
    # goes to the pool at 0 and is reported. tiny would sit above big (150 + 1 > 100):
    # it overflows too, at 150. The pool reports 151 B.
    items = [Item("big", 150, 0, 0), Item("tiny", 1, 0, 0)]
    plan = plan_pools(items, [Pool("P0", 100)])
    assert plan.overflow == ["big", "tiny"]
    assert _bytes(plan) == {"P0": 151}
    assert plan.size == 151

"""Weights and activations per kind when a memory pool holds both.

c_info ``memory_footprint.weights`` / ``.activations`` are the used sizes of the pools
that hold each kind. While every pool holds one kind (read-only pools the parameters,
writable ones the activations) that is the per-kind figure. A pool that holds both (2.1.0
N6 runs that copy weights to RAM, RAM-only Neural-ART profiles, a virtual pool spanning
npuRAM3..6) is then counted in both: the footprint's weights include that pool's
activations, and its activations that pool's weights.

The split the buffers give holds in both cases, and reproduces ``memory_footprint`` on
every real c_info in ../shared (77 files, 1.0.0 -> 4.0.0, MCU and N6):

- a read-only pool holds only constants: all its used bytes are weights (its alignment
  padding included, as the footprint and the report count it);
- in a writable pool, the parameter buffers (``is_param``) are weights and the rest of its
  used bytes are activations (activation buffers overlap in time, so their sizes add up
  to more than the pool: what the pool used less its weights is the activations);
- pools made of other pools (``subpools``) are counted through their members; parameter
  buffers placed in such a virtual pool are weights of a writable pool all the same;
- pools the application allocates (user I/O) are in ``io_bytes``, not in activations.

The text report prints the tool's own split per pool (``weights: 32.000 kB  activations:
768 B``); a folder holding both compares them (:func:`compare_with_report`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .common import as_int


@dataclass(frozen=True)
class PoolSplit:
    """Per-kind bytes of a c_info's pools, and the pools that hold both kinds."""

    weights_bytes: int
    activations_bytes: int
    writable_params: int  # parameter bytes placed in writable pools
    shared_pools: tuple[str, ...]

    @property
    def footprint_counts_both(self) -> bool:
        """Whether ``memory_footprint`` counts a pool in both kinds (weights in RAM)."""
        return self.writable_params > 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def split_pools(doc: dict[str, Any]) -> PoolSplit | None:
    """The per-kind split of a c_info's pools, or None when it lists no pools or buffers."""
    pools = [p for p in _list(doc.get("memory_pools")) if isinstance(p, dict)]
    buffers = doc.get("buffers")
    if not pools or not isinstance(buffers, list):
        return None
    by_id = {as_int(p.get("id")): p for p in pools if as_int(p.get("id")) is not None}
    params: dict[int, int] = {}
    holds_activations: set[int] = set()
    for buf in buffers:
        if not isinstance(buf, dict):
            continue
        pool_id = as_int(buf.get("mpool_id"))
        size = as_int(buf.get("size_bytes")) or 0
        if pool_id is None or pool_id not in by_id or size <= 0:
            continue
        if buf.get("is_param") is True:
            params[pool_id] = params.get(pool_id, 0) + size
        else:
            holds_activations.add(pool_id)
    read_only_used = writable_used = 0
    for pool in pools:
        if _list(pool.get("subpools")) or pool.get("user_allocated") is True:
            continue
        used = as_int(pool.get("used_size_bytes")) or 0
        if pool.get("rights") == "ACC_READ":
            read_only_used += used
        else:
            writable_used += used
    in_writable = 0
    shared: list[str] = []
    for pool_id, size in params.items():
        pool = by_id[pool_id]
        if pool.get("rights") == "ACC_READ":
            continue
        in_writable += size
        if pool_id in holds_activations:
            shared.append(str(pool.get("name", pool_id)))
    return PoolSplit(
        weights_bytes=read_only_used + in_writable,
        activations_bytes=max(writable_used - in_writable, 0),
        writable_params=in_writable,
        shared_pools=tuple(shared),
    )


def report_split(pools: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """The text report's per-pool lines added up: ``{key: (bytes, error in bytes)}``."""
    out: dict[str, tuple[int, int]] = {}
    for key in ("weights_bytes", "activations_bytes"):
        values = [p for p in pools if isinstance(p.get(key), int)]
        if not values:
            continue
        total = sum(int(p[key]) for p in values)
        error = sum(_error(p, key) for p in values)
        out[key] = (total, error)
    return out


def _error(pool: dict[str, Any], key: str) -> int:
    per_kind = pool.get("precision")
    if isinstance(per_kind, dict) and isinstance(per_kind.get(key), int):
        return int(per_kind[key])
    return int(pool.get("precision_bytes") or 0)


def compare_with_report(
    memory: dict[str, Any], report_pools: list[dict[str, Any]], report_name: str
) -> list[dict[str, Any]]:
    """Set ``memory``'s per-kind figures from the report's per-pool split where it is exact,
    and say where the two sources disagree beyond the report's rounding.

    ``memory`` is a c_info's memory split from its buffers (``split_from_buffers``).
    """
    diagnostics: list[dict[str, Any]] = []
    for key, (stated, error) in report_split(report_pools).items():
        computed = memory.get(key)
        if not isinstance(computed, int):
            continue
        if abs(stated - computed) > error:
            shown = f"{stated:,} B" if error == 0 else f"{stated:,} B (±{error:,} B)"
            diagnostics.append(
                {
                    "level": "warning",
                    "code": "pool-split-differs",
                    "kind": "PoolSplitDiffers",
                    "message": (
                        f"{key.removesuffix('_bytes')}: the c_info buffers give {computed:,} B "
                        f"(pools {', '.join(memory.get('shared_pools') or [])} hold weights and "
                        f"activations), {report_name}'s per-pool lines {shown}; "
                        + ("the report's exact figure is kept" if error == 0 else
                           "the c_info figure is kept (the report's is rounded)")
                    ),
                }
            )
        if error == 0:
            memory[key] = stated
    return diagnostics


def pool_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The Result's ``memory.pools`` of a c_info: each leaf pool, its size, use and split."""
    params_by_pool: dict[int, int] = {}
    for buf in _list(doc.get("buffers")):
        if isinstance(buf, dict) and buf.get("is_param") is True:
            pool_id = as_int(buf.get("mpool_id"))
            if pool_id is not None:
                params_by_pool[pool_id] = params_by_pool.get(pool_id, 0) + (
                    as_int(buf.get("size_bytes")) or 0
                )
    pools = []
    for pool in _list(doc.get("memory_pools")):
        if not isinstance(pool, dict):
            continue
        # Aggregates of other pools (N6 "cpuRAM2_npuRAM3_...") would count bytes twice.
        if _list(pool.get("subpools")):
            continue
        name = pool.get("name", pool.get("id", ""))
        entry: dict[str, Any] = {"name": name if isinstance(name, str) else json.dumps(name)}
        if pool.get("user_allocated") is True:
            entry["user_allocated"] = True  # an I/O buffer the application provides
        size = as_int(pool.get("size_bytes"))
        if size is not None and size >= 0:
            entry["size_bytes"] = size
        used = as_int(pool.get("used_size_bytes"))
        if used is not None:
            entry["used_bytes"] = used
            if pool.get("rights") == "ACC_READ":
                weights: int | None = used  # read-only pools hold only constants
            else:
                weights = params_by_pool.get(as_int(pool.get("id")) or -1)
                if weights is None and doc.get("buffers") is not None:
                    weights = 0
            if weights is not None:
                weights = min(weights, used)
                entry["weights_bytes"] = weights
                entry["activations_bytes"] = used - weights
        pools.append(entry)
    return pools

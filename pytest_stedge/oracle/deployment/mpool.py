"""The writable pools of an N6 ``.mpool`` or an MCU ``--memory-pool`` file, in profile order."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError


@dataclass(frozen=True)
class Pool:
    """One writable memory pool of an mpool / memory-pool file, in the file's order."""

    name: str
    size: int | None  # bytes; None when the file gives no usable size
    external: bool = False
    alignment: int = 1


_MAGNITUDE = {"BYTES": 1, "KBYTES": 1024, "MBYTES": 1024 * 1024}
_OFFCHIP = re.compile(r"hyper|sdram|external|flash|xspi|octo|psram", re.IGNORECASE)


@dataclass(frozen=True)
class PoolFile:
    """What the oracle reads from an mpool or memory-pool file."""

    pools: tuple[Pool, ...]  # writable pools, in the file's (profile) order
    onchip: int | None  # their on-chip bytes
    digest: str  # sha256 of the file
    alignment: int | None  # the widest byteWidth, when the file gives one


def read_pools(path: Path) -> tuple[int | None, str, int | None]:
    """On-chip writable bytes, sha256 and alignment of an N6 ``.mpool`` or MCU pool JSON."""
    found = read_pool_file(path)
    return found.onchip, found.digest, found.alignment


def read_pool_file(path: Path) -> PoolFile:
    """The writable pools of an N6 ``.mpool`` or MCU ``--memory-pool`` JSON, in order.

    :raises OracleError: missing or not JSON (``//`` comments are allowed, as the tool does).
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise OracleError(f"{path}: cannot read the memory pool file ({exc.strerror or exc})") from exc
    text = re.sub(r"^\s*//.*$", "", raw.decode("utf-8", "replace"), flags=re.MULTILINE)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OracleError(f"{path}: not a JSON memory pool file ({exc})") from exc
    entries = ((data.get("memory") or {}).get("mempools") if isinstance(data, dict) else None) or []
    if not isinstance(entries, list) or not entries:
        raise OracleError(f"{path}: no memory.mempools[] list: not an mpool / memory-pool file")
    pools: list[Pool] = []
    onchip = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        prop = entry.get("prop") or {}
        if str(prop.get("rights", "ACC_WRITE")) != "ACC_WRITE":
            continue
        name = str(entry.get("name", ""))
        external = bool(_OFFCHIP.search(name))
        size = _pool_size(entry.get("size") or {})
        width = int(prop.get("byteWidth") or 0)
        pools.append(Pool(name, size, external, max(width, 1)))
        if not external and size:
            onchip += size
    widths = [p.alignment for p in pools if p.alignment > 1]
    return PoolFile(
        tuple(pools), onchip or None, hashlib.sha256(raw).hexdigest(), max(widths) if widths else None
    )


def _pool_size(size: dict[str, Any]) -> int | None:
    try:
        value = int(str(size.get("value", "")), 0)
    except ValueError:
        return None
    return value * _MAGNITUDE.get(str(size.get("magnitude", "BYTES")).upper(), 1)

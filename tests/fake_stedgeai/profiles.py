"""Neural-ART profiles (`neural_art.json`) and memory-pool files (`.mpool`) of the fake install."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MAGNITUDE = {"BYTES": 1, "KBYTES": 1024, "MBYTES": 1024 * 1024}


class ProfileError(Exception):
    """A profile or mpool problem, reported as an `E102(CliArgumentError)` line."""


@dataclass
class MemPool:
    """One pool of an mpool file."""

    name: str
    fname: str
    address: int
    size: int
    rights: str
    throughput: str
    latency: str
    cacheable: bool


@dataclass
class Profile:
    """A resolved `--st-neural-art` profile."""

    name: str
    file: Path
    options: str
    mpool_file: Path
    pools: list[MemPool]

    def has(self, flag: str) -> bool:
        """True when the compiler option ``flag`` is in the profile's options."""
        return flag in self.options.split()


def loose_json(text: str) -> Any:
    """Parse JSON the way ST's tools accept it: `//` and `/* */` comments, trailing commas."""
    out = []
    i, n, in_str = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    return json.loads(cleaned)


def _bytes(entry: dict[str, Any]) -> int:
    value = str(entry.get("value", "0"))
    num = int(value, 16) if value.lower().startswith("0x") else int(float(value))
    return num * _MAGNITUDE.get(str(entry.get("magnitude", "BYTES")).upper(), 1)


def load_mpool(path: Path) -> list[MemPool]:
    """Read the pools of an mpool file.

    :raises ProfileError: when the file is missing or is not an mpool.
    """
    try:
        data = loose_json(path.read_text(encoding="utf-8", errors="replace"))
        pools = []
        for p in data["memory"]["mempools"]:
            prop = p.get("prop", {})
            pools.append(
                MemPool(
                    name=p["name"],
                    fname=p.get("fname", p["name"]),
                    address=_bytes(p.get("offset", {})),
                    size=_bytes(p.get("size", {})),
                    rights=prop.get("rights", "ACC_WRITE"),
                    throughput=prop.get("throughput", "MID"),
                    latency=prop.get("latency", "MID"),
                    cacheable=str(prop.get("cacheable", "")).upper() == "CACHEABLE_ON",
                )
            )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProfileError(f'invalid memory-pool file "{path}": {exc}') from None
    return pools


def resolve_profile(spec: str | None, builtin: Path) -> Profile:
    """Resolve ``--st-neural-art`` (`P`, `P@FILE`, bare) against ``builtin`` (neural_art.json).

    :raises ProfileError: for an unknown profile or an unreadable file.
    """
    name, _, file = (spec or "default").partition("@")
    name = name or "default"
    path = Path(file) if file else builtin
    try:
        data = loose_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProfileError(f'unable to read the Neural-ART profile file "{path}": {exc}') from None
    profiles = data.get("Profiles", {}) if isinstance(data, dict) else {}
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise ProfileError(f'profile "{name}" is not defined in "{path}" (defined: {known})')
    prof = profiles[name]
    mpool = Path(prof.get("memory_pool", ""))
    if not mpool.is_absolute():
        mpool = (path.parent / mpool).resolve()
    return Profile(name, path, str(prof.get("options", "")), mpool, load_mpool(mpool))

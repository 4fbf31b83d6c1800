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
    mdesc_file: Path | None = None  # the profile's memory_desc; None: the install's own

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
    mpool = _profile_file(path, name, prof, "memory_pool")
    mdesc = _profile_file(path, name, prof, "memory_desc") if prof.get("memory_desc") else None
    return Profile(name, path, str(prof.get("options", "")), mpool, load_mpool(mpool), mdesc)


def _profile_file(profile: Path, name: str, prof: dict[str, Any], key: str) -> Path:
    """A file a profile names, resolved as the real tool does.

    Evidence: the N6 reports' ``Compiler arguments`` line shows ST's
    ``N6_scripts/user_neuralart.json`` entries ``./my_mpools/stm32n6.mpool`` and
    ``./my_mdescs/stm32n6.mdesc`` loaded from ``N6_scripts/my_mpools/`` and
    ``N6_scripts/my_mdescs/`` (samples n6-v2.2.0-*, n6-blazeface-2profiles): relative paths
    are relative to the profile file, never to the working folder. An absolute path is used
    as it is: a public 4.0.1 compile (LarocheC/stm32n6-stt, its blocker-2 reproducer) writes
    an absolute ``memory_pool`` and gets its report.
    """
    raw = str(prof.get(key, ""))
    if not raw.strip():
        raise ProfileError(f'profile "{name}" in "{profile}" has no "{key}"')
    file = Path(raw)
    if not file.is_absolute():
        file = (profile.parent / file).resolve()
    if not file.is_file():
        raise ProfileError(
            f'profile "{name}" in "{profile}": {key} "{raw}" not found ({file})'
        )
    return file

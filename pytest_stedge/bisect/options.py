"""A case's compiler options as units, and a variant of the case with some of them.

A unit is one option with its values: ``--Ocache-opt``, ``--Omax-ca-pipe 4``,
``--optimization 3``. The units come from the options string of the case's Neural-ART
profile (``Profiles.<name>.options`` of its ``neural_art.json``, the install's own file
for a built-in profile) and from the case's own ``options``. A variant keeps some units:
the profile is copied, with only the kept profile units, into the run's own folder (its
mpool and memory description still the case's), and the case keeps only its kept words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..case.model import Case, NeuralArt
from ..errors import ToolchainError

_NUMBER = re.compile(r"-?\d+(\.\d+)?$")


@dataclass(frozen=True)
class Unit:
    """One option and its values, and where it comes from (``profile`` or ``case``)."""

    words: tuple[str, ...]
    source: str

    @property
    def text(self) -> str:
        """The option as it is written on a command line."""
        return " ".join(self.words)


def split_units(words: list[str], source: str) -> list[Unit]:
    """Options and their values: a word starting with ``-`` (not a negative number)
    opens a unit, the words after it up to the next option are its values."""
    units: list[list[str]] = []
    for word in words:
        if word.startswith("-") and not _NUMBER.match(word) or not units:
            units.append([word])
        else:
            units[-1].append(word)
    return [Unit(tuple(u), source) for u in units]


@dataclass(frozen=True)
class Options:
    """The units of a case: its profile's, then its own; where the profile was read."""

    units: tuple[Unit, ...]
    profile_file: Path | None
    profile: dict[str, Any] | None  # the chosen profile's entry

    def describe(self) -> str:
        """``N options: 7 of profile default (FILE), 2 of the case``."""
        mine = sum(u.source == "case" for u in self.units)
        theirs = len(self.units) - mine
        where = f" ({self.profile_file})" if self.profile_file else ""
        return f"{len(self.units)} options: {theirs} of the profile{where}, {mine} of the case"


def builtin_profiles(root: Path) -> Path | None:
    """The install's own ``neural_art.json`` (``Utilities/<os>/targets/stm32/resources``)."""
    found = sorted(root.glob("Utilities/*/targets/stm32/resources/neural_art.json"))
    return found[0] if found else None


def case_options(case: Case, install_root: Path | None = None) -> Options:
    """Every unit of ``case``: its Neural-ART profile's options, then its own.

    :raises ToolchainError: the profile file cannot be read or lacks the profile.
    """
    from ..tool.runner import load_loose_json

    units: list[Unit] = []
    chosen: dict[str, Any] | None = None
    file: Path | None = None
    art = case.neural_art
    if art is not None:
        file = art.file or (builtin_profiles(install_root) if install_root else None)
        if file is None:
            raise ToolchainError([], reason=f"{case.path}: profile {art.profile!r} is the "
                                 "install's own, and no install was found to read it from")
        profiles = load_loose_json(file).get("Profiles") or {}
        entry = profiles.get(art.profile)
        if not isinstance(entry, dict):
            known = ", ".join(sorted(profiles)) or "none"
            raise ToolchainError([], reason=f"{file}: no profile {art.profile!r} in "
                                 f"Profiles; found: {known}")
        chosen = dict(entry)
        units += split_units(str(chosen.get("options") or "").split(), "profile")
    units += split_units(list(case.options), "case")
    return Options(tuple(units), file, chosen)


def variant(case: Case, options: Options, kept: list[Unit], workdir: Path) -> Case:
    """``case`` with only the ``kept`` units; a derived profile written into ``workdir``."""
    words = tuple(w for u in kept if u.source == "case" for w in u.words)
    art = case.neural_art
    if art is None or options.profile is None or options.profile_file is None:
        return replace(case, options=words)
    entry = dict(options.profile)
    entry["options"] = " ".join(u.text for u in kept if u.source == "profile")
    base = options.profile_file.parent
    for key in ("memory_pool", "memory_desc"):  # paths stay valid from the new folder
        value = entry.get(key)
        if isinstance(value, str) and value.strip() and not Path(value).is_absolute():
            entry[key] = str((base / value).resolve())
    mpool = art.mpool
    if mpool is None and isinstance(entry.get("memory_pool"), str):
        mpool = Path(entry["memory_pool"])
    workdir.mkdir(parents=True, exist_ok=True)
    derived = workdir / "bisect_neural_art.json"
    derived.write_text(json.dumps({"Globals": {}, "Profiles": {art.profile: entry}}, indent=2),
                       encoding="utf-8")
    return replace(case, options=words, neural_art=NeuralArt(art.profile, derived, mpool))

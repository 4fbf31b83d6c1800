"""Fault injection: the baked config file merged with the `STEDGE_FAKE` environment variable.

A config is a JSON object, either flat (`{"sleep": 0.5}`) or keyed by model stem with `*` for
every model (`{"*": {"sleep": 0.5}, "tcn": {"validate": {"cos": 0.091}}}`). A fault set may
carry `"commands": ["validate"]` to apply to those commands only. Later sources win:
baked `*`, baked stem, env `*`, env stem.

Keys: sleep (s), spawn (s: two helper processes that call setsid, one double-forked,
each sleeping that long; spawn_mark: a text their command lines carry; spawn_clean (s): a
third that double-forks, calls setsid and execs with a cleared environment; spawn_pids: a
folder where each helper, once settled, writes an empty file named by its pid, the tool
waiting for them all before it goes on), error (true or message; error_code, error_kind,
exit_code), crash, hang, no_output, truncate [files], garbage [files], inflate_activations
(factor), extra_sw_epochs (N or [op names]), hybrid_epochs (N), weights_factor (factor),
validate ({"cos": x} | {"uncorrelated": true} | {"identical": true}: snr=inf, as real
4.0.0 logs print for bit-exact outputs).

A fault set with `"when_options": ["--Ocache-opt", "--enable-epoch-controller"]` applies only
to runs whose options (the command line's and the Neural-ART profile's) hold all of them:
a compiler bug that needs both options to show.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path
from typing import Any

ENV = "STEDGE_FAKE"
KNOWN = {
    "sleep",
    "error",
    "error_code",
    "error_kind",
    "exit_code",
    "crash",
    "hang",
    "no_output",
    "truncate",
    "garbage",
    "inflate_activations",
    "extra_sw_epochs",
    "hybrid_epochs",
    "validate",
    "weights_factor",
    "commands",
    "spawn",
    "spawn_mark",
    "when_options",
    "spawn_clean",
    "spawn_pids",
}


class FaultConfigError(Exception):
    """The fault config (file or `STEDGE_FAKE`) is not valid JSON or has unknown keys."""


def _check(layer: Any, where: str) -> dict[str, Any]:
    if not isinstance(layer, dict):
        raise FaultConfigError(f"{where}: a fault set must be a JSON object, got {layer!r}")
    unknown = sorted(set(layer) - KNOWN)
    if unknown:
        raise FaultConfigError(
            f"{where}: unknown fault key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN))}"
        )
    return layer


def _layers(doc: Any, stem: str, command: str, where: str,
            options: set[str]) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        raise FaultConfigError(f"{where}: expected a JSON object, got {doc!r}")
    flat = {k: v for k, v in doc.items() if not isinstance(v, dict) or k == "validate"}
    if flat:  # flat form: {"sleep": 0.5}
        scoped = [_check(doc, where)]
    else:  # keyed by model stem, "*" for all
        scoped = [_check(v, f"{where}[{k!r}]") for k, v in doc.items() if k in ("*", stem)]
        scoped.sort(key=lambda layer: layer is not doc.get("*"))
    return [s for s in scoped if (not s.get("commands") or command in s["commands"])
            and set(s.get("when_options") or ()) <= options]


def load_faults(config_path: Path | None, stem: str, command: str,
                options: set[str] | None = None) -> dict[str, Any]:
    """The merged fault set for one run of ``command`` on model ``stem`` whose options
    (command line and Neural-ART profile) are ``options``.

    :raises FaultConfigError: when a source is not JSON or names an unknown fault.
    """
    sources: list[tuple[str, str]] = []
    if config_path is not None and config_path.is_file():
        sources.append((str(config_path), config_path.read_text(encoding="utf-8")))
    raw = os.environ.get(ENV, "").strip()
    if raw:
        sources.append((ENV, raw))
    merged: dict[str, Any] = {}
    for where, text in sources:
        try:
            doc = json.loads(text or "{}")
        except ValueError as exc:
            raise FaultConfigError(f"{where}: not valid JSON ({exc})") from None
        for layer in _layers(doc, stem, command, where, options or set()):
            merged.update(layer)
    merged.pop("commands", None)
    merged.pop("when_options", None)
    return merged


def matches(name: str, patterns: Any) -> bool:
    """True when file ``name`` is listed (exact name or glob) in ``patterns``."""
    if not patterns:
        return False
    if isinstance(patterns, str):
        patterns = [patterns]
    return any(fnmatch.fnmatch(name, p) for p in patterns)


def write_file(path: Path, data: bytes, faults: dict[str, Any]) -> None:
    """Write ``data`` to ``path``, truncated or garbled when the faults ask for it."""
    if matches(path.name, faults.get("truncate")):
        data = data[: len(data) // 2]
    elif matches(path.name, faults.get("garbage")):
        seed = sum(path.name.encode())
        data = bytes((seed * 131 + i * 7919) % 251 for i in range(max(64, len(data) // 4)))
    path.write_bytes(data)

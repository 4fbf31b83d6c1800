"""Which deployment a (target, options, mpool) means, and what changes the oracle's answer.

Three families, each with its rules in a module of its own (docs/oracle.md cites the
real pairs behind every rule):

- ``n6-npu`` (:mod:`.rules_n6_npu`): ``--target stm32n6`` with ``--st-neural-art``
  (or an mpool): int8 operators stream into each other inside one epoch;
- ``n6-sw`` (:mod:`.rules_n6_sw`): ``--target stm32n6`` without Neural-ART, the
  software runtime on the Cortex-M55;
- ``mcu`` (:mod:`.rules_mcu`): every other STM32 target, the software runtime.

Options that the oracle reads: ``--st-neural-art``, ``--no-inputs-allocation``,
``--no-outputs-allocation`` (I/O outside the activations) and ``--memory-pool`` /
``--mpool`` (pool sizes and alignment). The rest do not move the floor.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

DEFAULT_TARGET = "stm32n6"


@dataclass(frozen=True)
class Deployment:
    """The deployment the oracle models: family, I/O placement, alignment, pools."""

    target: str
    family: str  # "n6-npu" | "n6-sw" | "mcu"
    inputs_in_activations: bool = True
    outputs_in_activations: bool = True
    alignment: int = 1
    onchip_bytes: int | None = None  # writable on-chip pool bytes of the mpool, if given
    mpool: str | None = None
    mpool_digest: str | None = None
    options: tuple[str, ...] = field(default_factory=tuple)

    def key(self) -> dict[str, Any]:
        """Everything that changes the oracle's answer for one model (cache key)."""
        return {
            "family": self.family,
            "inputs": self.inputs_in_activations,
            "outputs": self.outputs_in_activations,
            "alignment": self.alignment,
            "mpool": self.mpool_digest,
        }

    def describe(self) -> dict[str, Any]:
        """The deployment as the report shows it."""
        return {
            "target": self.target,
            "family": self.family,
            "inputs_in_activations": self.inputs_in_activations,
            "outputs_in_activations": self.outputs_in_activations,
            "alignment": self.alignment,
            "mpool": self.mpool,
            "onchip_bytes": self.onchip_bytes,
        }


def deployment_for(
    target: str | None = None,
    options: Sequence[str] = (),
    mpool: Path | str | None = None,
) -> Deployment:
    """The deployment of ``stedgeai generate --target T OPTIONS``.

    ``target`` None means ``stm32n6`` with Neural-ART (the NPU is what users of the
    oracle ask about first). ``--target`` inside ``options`` overrides it.

    :raises OracleError: an mpool or memory-pool file that cannot be read.
    """
    opts = tuple(str(o) for o in options)
    chosen = _option_value(opts, "--target") or target
    neural_art = any(o == "--st-neural-art" or o.startswith("--st-neural-art=") for o in opts)
    pool_file = mpool or _option_value(opts, "--memory-pool") or _option_value(opts, "--mpool")
    if chosen is None:
        chosen, neural_art = DEFAULT_TARGET, True
    name = chosen.lower()
    if name.startswith("stm32n6"):
        family = "n6-npu" if neural_art or mpool is not None else "n6-sw"
    else:
        family = "mcu"
    from . import rules_mcu, rules_n6_npu, rules_n6_sw

    rules = {"n6-npu": rules_n6_npu, "n6-sw": rules_n6_sw, "mcu": rules_mcu}[family]
    onchip, digest, align = None, None, rules.ALIGNMENT
    if pool_file is not None:
        onchip, digest, found_align = read_pools(Path(pool_file))
        align = found_align or align
    return Deployment(
        target=name,
        family=family,
        inputs_in_activations="--no-inputs-allocation" not in opts,
        outputs_in_activations="--no-outputs-allocation" not in opts,
        alignment=align,
        onchip_bytes=onchip,
        mpool=str(pool_file) if pool_file is not None else None,
        mpool_digest=digest,
        options=opts,
    )


def _option_value(options: Sequence[str], flag: str) -> str | None:
    for k, opt in enumerate(options):
        if opt == flag and k + 1 < len(options):
            return options[k + 1]
        if opt.startswith(flag + "="):
            return opt.split("=", 1)[1]
    return None


_MAGNITUDE = {"BYTES": 1, "KBYTES": 1024, "MBYTES": 1024 * 1024}
_OFFCHIP = re.compile(r"hyper|sdram|external|flash|xspi|octo|psram", re.IGNORECASE)


def read_pools(path: Path) -> tuple[int | None, str, int | None]:
    """On-chip writable bytes, sha256 and alignment of an N6 ``.mpool`` or MCU pool JSON.

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
    pools = ((data.get("memory") or {}).get("mempools") if isinstance(data, dict) else None) or []
    if not isinstance(pools, list) or not pools:
        raise OracleError(f"{path}: no memory.mempools[] list: not an mpool / memory-pool file")
    onchip = 0
    for pool in pools:
        if not isinstance(pool, dict):
            continue
        rights = str((pool.get("prop") or {}).get("rights", "ACC_WRITE"))
        if rights != "ACC_WRITE" or _OFFCHIP.search(str(pool.get("name", ""))):
            continue
        size = pool.get("size") or {}
        try:
            value = int(str(size.get("value", "0")), 0)
        except ValueError:
            continue
        onchip += value * _MAGNITUDE.get(str(size.get("magnitude", "BYTES")).upper(), 1)
    widths = [
        int((p.get("prop") or {}).get("byteWidth") or 0) for p in pools if isinstance(p, dict)
    ]
    align = max(widths) if widths and max(widths) > 0 else None
    return onchip or None, hashlib.sha256(raw).hexdigest(), align


# The options of a recorded command line that move the floor; file arguments (pools,
# profiles) name files on the machine that ran the tool and are left out.
_FLAGS = ("--st-neural-art", "--no-inputs-allocation", "--no-outputs-allocation")


def deployment_options(words: Sequence[str]) -> list[str]:
    """The flags of a recorded command line that the oracle's deployment reads."""
    return [w for w in words if w.split("=", 1)[0] in _FLAGS]

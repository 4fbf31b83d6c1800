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
class Pool:
    """One writable memory pool of an mpool / memory-pool file, in the file's order."""

    name: str
    size: int | None  # bytes; None when the file gives no usable size
    external: bool = False
    alignment: int = 1


@dataclass(frozen=True)
class Deployment:
    """The deployment the oracle models: family, I/O placement and types, alignment, pools."""

    target: str
    family: str  # "n6-npu" | "n6-sw" | "mcu"
    inputs_in_activations: bool = True
    outputs_in_activations: bool = True
    alignment: int = 1
    onchip_bytes: int | None = None  # writable on-chip pool bytes of the mpool, if given
    mpool: str | None = None
    mpool_digest: str | None = None
    options: tuple[str, ...] = field(default_factory=tuple)
    pools: tuple[Pool, ...] = field(default_factory=tuple)  # writable pools, profile order
    input_types: tuple[str, ...] = field(default_factory=tuple)  # --input-data-type values
    output_types: tuple[str, ...] = field(default_factory=tuple)  # --output-data-type values

    def key(self) -> dict[str, Any]:
        """Everything that changes the oracle's answer for one model (cache key)."""
        return {
            "family": self.family,
            "inputs": self.inputs_in_activations,
            "outputs": self.outputs_in_activations,
            "alignment": self.alignment,
            "mpool": self.mpool_digest,
            "input_types": list(self.input_types),
            "output_types": list(self.output_types),
        }

    def describe(self) -> dict[str, Any]:
        """The deployment as the report shows it."""
        return {
            "target": self.target,
            "family": self.family,
            "meaning": MEANINGS[self.family],
            "neural_art": self.family == "n6-npu",
            "inputs_in_activations": self.inputs_in_activations,
            "outputs_in_activations": self.outputs_in_activations,
            "alignment": self.alignment,
            "mpool": self.mpool,
            "onchip_bytes": self.onchip_bytes,
            "pools": [
                {"name": p.name, "bytes": p.size, "external": p.external} for p in self.pools
            ],
            "input_types": list(self.input_types),
            "output_types": list(self.output_types),
        }


MEANINGS = {
    "n6-npu": "Neural-ART NPU: stedgeai --target stm32n6 --st-neural-art",
    "n6-sw": "software path: stedgeai without --st-neural-art (the Cortex-M55 runs every layer)",
    "mcu": "MCU software runtime",
}

# ``--input-data-type`` / ``--output-data-type`` values -> ONNX TensorProto data types.
IO_TYPES = {"float32": 1, "int8": 3, "uint8": 2, "int16": 5, "uint16": 4}


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
    pools: tuple[Pool, ...] = ()
    if pool_file is not None:
        found = read_pool_file(Path(pool_file))
        onchip, digest, pools = found.onchip, found.digest, found.pools
        align = found.alignment or align
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
        pools=pools,
        input_types=_io_types(opts, "--input-data-type"),
        output_types=_io_types(opts, "--output-data-type"),
    )


def _io_types(options: Sequence[str], flag: str) -> tuple[str, ...]:
    value = _option_value(options, flag)
    if value is None:
        return ()
    types = tuple(v.strip().lower() for v in value.split(",") if v.strip())
    unknown = [t for t in types if t not in IO_TYPES]
    if unknown:
        raise OracleError(
            f"{flag} {value}: unknown data type {', '.join(unknown)} "
            f"(accepted: {', '.join(IO_TYPES)})"
        )
    return types


def _option_value(options: Sequence[str], flag: str) -> str | None:
    for k, opt in enumerate(options):
        if opt == flag and k + 1 < len(options):
            return options[k + 1]
        if opt.startswith(flag + "="):
            return opt.split("=", 1)[1]
    return None


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


# The options of a recorded command line that move the floor or the expected figure.
# File arguments (pools, profiles) name files on the machine that ran the tool: they are
# kept only when ``folder`` holds a file of the same name (a run folder with its pools).
_FLAGS = ("--st-neural-art", "--no-inputs-allocation", "--no-outputs-allocation")
_VALUED = ("--input-data-type", "--output-data-type")
_FILES = ("--memory-pool", "--mpool")


def deployment_options(words: Sequence[str], folder: Path | None = None) -> list[str]:
    """The options of a recorded command line that the oracle's deployment reads."""
    out: list[str] = []
    k = 0
    while k < len(words):
        word = words[k]
        flag, _, inline = word.partition("=")
        value = inline or (words[k + 1] if k + 1 < len(words) else "")
        step = 1 if inline or flag in _FLAGS else 2
        if flag in _FLAGS:
            out.append(flag)
        elif flag in _VALUED and value:
            out += [flag, value]
        elif flag in _FILES and value and folder is not None:
            local = folder / re.split(r"[\\/]", value)[-1]
            if local.is_file():
                out += [flag, str(local)]
        else:
            step = 1
        k += step
    return out


def run_options(run: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The target and the deployment options of a recorded run: its command line's
    options where the recording keeps them (the corpus's recordings.json), else what its
    Result states (``neural_art``: NPU epochs exist)."""
    found = run.get("result")
    result: dict[str, Any] = found if isinstance(found, dict) else {}
    target = run.get("target") or result.get("target")
    options = run.get("options")
    if isinstance(options, list):
        return (str(target) if target else None), deployment_options([str(o) for o in options])
    return (str(target) if target else None), (["--st-neural-art"] if result.get("neural_art") else [])


def deployment_differences(ours: Deployment, theirs: Deployment) -> list[str]:
    """What two deployments disagree on, as ``what: ours vs theirs`` (empty: the same)."""
    found = []
    if ours.family != theirs.family:
        found.append(f"{MEANINGS[ours.family]} vs {MEANINGS[theirs.family]}")
    for label, mine, other in (
        ("inputs in the activations", ours.inputs_in_activations, theirs.inputs_in_activations),
        ("outputs in the activations", ours.outputs_in_activations, theirs.outputs_in_activations),
        ("--input-data-type", ours.input_types, theirs.input_types),
        ("--output-data-type", ours.output_types, theirs.output_types),
    ):
        if mine != other:
            found.append(f"{label}: {_shown(mine)} vs {_shown(other)}")
    return found


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "the model's"
    return "yes" if value is True else "no" if value is False else str(value)

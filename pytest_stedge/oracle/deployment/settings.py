"""Which deployment a (target, options, mpool) means, and what changes the oracle's answer.

Three families, each with its memory rules in a module of its own
(:mod:`pytest_stedge.oracle.memory.rules_n6_npu` and its siblings; docs/oracle.md cites
the real pairs behind every rule):

- ``n6-npu``: ``--target stm32n6`` with ``--st-neural-art`` (or an mpool): int8
  operators stream into each other inside one epoch;
- ``n6-sw``: ``--target stm32n6`` without Neural-ART, the software runtime on the
  Cortex-M55;
- ``mcu``: every other STM32 target, the software runtime.

Options that the oracle reads: ``--st-neural-art``, ``--no-inputs-allocation``,
``--no-outputs-allocation`` (I/O outside the activations) and ``--memory-pool`` /
``--mpool`` (pool sizes and alignment). The rest do not move the floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .mpool import Pool, read_pool_file

DEFAULT_TARGET = "stm32n6"


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

# The pool alignment of each family where the mpool gives no byteWidth: every N6 pool of
# every real c_info has alignment 8, every MCU (and N6 software) activation pool 4.
ALIGNMENT = {"n6-npu": 8, "n6-sw": 4, "mcu": 4}

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
    onchip, digest, align = None, None, ALIGNMENT[family]
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

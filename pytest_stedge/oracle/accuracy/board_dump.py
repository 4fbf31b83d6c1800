"""A board's dump as the oracle reads it: per-layer records and the input it ran on.

``stedge board-run`` writes a ``.npz`` keyed by tensor name and a ``.json`` sidecar
(schema ``stedge.board-dump/1``) with the board's node reports in order, the input and
output names and their quantization. On an N6 each record is one executed epoch (or
epoch-controller block): an operator message with ``id = last_epoch << 16 | epoch`` and
one tensor per buffer of that epoch, named as the c_info names it
(``../shared/board-protocol.md`` §7.5, §8.6).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .epoch_plan import BOARD_KINDS, EpochPlan


@dataclass
class Record:
    """One per-layer record: the board's node and its tensors (name -> raw array)."""

    name: str
    op_type: int | None
    op_id: int | None
    tensors: dict[str, Any] = field(default_factory=dict)
    descs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def board_kind(self) -> str | None:
        """HW, extra HW, SW, hybrid or EC, from the firmware's type word."""
        return None if self.op_type is None else BOARD_KINDS.get(self.op_type & 0xF)


@dataclass
class Dump:
    """A per-layer dump: records in execution order, the input arrays and their quantisation."""

    path: Path
    records: list[Record]
    inputs: dict[str, Any]
    quant: dict[str, tuple[float, int]]


def read_dump(path: Path | str, plan: EpochPlan) -> Dump:
    """The ``.npz`` of ``stedge board-run --per-layer`` and its ``.json`` sidecar.

    Without a sidecar, every array named like a c_info buffer is one tensor and its
    record is the epoch that wrote the buffer.

    :raises OracleError: not a readable ``.npz``.
    """
    import numpy as np

    from .metrics import load_arrays

    p = Path(path)
    arrays = load_arrays(p)
    meta = read_sidecar(p)
    records: list[Record] = []
    placed: set[str] = set()
    for node in meta.get("nodes") or []:
        if not isinstance(node, dict):
            continue
        rec = Record(str(node.get("name") or ""), node.get("type"), node.get("id"))
        raw_descs = node.get("descs")
        descs: dict[str, Any] = raw_descs if isinstance(raw_descs, dict) else {}
        for tname in node.get("tensors") or []:
            rec.tensors[tname] = arrays.get(tname, np.empty((0,)))
            rec.descs[tname] = descs.get(tname) or {}
            placed.add(tname)
        records.append(rec)
    inputs = {name: arrays[name] for name in meta.get("inputs") or [] if name in arrays}
    by_epoch: dict[str, Record] = {}
    for name, value in arrays.items():
        if name in placed or name in inputs or name in (meta.get("outputs") or []):
            continue
        buf = plan.find(name)
        epoch = plan.producing_epoch(buf) if buf is not None else None
        key = epoch.name if epoch is not None else name
        if key not in by_epoch:
            by_epoch[key] = Record(key, None, None)
            records.append(by_epoch[key])
        by_epoch[key].tensors[name] = value
    quant = {k: (float(v[0]), int(v[1])) for k, v in (meta.get("quant") or {}).items()
             if isinstance(v, list) and len(v) == 2}
    return Dump(p, records, inputs, quant)


def feed_for(ref: Any, dump: Dump) -> tuple[dict[str, Any], str]:
    """The reference's input from the dump's: same name or same position, laid out
    (NCHW/NHWC) and typed (dequantized or quantized) as the model takes it."""
    import numpy as np

    given = list(dump.inputs.items())
    if len(given) < len(ref.inputs):
        raise OracleError(f"{dump.path}: the dump holds {len(given)} input array(s), "
                          f"{ref.path.name} takes {len(ref.inputs)} ({', '.join(ref.inputs)})")
    feed = {}
    for k, name in enumerate(ref.inputs):
        key, value = next(((n, v) for n, v in given if n == name), given[k])
        arr = np.asarray(value)
        q = dump.quant.get(key)
        target = ref.quant.get(name)
        if arr.dtype.kind in "iu" and target is None and q is not None:
            arr = (arr.astype(np.float32) - q[1]) * np.float32(q[0])
        elif arr.dtype.kind == "f" and target is not None and ref.kind == "tflite":
            arr = np.round(arr / target[0]) + target[1]
        shape = ref.shapes.get(name)
        if shape is not None:
            arr = _fit(arr, shape, f"{dump.path}: input {key!r}")
        feed[name] = arr
    return feed, "dump"


def _fit(arr: Any, shape: tuple[int, ...], where: str) -> Any:
    """``arr`` in ``shape``: as is, or moved between channel first and channel last."""
    import numpy as np

    if tuple(arr.shape) == tuple(shape):
        return arr
    if arr.size != math.prod(shape):
        raise OracleError(f"{where}: {arr.size} elements {list(arr.shape)}, the model's tensor "
                          f"is {list(shape)}")
    if arr.ndim == len(shape) == 4:
        if tuple(arr.transpose(0, 2, 3, 1).shape) == tuple(shape):
            return np.ascontiguousarray(arr.transpose(0, 2, 3, 1))
        if tuple(arr.transpose(0, 3, 1, 2).shape) == tuple(shape):
            return np.ascontiguousarray(arr.transpose(0, 3, 1, 2))
    return arr.reshape(shape)


def read_sidecar(dump: Path) -> dict[str, Any]:
    """The ``.json`` sidecar beside a board dump (timings, counters, nodes, quantisation):
    empty when there is none.

    :raises OracleError: the sidecar is not JSON.
    """
    sidecar = dump.with_suffix(".json")
    if not sidecar.is_file():
        return {}
    try:
        loaded = json.loads(sidecar.read_text(encoding="utf-8", errors="replace"))
    except ValueError as exc:
        raise OracleError(f"{sidecar}: not JSON ({exc})") from None
    return loaded if isinstance(loaded, dict) else {}

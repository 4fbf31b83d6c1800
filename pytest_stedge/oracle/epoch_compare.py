"""The first diverging epoch of an N6 per-layer dump, named in the user's model.

Each record of the dump (one per executed epoch or epoch-controller block, see
``stedge board-run --per-layer``) carries the buffers that epoch wrote, named as the
c_info names them. Each buffer is found in the c_info, dequantized with its own scale
and zero point, laid out as its ``batch`` says, and compared with the tensor of the
user's model that holds the same values (:mod:`.epoch_names`), computed by onnxruntime
or LiteRT on the dump's input. Rows come in execution order (the epoch that wrote each
buffer); the first outside the tolerance names its epoch, kind, operators and the
model's nodes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .epochs import BOARD_KINDS, Buffer, EpochPlan, load_plan, record_epochs


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
    sidecar = p.with_suffix(".json")
    meta: dict[str, Any] = {}
    if sidecar.is_file():
        try:
            loaded = json.loads(sidecar.read_text(encoding="utf-8", errors="replace"))
            meta = loaded if isinstance(loaded, dict) else {}
        except ValueError as exc:
            raise OracleError(f"{sidecar}: not JSON ({exc})") from None
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


def _feed(ref: Any, dump: Dump) -> tuple[dict[str, Any], str]:
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


def _ref_as_buffer(ref_value: Any, buf: Buffer) -> Any:
    """The model's tensor in the buffer's logical shape (NHWC models are transposed)."""
    import numpy as np

    arr = np.asarray(ref_value, dtype=np.float32)
    if tuple(arr.shape) == buf.shape:
        return arr
    if arr.ndim == 4 and len(buf.shape) == 4 and tuple(arr.transpose(0, 3, 1, 2).shape) == \
            buf.shape and arr.shape[1:3] != buf.shape[1:3]:
        return arr.transpose(0, 3, 1, 2)
    return arr.reshape(buf.shape)


def diverge_epochs(model: Path | str, dump: Path | str, c_info: Path | str, *,
                   oe_model: Path | str | None = None, q_json: Path | str | None = None,
                   min_cos: float = 0.99, max_l2r: float | None = None) -> dict[str, Any]:
    """Map a real N6 per-layer dump to the c_info's epochs and buffers and the model's
    tensors, compare, and name the first epoch whose output leaves the tolerance.

    :param oe_model: the tool's ``*_OE_*.onnx`` (default: found next to ``c_info``).
    :param q_json: its ``*_Q.json`` (default: found next to ``c_info``).
    :returns: ``rows`` (one per compared buffer, execution order), ``first_divergent``,
        ``unmapped`` ([{record, tensor, reason}]), ``notes``, ``naming``.
    :raises OracleError: bad input, named: a c_info without buffers or epochs, a dump
        none of whose tensors is a buffer of the c_info (another model), buffers none of
        which is a tensor of the model, or a record whose size fits not its buffer.
    """
    from .epoch_names import Namer, open_models
    from .metrics import compute_metrics

    model_path, dump_path, info_path = Path(model), Path(dump), Path(c_info)
    plan = load_plan(info_path)
    ref, oe, renames, notes = open_models(
        model_path, info_path, oe_model=Path(oe_model) if oe_model else None,
        q_json=Path(q_json) if q_json else None)
    namer = Namer(plan, ref, oe, renames)
    data = read_dump(dump_path, plan)
    unmapped: list[dict[str, Any]] = []
    todo: list[tuple[int, int, Record, str, Buffer, Any]] = []
    found_any = False
    for index, rec in enumerate(data.records):
        span = record_epochs(rec.name, rec.op_id)
        for tname, raw in rec.tensors.items():
            desc = rec.descs.get(tname) or {}
            # The firmware names each tensor after its buffer; the address (and byte size)
            # finds a buffer only for a tensor that came unnamed (the client's "<node>.<k>").
            size = int(getattr(raw, "nbytes", 0)) or None
            unnamed = tname.startswith(f"{rec.name}.") and tname[len(rec.name) + 1:].isdigit()
            buf = plan.find(tname, desc.get("addr") or None if size and unnamed else None, size)
            if buf is None:
                unmapped.append({"record": rec.name, "tensor": tname,
                                 "reason": f"no buffer of this name or address in {info_path}"})
                continue
            found_any = True
            epoch = plan.producing_epoch(buf)
            num = epoch.num if epoch else (span[0] if span else 0)
            todo.append((num, index, rec, tname, buf, raw))
    if not found_any:
        shown = [t for r in data.records for t in r.tensors][:5]
        raise OracleError(
            f"{dump_path}: none of its {sum(len(r.tensors) for r in data.records)} record "
            f"tensor(s) ({', '.join(shown) or 'none'}) is a buffer of {info_path}: a dump of "
            "another model, or of another compilation of it")
    resolved = {buf.id: namer.resolve(buf) for _, _, _, _, buf, _ in todo}
    if not any(r.tensor for r in resolved.values()):
        why = next(iter(resolved.values())).how
        raise OracleError(
            f"{info_path}: none of the dump's buffers is a tensor of {model_path} (first: "
            f"{why}); " + ("; ".join(notes) or "is this c_info of another model?"))
    feed, source = _feed(ref, data)
    values = ref.run(feed)
    oe_values: dict[str, Any] = {}
    if oe is not None and any(r.tensor is None and r.oe_tensor for r in resolved.values()):
        oe_values = oe.run(_feed(oe, data)[0])  # buffers the user's model cannot show
    rows: list[dict[str, Any]] = []
    first = None
    for num, _, rec, tname, buf, raw in sorted(todo, key=lambda t: (t[0], t[1])):
        epoch = plan.epochs.get(num)
        where = f"{dump_path}: record {rec.name} tensor {tname!r} (c_info {info_path})"
        res = resolved[buf.id]
        base = {"record": rec.name, "board_kind": rec.board_kind, "epoch": epoch.name if epoch
                else f"epoch_{num}", "kind": epoch.kind if epoch else None,
                "operators": [f"{o.name} ({o.type})" for o in epoch.operators
                              if o.type not in ("Param", "Return")] if epoch else [],
                "model_nodes": namer.model_nodes(epoch) if epoch else [],
                "describe": epoch.describe() if epoch else rec.name,
                "buffer": buf.name, "layout": buf.layout, "tensor": res.tensor, "how": res.how}
        if raw is None or getattr(raw, "size", 0) == 0:
            unmapped.append({"record": rec.name, "tensor": tname, "reason": "no data: the "
                             "firmware sent the descriptor only (its dumpable-tensor list is "
                             "empty unless the firmware was built to upload this buffer)"})
            continue
        buf.to_real(raw, where=where)  # a record that fits not its buffer is bad input
        source_values, tensor, computed_by = values, res.tensor, ref
        if tensor is None and res.oe_tensor in oe_values and oe is not None:
            source_values, tensor, computed_by = oe_values, res.oe_tensor, oe
            base.update(tensor=tensor, how=f"{res.how}; compared with the OE model "
                                           f"{oe.path.name} instead")
        if tensor is None or tensor not in source_values:
            unmapped.append({"record": rec.name, "tensor": tname, "reason": res.how
                             if tensor is None else f"{tensor} was not computed"})
            continue
        board = buf.to_real(raw, where=where, fallback=computed_by.quant.get(tensor) or res.codes)
        try:
            expected = _ref_as_buffer(source_values[tensor], buf)
        except ValueError as exc:
            raise OracleError(f"{where}: model tensor {tensor} does not fit the buffer's "
                              f"shape {list(buf.shape)} ({exc})") from None
        m = compute_metrics(expected, board, classifier=False)
        ok = bool(m["cos"] >= min_cos) if m["cos"] == m["cos"] else bool(m["rmse"] == 0)
        if max_l2r is not None and not m["l2r"] <= max_l2r:
            ok = False
        row = {**base, "cos": m["cos"], "l2r": m["l2r"], "rmse": m["rmse"], "ok": ok}
        rows.append(row)
        if not ok and first is None:
            first = row
    return {"model": str(model_path), "c_info": str(info_path), "dump": str(dump_path),
            "tolerance": {"min_cos": min_cos, "max_l2r": max_l2r}, "input_source": source,
            "reference": f"{'LiteRT' if ref.kind == 'tflite' else 'onnxruntime'} on "
                         f"{model_path.name}", "naming": namer.naming, "notes": notes,
            "records": len(data.records), "compared": len(rows), "first_divergent": first,
            "rows": rows, "unmapped": unmapped}

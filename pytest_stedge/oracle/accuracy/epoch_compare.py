"""The first diverging epoch of an N6 per-layer dump, named in the user's model.

Each record of the dump (one per executed epoch or epoch-controller block, see
``stedge board-run --per-layer``) carries the buffers that epoch wrote, named as the
c_info names them. Each buffer is found in the c_info, dequantized with its own scale
and zero point, laid out as its ``batch`` says, and compared twice:

- with the tensor of the user's model that holds the same values (:mod:`.epoch_names`,
  moved into the buffer's layout by :mod:`.epoch_layout`), computed by onnxruntime or
  LiteRT on the dump's input: how far the board is from the user's model there;
- with the same buffer recomputed from the board's own inputs of that epoch
  (:mod:`.epoch_local`): whether the epoch itself is wrong. Rounding differences that
  travel down the graph leave this one alone, so it decides.

Rows come in execution order (the epoch that wrote each buffer); the first wrong one
names its epoch, kind, operators and the model's nodes, and the epochs before it that
no buffer could check.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .board_dump import Dump, Record, feed_for, read_dump
from .epoch_plan import Buffer, Epoch, EpochPlan, load_plan, record_epochs


def diverge_epochs(model: Path | str | None, dump: Path | str, c_info: Path | str, *,
                   oe_model: Path | str | None = None, q_json: Path | str | None = None,
                   min_cos: float = 0.99, max_l2r: float | None = None) -> dict[str, Any]:
    """Map a real N6 per-layer dump to the c_info's epochs and buffers and the model's
    tensors, compare, and name the first epoch whose outputs are wrong for its inputs.

    :param model: the user's model (.onnx or .tflite), the OE model, or None: the OE
        model beside ``c_info`` (the tool's own import, which the c_info records).
    :param oe_model: the tool's ``*_OE_*.onnx`` (default: found next to ``c_info``).
    :param q_json: its ``*_Q.json`` (default: found next to ``c_info``).
    :param min_cos: an epoch is wrong when a buffer it wrote, recomputed from its own
        inputs, has a lower cosine than this (end to end when it cannot be recomputed).
    :returns: ``rows`` (one per compared buffer, execution order: ``cos``/``l2r`` against
        the model end to end, ``local_cos``/``local_l2r`` against the recomputation,
        ``checked`` which decided), ``first_divergent``, ``unchecked_before`` (executed
        epochs before it that wrote nothing comparable), ``unmapped`` ([{record, tensor,
        reason}]), ``notes``, ``naming``.
    :raises OracleError: bad input, named: a c_info without buffers or epochs, a dump
        none of whose tensors is a buffer of the c_info (another model), buffers none of
        which is a tensor of the model, or a record whose size fits not its buffer.
    """
    comparer = EpochComparer(model, c_info, oe_model=oe_model, q_json=q_json,
                             min_cos=min_cos, max_l2r=max_l2r)
    return comparer.compare(dump)


# Each epoch's recomputation, by (OE model file, reference input): comparers of one
# compilation with different user models share the OE model's sessions. A few kept.
_ENGINES: dict[bytes, Any] = {}
_ENGINES_KEPT = 4


class EpochComparer:
    """One compilation and one reference, ready to judge any number of dumps of it (the
    models are loaded, and each epoch's recomputation built, once).

    Parameters as :func:`diverge_epochs`.
    """

    def __init__(self, model: Path | str | None, c_info: Path | str, *,
                 oe_model: Path | str | None = None, q_json: Path | str | None = None,
                 min_cos: float = 0.99, max_l2r: float | None = None) -> None:
        from .epoch_names import Namer, find_oe_files, open_models

        self.info_path = Path(c_info)
        self.plan = load_plan(self.info_path)
        if model is None:
            found = Path(oe_model) if oe_model else find_oe_files(self.info_path)[0]
            if found is None:
                raise OracleError(
                    f"{self.info_path}: no model given and no *_OE_*.onnx beside it "
                    "(generate writes it next to the c_info); give your .onnx or .tflite, "
                    "or --oe-model")
            model = found
        self.model_path = Path(model)
        self.ref, oe, renames, self.notes = open_models(
            self.model_path, self.info_path, oe_model=Path(oe_model) if oe_model else None,
            q_json=Path(q_json) if q_json else None)
        self.namer = Namer(self.plan, self.ref, oe, renames)
        self.space = self.namer.space
        self.min_cos, self.max_l2r = min_cos, max_l2r
        self._runs: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._engines = _ENGINES

    def _missing_oe(self) -> str:
        """What to give when the c_info's names are not the model's and no OE model maps
        them (the c_info records the md5 of both models it was compiled from)."""
        from .epoch_names import compiled_from, md5_signature

        signatures = compiled_from(self.info_path)
        if self.namer.direct and md5_signature(self.model_path) in signatures[:1]:
            oe = ", ".join(signatures[1:]) or "unknown"
            return ("the c_info names its buffers after the tool's import of this model (the "
                    f"*_OE_*.onnx, md5 {oe}, that generate writes with its *_Q.json next to "
                    "the c_info): give them with --oe-model and --q-json")
        return "is this c_info of another model?"

    def _reference(self, data: Dump) -> tuple[dict[str, Any], dict[str, Any], str]:
        """The model's and the OE model's tensors on the dump's input (cached by input)."""
        feed, source = feed_for(self.ref, data)
        key = hashlib.sha256(b"".join(
            v.tobytes() for _, v in sorted(feed.items()))).digest()
        if key not in self._runs:
            values = self.ref.run(feed)
            space_values = values if self.space is self.ref else self.space.run(
                feed_for(self.space, data)[0])
            self._runs[key] = (values, space_values)
        return (*self._runs[key], source)

    def compare(self, dump: Path | str) -> dict[str, Any]:
        """Judge one dump (see :func:`diverge_epochs` for what is returned)."""
        plan, namer, ref, space = self.plan, self.namer, self.ref, self.space
        dump_path, info_path = Path(dump), self.info_path
        data = read_dump(dump_path, plan)
        unmapped: list[dict[str, Any]] = []
        todo = _place(plan, data, info_path, unmapped)
        resolved = {buf.id: namer.resolve(buf) for _, _, _, _, buf, _ in todo}
        if not any(r.tensor for r in resolved.values()):
            why = next(iter(resolved.values())).how
            raise OracleError(
                f"{info_path}: none of the dump's buffers is a tensor of {self.model_path} "
                f"(first: {why}); " + ("; ".join(self.notes) or self._missing_oe()))
        values, space_values, source = self._reference(data)
        space_feed = feed_for(space, data)[0]  # what the OE model ran on, whoever's the model
        engine_key = hashlib.sha256(str(space.path.resolve()).encode() + b"".join(
            v.tobytes() for _, v in sorted(space_feed.items()))).digest()
        local = _Local(plan, namer, data, space, space_values, self._engines, engine_key)
        rows: list[dict[str, Any]] = []
        for num, _, rec, tname, buf, raw in sorted(todo, key=lambda t: (t[0], t[1])):
            row = _compare(plan.epochs.get(num), num, rec, tname, buf, raw, resolved[buf.id],
                           namer, ref, values, space, space_values, local, dump_path,
                           info_path, unmapped)
            if row is None:
                continue
            row["ok"] = _within(row, self.min_cos, self.max_l2r)
            rows.append(row)
        first = next((r for r in rows if not r["ok"]), None)
        return {"model": str(self.model_path), "c_info": str(info_path),
                "dump": str(dump_path),
                "tolerance": {"min_cos": self.min_cos, "max_l2r": self.max_l2r},
                "input_source": source,
                "reference": f"{'LiteRT' if ref.kind == 'tflite' else 'onnxruntime'} on "
                             f"{self.model_path.name}", "naming": namer.naming,
                "notes": self.notes, "local": local.describe(), "records": len(data.records),
                "compared": len(rows), "first_divergent": first,
                "unchecked_before": _unchecked(plan, rows, first), "rows": rows,
                "unmapped": unmapped}


def _place(plan: EpochPlan, data: Dump, info_path: Path, unmapped: list[dict[str, Any]]
           ) -> list[tuple[int, int, Record, str, Buffer, Any]]:
    """Each record tensor with its c_info buffer and the epoch that wrote it."""
    todo: list[tuple[int, int, Record, str, Buffer, Any]] = []
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
            epoch = plan.producing_epoch(buf)
            num = epoch.num if epoch else (span[0] if span else 0)
            todo.append((num, index, rec, tname, buf, raw))
    if not todo:
        shown = [t for r in data.records for t in r.tensors][:5]
        raise OracleError(
            f"{data.path}: none of its {sum(len(r.tensors) for r in data.records)} record "
            f"tensor(s) ({', '.join(shown) or 'none'}) is a buffer of {info_path}: a dump of "
            "another model, or of another compilation of it")
    return todo


class _Local:
    """Recomputes each epoch's buffers from the board's values of the buffers it reads
    (:mod:`.epoch_local`), once per epoch."""

    def __init__(self, plan: EpochPlan, namer: Any, data: Dump, space: Any,
                 space_values: dict[str, Any], engines: dict[bytes, Any], key: bytes) -> None:
        from .epoch_local import LocalReference

        self.plan, self.namer, self.space = plan, namer, space
        self.board: dict[str, Any] = {}
        for rec in data.records:
            for tname, raw in rec.tensors.items():
                if getattr(raw, "size", 0):
                    self.board.setdefault(tname, raw)
        self.cache: dict[int, dict[str, Any] | str] = {}
        self.reason = ""
        try:
            if key not in engines:  # one per model and input: its sessions are reused
                while len(engines) >= _ENGINES_KEPT:
                    engines.pop(next(iter(engines)))
                engines[key] = LocalReference(space, space_values)
            self.engine: Any = engines[key]
        except OracleError as exc:
            self.engine, self.reason = None, str(exc)

    def describe(self) -> str:
        """How the local check is made, for the report."""
        if self.engine is None:
            return f"no local recomputation ({self.reason}): rows are judged end to end"
        return (f"each epoch recomputed by onnxruntime on {self.space.path.name} from the "
                "board's own values of the buffers it reads")

    def values(self, epoch: Epoch, wanted: list[str]) -> dict[str, Any] | str:
        """The recomputed real values of ``wanted`` OE tensors of ``epoch``, or why not."""
        if self.engine is None:
            return self.reason
        cached = self.cache.get(epoch.num)
        if isinstance(cached, dict) and all(t in cached for t in wanted):
            return cached
        given: dict[str, Any] = {}
        for bid in epoch.inputs:
            buf = self.plan.buffers.get(bid)
            if buf is None or buf.is_param or buf.name not in self.board:
                continue
            res = self.namer.resolve(buf)
            tensor = res.oe_tensor
            if tensor is None or tensor in wanted or self.space.shapes.get(tensor) is None:
                continue
            try:
                real = buf.to_real(self.board[buf.name], where=f"buffer {buf.name}",
                                   fallback=self.space.quant.get(tensor) or res.codes)
                given[tensor] = real.reshape(self.space.shapes[tensor])
            except (OracleError, ValueError):
                continue
        try:
            out: dict[str, Any] | str = self.engine.recompute(wanted, given)
        except OracleError as exc:
            out = str(exc)
        self.cache[epoch.num] = out
        return out


def _compare(epoch: Epoch | None, num: int, rec: Record, tname: str, buf: Buffer, raw: Any,
             res: Any, namer: Any, ref: Any, values: dict[str, Any], space: Any,
             space_values: dict[str, Any], local: _Local, dump_path: Path, info_path: Path,
             unmapped: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One compared buffer (None, with the reason in ``unmapped``, when it cannot be)."""
    from .epoch_layout import identity, to_layout
    from .metrics import compute_metrics

    where = f"{dump_path}: record {rec.name} tensor {tname!r} (c_info {info_path})"
    base: dict[str, Any] = {
        "record": rec.name, "board_kind": rec.board_kind,
        "epoch": epoch.name if epoch else f"epoch_{num}", "kind": epoch.kind if epoch else None,
        "operators": [f"{o.name} ({o.type})" for o in epoch.operators
                      if o.type not in ("Param", "Return")] if epoch else [],
        "model_nodes": namer.model_nodes(epoch) if epoch else [],
        "describe": epoch.describe() if epoch else rec.name,
        "buffer": buf.name, "layout": buf.layout, "tensor": res.tensor, "how": res.how}
    if raw is None or getattr(raw, "size", 0) == 0:
        unmapped.append({"record": rec.name, "tensor": tname, "reason": "no data: the "
                         "firmware sent the descriptor only (its dumpable-tensor list is "
                         "empty unless the firmware was built to upload this buffer)"})
        return None
    buf.to_real(raw, where=where)  # a record that fits not its buffer is bad input
    source_values, tensor, computed_by, perm = values, res.tensor, ref, res.perm
    if tensor is None and res.oe_tensor in space_values and space is not ref:
        source_values, tensor, computed_by = space_values, res.oe_tensor, space
        perm = identity(len(buf.shape))
        base.update(tensor=tensor, how=f"{res.how}; compared with the OE model "
                                       f"{space.path.name} instead")
    if tensor is None or tensor not in source_values:
        unmapped.append({"record": rec.name, "tensor": tname, "reason": res.how
                         if tensor is None else f"{tensor} was not computed"})
        return None
    board = buf.to_real(raw, where=where, fallback=computed_by.quant.get(tensor) or res.codes)
    try:
        expected = to_layout(source_values[tensor], perm, buf.shape)
    except ValueError as exc:
        unmapped.append({"record": rec.name, "tensor": tname, "reason": f"{res.how}: {exc}"})
        return None
    m = compute_metrics(expected, board, classifier=False)
    row = {**base, "cos": m["cos"], "l2r": m["l2r"], "rmse": m["rmse"],
           "local_cos": None, "local_l2r": None, "checked": "end to end"}
    if epoch is not None and res.oe_tensor is not None:
        recomputed = local.values(epoch, [res.oe_tensor])
        if isinstance(recomputed, dict) and res.oe_tensor in recomputed:
            lm = compute_metrics(recomputed[res.oe_tensor].reshape(buf.shape), board,
                                 classifier=False)
            row.update(local_cos=lm["cos"], local_l2r=lm["l2r"], checked="local")
        elif isinstance(recomputed, str):
            row["checked"] = f"end to end ({recomputed})"
    return row


def _within(row: dict[str, Any], min_cos: float, max_l2r: float | None) -> bool:
    """Whether a row passes: its local figures when the epoch was recomputed, else its
    end-to-end ones. A NaN cosine (an all-zero tensor) passes only when nothing differs."""
    local = row["checked"] == "local"
    cos = row["local_cos"] if local else row["cos"]
    l2r = row["local_l2r"] if local else row["l2r"]
    ok = bool(cos >= min_cos) if not math.isnan(cos) else bool(l2r == 0 or math.isnan(l2r))
    if max_l2r is not None and not l2r <= max_l2r:
        ok = False
    return ok


def _unchecked(plan: EpochPlan, rows: list[dict[str, Any]],
               first: dict[str, Any] | None) -> list[str]:
    """Executed epochs after the last good row and before the first wrong one that
    wrote no compared buffer: the fault may lie in any of them."""
    if first is None:
        return []
    first_num = int(str(first["epoch"]).rsplit("_", 1)[1])
    good = [int(str(r["epoch"]).rsplit("_", 1)[1]) for r in rows
            if r["ok"] and int(str(r["epoch"]).rsplit("_", 1)[1]) < first_num]
    after = max(good, default=-1)
    seen = {int(str(r["epoch"]).rsplit("_", 1)[1]) for r in rows}
    return [e.name for e in plan.executed_epochs() if after < e.num < first_num
            and e.num not in seen]

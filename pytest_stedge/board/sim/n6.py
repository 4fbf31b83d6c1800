"""N6 mode of the simulator: per-layer records per epoch, as a real STM32N6 sends them.

The ATONN validation firmware reports one operator message per executed epoch (name
``""``, type ``INTERNAL << 24 | kind`` with kind 0 HW, 2 SW, 3 hybrid, 4 EC, id
``last_epoch << 16 | epoch``), then one tensor per buffer the epoch wrote: the buffer's
name, its memory shape (``UND`` dims), its format, scale and zero point, its address,
and its raw bytes (``../shared/board-protocol.md`` §7.5, §8.6, §9). This module plays
that from a ``network_c_info.json`` and the ONNX model whose names it uses (the tool's
``*_OE_*.onnx``): onnxruntime computes each buffer's tensor, which is quantized with the
buffer's own scale and zero point and laid out as its ``batch`` says.

``upload=False`` plays the stock firmware, whose list of dumpable tensors is empty: the
descriptors come without data. Faults (``Faults.wrong_from_node`` = an epoch name or
position) corrupt every buffer from that epoch on, and the outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pytest_stedge.board import protocol as bp
from pytest_stedge.errors import BoardError, OracleError
from pytest_stedge.oracle.accuracy.epoch_names import Namer
from pytest_stedge.oracle.accuracy.epoch_plan import Buffer, Epoch, EpochPlan, load_plan
from pytest_stedge.oracle.accuracy.refmodel import load_reference

from .engine import Session
from .model import CPU_HZ, SimModel, SimNode

_KIND_CODES = {"HW": 0, "SW": 2, "hybrid": 3, "EC": 4}
_FXP = 15


def memory_dims(buf: Buffer) -> tuple[int, ...]:
    """The buffer's shape in memory, as the firmware sends it in ``dims``."""
    if len(buf.shape) != 4 or buf.batch <= 1:
        return buf.shape
    n, c, h, w = buf.shape
    b = min(buf.batch, c)
    return (n, h, w, c) if b == c else (n, -(-c // b), h, w, b)


def format_of(buf: Buffer) -> int:
    """The buffer-format word of a c_info buffer (§7.4): FXP with ``qmn`` bits for Q."""
    dt = np.dtype(buf.dtype)
    bits = dt.itemsize * 8
    signed = 0x00800000 if dt.kind in "if" else 0
    if dt.kind == "f":
        return signed | (1 << 17) | (bits << 7) | 0x40
    if buf.frac_bits:
        return signed | (_FXP << 17) | (bits << 7) | ((buf.frac_bits + 64) & 0x7F)
    return signed | (2 << 17) | (bits << 7) | 0x40


def encode(buf: Buffer, real: Any) -> np.ndarray:
    """Real values in the buffer's logical shape -> its stored codes in memory order."""
    dt = np.dtype(buf.dtype)
    values = np.asarray(real, dtype=np.float64).reshape(buf.shape)
    if dt.kind == "f":
        codes = values.astype(dt)
    else:
        info = np.iinfo(dt)
        if buf.frac_bits:
            q = np.round(values * 2.0 ** buf.frac_bits)
        else:
            scale = buf.scales[0] if buf.scales else 1.0
            q = np.round(values / scale) + (buf.offsets[0] if buf.offsets else 0)
        codes = np.clip(q, info.min, info.max).astype(dt)
    if len(buf.shape) != 4 or buf.batch <= 1:
        return codes
    n, c, h, w = buf.shape
    b = min(buf.batch, c)
    blocks = np.zeros((n, -(-c // b), h, w, b), dtype=dt)
    for channel in range(c):  # channel k lives in block k // b, lane k % b
        blocks[:, channel // b, :, :, channel % b] = codes[:, channel]
    return blocks.reshape(memory_dims(buf))


class N6SimModel(SimModel):
    """An ONNX model served epoch by epoch as a c_info says.

    :param path: the ONNX model whose tensor names the c_info uses (its OE model).
    :param c_info: the ``network_c_info.json`` of that compilation.
    :param upload: send intermediate data (a firmware built to upload them) or not.
    """

    def __init__(self, path: Path, c_info: Path, *, upload: bool = True) -> None:
        super().__init__(path)
        try:
            self.plan: EpochPlan = load_plan(c_info)
            ref = load_reference(path)
        except OracleError as exc:
            raise BoardError(str(exc)) from None
        self.quant = ref.quant
        namer = Namer(self.plan, ref)
        self.upload = upload
        self.epochs: list[Epoch] = []
        self.buffers: dict[str, tuple[Buffer, str | None]] = {}
        self.codes: dict[str, tuple[float, int] | None] = {}
        nodes = []
        for epoch in self.plan.executed_epochs():
            names = []
            for bid in epoch.outputs:
                buf = self.plan.buffers.get(bid)
                if buf is None or buf.is_param:
                    continue
                res = namer.resolve(buf)
                self.buffers[buf.name] = (buf, res.tensor)
                self.codes[buf.name] = res.codes
                names.append(buf.name)
            size = sum(self.buffers[n][0].elements for n in names)
            self.epochs.append(epoch)
            nodes.append(SimNode(epoch.name, epoch.kind, tuple(names),
                                 round(0.01 + size * 2e-5, 6)))
        if not any(t for _, t in self.buffers.values()):
            raise BoardError(f"{c_info}: none of its buffers is a tensor of {path}: the c_info "
                             "of another model?")
        self.nodes = nodes

    session_class: type[Session]  # set below, once N6Session exists

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Model outputs by name, plus every buffer's stored codes by buffer name."""
        values = {**feeds, **super().infer(feeds)}
        out = dict(values)
        for name, (buf, tensor) in getattr(self, "buffers", {}).items():
            if tensor is None or tensor not in values:
                out[name] = np.zeros(memory_dims(buf), dtype=buf.dtype)  # scratch: garbage
                continue
            raw = np.asarray(values[tensor])
            q = self.quant.get(tensor)
            if not buf.has_quantization and not buf.dtype.startswith("float"):
                codes = self.codes.get(name)
                if raw.dtype.kind not in "iu" and codes is not None:  # re-quantize DQ'd codes
                    raw = np.round(raw / codes[0]) + codes[1]
                out[name] = encode(buf, raw)  # the model's codes, moved as they are
                continue
            real = (raw.astype(np.float64) - q[1]) * q[0] if q and raw.dtype.kind in "iu" \
                else raw
            out[name] = encode(buf, real)
        return out

    def op_msg(self, idx: int) -> dict[str, Any]:
        """The epoch's operator message, as the ATONN firmware sends it (no LAST flag)."""
        epoch, node = self.epochs[idx], self.nodes[idx]
        flags = bp.OP_INTERNAL | (0 if node.tensors else bp.OP_WITHOUT_TENSOR)
        cycles = int(node.duration_ms * CPU_HZ / 1000)
        return {"name": "", "type": flags << 24 | _KIND_CODES.get(epoch.kind, 0),
                "id": epoch.num << 16 | epoch.num, "duration": node.duration_ms,
                "counter_type": bp.COUNTER_FMT_32B << 16,
                "counters": [cycles // 10, cycles - cycles // 5, cycles // 10],
                "stack_used": -1, "heap_used": -1}

    def info_msg(self, name: str, signature: str) -> dict[str, Any]:
        """The model info, IO descriptors with their scale and zero point (as the N6 sends)."""
        from pytest_stedge.board import tensors as bt

        msg = super().info_msg(name, signature)
        for key, descs, flag in (("inputs", self.inputs, bp.TENSOR_INPUT),
                                 ("outputs", self.outputs, bp.TENSOR_OUTPUT)):
            msg[key] = [bt.tensor_desc_msg(d.name, d.dtype, d.shape, flag | bp.TENSOR_IN_MEMPOOL,
                                           *self.quant.get(d.name, (0.0, 0)))
                        for d in descs]
        return msg

    def buffer_desc(self, name: str, arr: np.ndarray, flags: int) -> dict[str, Any] | None:
        """The firmware's descriptor of one buffer (None for non-buffer tensors)."""
        if name not in self.buffers:
            return None
        buf = self.buffers[name][0]
        dims = memory_dims(buf)
        return {"name": name, "format": format_of(buf), "size": int(np.prod(dims)),
                "n_dims": (bp.SHAPE_UND << 24) | len(dims), "dims": [int(d) for d in dims],
                "scale": float(buf.scales[0]) if buf.scales and not buf.frac_bits else 0.0,
                "zeropoint": int(buf.offsets[0]) if buf.offsets and not buf.frac_bits else 0,
                "addr": buf.address or 0, "flags": flags}


class N6Session(Session):
    """A host connection to the N6 board: buffer descriptors, optional data."""

    def send_tensor(self, name: str, arr: np.ndarray, flags: int, with_data: bool,
                    state: int = bp.S_PROCESSING) -> None:
        model = self.sim.model
        desc = model.buffer_desc(name, arr, flags) if isinstance(model, N6SimModel) else None
        if desc is None:
            return super().send_tensor(name, arr, flags, with_data, state)
        # the stock firmware filters intermediate buffers only: outputs come with data
        internal = bool(flags & bp.TENSOR_INTERNAL)
        upload = with_data and (not internal or (isinstance(model, N6SimModel) and model.upload))
        datas = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        if not upload:
            desc["flags"] |= bp.TENSOR_NO_DATA
            datas = b""
        self.send(state, tensor={"desc": desc, "data": {"type": 0, "size": len(datas),
                                                        "addr": desc["addr"], "datas": datas}})


N6SimModel.session_class = N6Session

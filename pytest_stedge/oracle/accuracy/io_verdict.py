"""The outputs of a board run against the reference, with ST's metrics: what can be said
when the board sent no intermediate data.

ST's stock validation firmware answers a per-layer run with descriptors only: its
list of buffers whose data may be uploaded is empty (``_dumpable_tensor_name[]`` in the
N6 firmware's ``aiValidation_ATON.c``, board-protocol.md source S5), so only the model's
outputs come with data. They are compared here, output by output, with the metrics
``stedgeai validate`` prints (``metrics.compute_metrics``): the reference is the model
run on the dump's own input, or, for a ``*_val_io.npz`` that ``validate`` wrote, the
``m_outputs_N`` the tool computed itself beside the board's ``c_outputs_N``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .board_dump import read_sidecar

# What per-epoch data needs, and how the N6 validation project gives it: read in ST's
# firmware (aiValidation_ATON.c of an NPU_Validation build, X-CUBE-AI 10.2, public copy:
# SeongMin1000/N6_cusotm_validation @ b33866f2, board-protocol.md source S5).
PER_EPOCH_NEEDS = (
    "per-epoch data needs a validation firmware whose SYNC answer has the observer "
    "capability (CAP_OBSERVER, bit 0: `stedge boards --probe` lists it) run in "
    "PER_LAYER_WITH_DATA mode (CMD_NETWORK_RUN param 0x7: `stedge board-run --per-layer`). "
    "ST's NPU_Validation firmware sets CAP_OBSERVER (USE_OBSERVER 1 in "
    "X-CUBE-AI/App/aiValidation_ATON.c) but uploads a buffer's data only when the buffer's "
    "name is listed in `_dumpable_tensor_name[]` in that file, which ships empty: add the "
    "c_info buffer names to compare (at most 16 per epoch), rebuild and flash the "
    "firmware, and run per layer again")

# The flat metric each output figure feeds, and which way is worse (result.py's rule:
# the worst output decides).
_FLAT = {"cos": "higher", "snr": "higher", "nse": "higher", "acc": "higher",
         "l2r": "lower", "rmse": "lower", "mae": "lower"}


def is_val_io(arrays: Mapping[str, Any]) -> bool:
    """Whether arrays are a ``*_val_io.npz`` (the reference beside the board's outputs)."""
    return any(k.startswith("m_outputs_") and "c" + k[1:] in arrays for k in arrays)


def val_io_outputs(path: Path) -> list[dict[str, Any]]:
    """``c_outputs_N`` (the board) against ``m_outputs_N`` (the tool's reference), each
    dequantized as the validate report or c_info beside the file states it.

    :raises OracleError: integer outputs whose quantization nothing beside states.
    """
    from .metrics import compute_metrics, load_arrays, pair_outputs
    from .output_quant import stated_quantization

    arrays = load_arrays(path)
    stated = stated_quantization(path)
    rows = []
    for k, (name, ref, pred) in enumerate(pair_outputs(arrays, None, str(path)), start=1):
        q = stated.get(int(name.rsplit("_", 1)[1]) if name[-1:].isdigit() else k)
        integer = any(getattr(a, "dtype", None) is not None and a.dtype.kind in "iu"
                      for a in (ref, pred))
        if integer and q is None:
            raise OracleError(f"{path}: {name} holds integer codes and no validate report or "
                              "c_info beside it states their scale and zero point")
        scale, zero = (q.scale, q.zero_point) if q is not None and integer else (None, None)
        metrics = compute_metrics(ref, pred, scale=scale, zero_point=zero, classifier=None)
        rows.append({"name": name, "reference": f"{name} (the tool's reference)",
                     "how": "the board's c_outputs beside the tool's m_outputs", **metrics})
    return rows


def dump_outputs(model: Path, dump: Path, c_info: Path | None = None, *,
                 oe_model: Path | None = None, q_json: Path | None = None) -> list[dict[str, Any]]:
    """The outputs of a ``stedge board-run`` dump against ``model`` run on the dump's input.

    An output named after a c_info buffer is read as the buffer (its layout, scale and
    zero point) and compared with the model tensor it maps to; any other output is
    compared with the model output of the same name, else of the same position.

    :raises OracleError: no output in the dump, or one whose size fits no model output.
    """
    from .board_dump import feed_for, read_dump
    from .epoch_layout import identity, to_layout
    from .metrics import compute_metrics, load_arrays
    from .refmodel import load_reference

    meta = read_sidecar(dump)
    arrays = load_arrays(dump)
    names = [n for n in meta.get("outputs") or [] if n in arrays]
    if not names:
        raise OracleError(f"{dump}: no output arrays (the .json sidecar of `stedge board-run` "
                          "names them)")
    plan = namer = None
    if c_info is not None:
        from .epoch_names import Namer, open_models
        from .epoch_plan import load_plan

        plan = load_plan(c_info)
        ref, oe, renames, _ = open_models(model, c_info, oe_model=oe_model, q_json=q_json)
        namer = Namer(plan, ref, oe, renames)
    else:
        ref = load_reference(model)
    data = read_dump(dump, plan) if plan is not None else None
    if data is None:
        from .board_dump import Dump

        data = Dump(dump, [], {n: arrays[n] for n in meta.get("inputs") or [] if n in arrays},
                    {k: (float(v[0]), int(v[1])) for k, v in (meta.get("quant") or {}).items()})
    values = ref.run(feed_for(ref, data)[0])
    quant = data.quant
    rows = []
    for position, name in enumerate(names):
        board = arrays[name]
        if board.size == 0:
            raise OracleError(f"{dump}: output {name!r} came without data (a run in PERF "
                              "mode sends none)")
        buf = plan.find(name) if plan is not None else None
        how = ""
        tensor: str | None
        if buf is not None and namer is not None:
            res = namer.resolve(buf)
            if res.tensor is None or res.tensor not in values:
                raise OracleError(f"{dump}: output {name!r}: {res.how}")
            real = buf.to_real(board, where=f"{dump}: output {name!r}",
                               fallback=ref.quant.get(res.tensor) or res.codes)
            try:
                expected = to_layout(values[res.tensor], res.perm or identity(len(buf.shape)),
                                     buf.shape)
            except ValueError as exc:
                raise OracleError(f"{dump}: output {name!r} = {res.tensor}: {exc}") from None
            tensor, how = res.tensor, res.how
        else:
            tensor = name if name in values else (
                ref.outputs[position] if position < len(ref.outputs) else None)
            if tensor is None:
                raise OracleError(f"{dump}: output {name!r} is no output of {model}")
            real = _real(board, quant.get(name))
            try:
                expected = to_layout(values[tensor], identity(len(board.shape)), real.shape)
            except ValueError as exc:
                raise OracleError(f"{dump}: output {name!r} against {tensor}: {exc}") from None
            how = "same name" if tensor == name else f"output #{position + 1} of the model"
        metrics = compute_metrics(expected, real, classifier=None)
        rows.append({"name": name, "reference": tensor, "how": how, **metrics})
    return rows



def _real(arr: Any, q: tuple[float, int] | None) -> Any:
    import numpy as np

    from .metrics import dequantize

    arr = np.asarray(arr)
    if arr.dtype.kind in "iu" and q is not None:
        return dequantize(arr, q[0], q[1])
    return arr.astype(np.float32)


def flat(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``val_cos``, ``val_snr`` ... of the worst output, as the store names them."""
    import math

    out: dict[str, float] = {}
    for key, better in _FLAT.items():
        values = [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))
                  and not math.isnan(float(r[key]))]
        if values:
            out[f"val_{key}"] = min(values) if better == "higher" else max(values)
    return out

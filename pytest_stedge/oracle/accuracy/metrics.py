"""The tool's validation metrics, with the tool's definitions.

See ``../shared/validation-and-protocol.md`` §1.2: per output tensor, over all
samples flattened together, ``e = r - p`` with ``r`` the reference and ``p`` the
prediction; L2R is normalised by the prediction's norm, MEAN is reference minus
prediction, STD and the NSE variance use ddof 1 (the variance plus float32's
epsilon, ST's guard), SNR uses the reference power.
Integer outputs are dequantized first, ``(q - zp) * scale`` in float32, both sides
with the same parameters. The arithmetic runs in the arrays' own precision (float32
for dequantized int8, float64 when the reference is float64): that is what makes
the last printed digit of the tool's L2R and RMSE agree.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

METRIC_KEYS = ("acc", "rmse", "mae", "l2r", "mean", "std", "nse", "cos", "snr")


def dequantize(values: Any, scale: float | None, zero_point: int | None) -> Any:
    """``(q - zp) * scale`` in float32 for integer arrays; float arrays unchanged."""
    import numpy as np

    arr = np.asarray(values)
    if np.issubdtype(arr.dtype, np.integer):
        q = arr.astype(np.int32) - np.int32(zero_point or 0)
        return q.astype(np.float32) * np.float32(1.0 if scale is None else scale)
    if not np.issubdtype(arr.dtype, np.floating):
        return arr.astype(np.float64)
    return arr


def looks_like_classifier(reference: Any) -> bool:
    """Auto-detection (our reading): one row of >1 class scores per sample that
    sum to 1 (softmax) or are one-hot. ST's own rule is not public."""
    import numpy as np

    ref = np.asarray(reference, dtype=np.float64)
    if ref.ndim < 2 or ref.shape[-1] < 2 or ref.size == 0:
        return False
    rows = ref.reshape(-1, ref.shape[-1])
    if rows.min() < 0:
        return False
    return bool(np.allclose(rows.sum(axis=1), 1.0, atol=1e-3))


def compute_metrics(
    reference: Any,
    prediction: Any,
    *,
    scale: float | None = None,
    zero_point: int | None = None,
    classifier: bool | None = None,
) -> dict[str, float]:
    """The tool's metrics of one output tensor (all samples together).

    :param reference: reference output, samples first (int8 is dequantized with
        ``scale``/``zero_point``).
    :param prediction: the evaluated model's output, same number of elements.
    :param classifier: force (True) or skip (False) ``acc``; None auto-detects.
    :returns: ``rmse, mae, l2r, mean, std, nse, cos, snr`` and ``acc`` (percent)
        for classifiers. Degenerate cases follow numpy (``inf``/``nan``).
    :raises OracleError: the element counts differ.
    """
    import numpy as np

    r_full = dequantize(reference, scale, zero_point)
    p_full = dequantize(prediction, scale, zero_point)
    if r_full.size != p_full.size:
        raise OracleError(
            f"reference has {r_full.size} elements {tuple(r_full.shape)} but prediction has "
            f"{p_full.size} {tuple(p_full.shape)}: they must hold the same samples"
        )
    # The reference's precision rules (ST casts the prediction to it: a float32 ground
    # truth against a float64 model output compares in float32).
    dtype = np.result_type(r_full.dtype, np.float32)
    r = r_full.ravel().astype(dtype)
    p = p_full.ravel().astype(dtype)
    e = r - p
    n = e.size
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mse = float(np.mean(e * e)) if n else math.nan
        norm_r = float(np.linalg.norm(r))
        norm_p = float(np.linalg.norm(p))
        norm_e = float(np.linalg.norm(e))
        # ST's guard: the variance gets float32's epsilon added (decides NSE's 6th digit).
        var_r = float(np.std(r, ddof=1) ** 2 + np.finfo(np.float32).eps) if n > 1 else math.nan
        power_r = float(np.sum(r * r))
        power_e = float(np.sum(e * e))
        out: dict[str, float] = {
            "rmse": float(np.sqrt(np.mean(e * e))) if n else math.nan,
            "mae": float(np.mean(np.abs(e))),
            "l2r": float(np.linalg.norm(e) / np.linalg.norm(p))
            if norm_p
            else (0.0 if norm_e == 0 else math.inf),
            "mean": float(np.mean(e)),
            "std": float(np.std(e, ddof=1)) if n > 1 else math.nan,
            "nse": 1.0 - mse / var_r if var_r else (1.0 if mse == 0 else -math.inf),
            "cos": float(np.dot(r, p) / (np.linalg.norm(r) * np.linalg.norm(p)))
            if norm_r and norm_p
            else math.nan,
            "snr": 10.0 * math.log10(power_r / power_e)
            if power_e and power_r
            else (math.inf if not power_e else -math.inf),
        }
    if classifier is None:
        classifier = looks_like_classifier(r_full)
    if classifier:
        classes = r_full.shape[-1] if r_full.ndim else 1
        rr = r_full.reshape(-1, classes)
        pp = p_full.reshape(-1, classes)
        out["acc"] = float(np.mean(rr.argmax(axis=-1) == pp.argmax(axis=-1)) * 100.0)
    return out


def _load_csv(p: Path) -> Any:
    """A ``*_val_{m,c}_outputs_N.csv`` of the tool: ``#`` header lines give the dtype
    (``# dtype=float32``) and the shape (``# (10, 1, 1, 3)/float32, ...``)."""
    import numpy as np

    dtype, shape, rows = "float32", None, []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        text = line.strip()
        if text.startswith("#"):
            found = re.match(r"#\s*dtype=(\w+)", text)
            if found:
                dtype = found.group(1)
            found = re.match(r"#\s*\(([\d, ]+)\)/", text)
            if found:
                shape = tuple(int(d) for d in found.group(1).split(",") if d.strip())
            continue
        if text:
            try:
                rows.append([float(v) for v in text.split(",")])
            except ValueError as exc:
                raise OracleError(f"{p}: not a numeric csv line: {text[:60]!r}") from exc
    if not rows:
        raise OracleError(f"{p}: the csv holds no data rows (the tool writes none past 512 items)")
    arr = np.array(rows, dtype=dtype)
    if shape is not None and int(np.prod(shape)) == arr.size:
        arr = arr.reshape(shape)
    return arr


def load_arrays(path: Path | str) -> dict[str, Any]:
    """Arrays of an ``.npy`` (key ``""``), ``.npz`` or the tool's ``.csv`` file.

    :raises OracleError: missing or unreadable file.
    """
    import numpy as np

    p = Path(path)
    if not p.is_file():
        raise OracleError(f"{p}: no such file (expected .npy, .npz or the tool's .csv)")
    if p.suffix.lower() == ".csv":
        return {"": _load_csv(p)}
    try:
        data = np.load(p, allow_pickle=False)
    except Exception as exc:
        raise OracleError(f"{p}: not a numpy .npy/.npz file ({exc})") from exc
    if isinstance(data, np.ndarray):
        return {"": data}
    with data:
        return {k: data[k] for k in data.files}


def pair_outputs(
    reference: dict[str, Any], prediction: dict[str, Any] | None, where: str
) -> list[tuple[str, Any, Any]]:
    """Match reference and prediction arrays into ``(name, ref, pred)`` per output.

    A ``*_val_io.npz`` alone pairs ``m_outputs_N`` with ``c_outputs_N``; two files
    pair equal keys, or ``m_outputs_N``/``c_outputs_N``, or their only arrays.
    """
    if prediction is None:
        pairs = [
            (k, reference[k], reference["c" + k[1:]])
            for k in sorted(reference)
            if k.startswith("m_outputs_") and "c" + k[1:] in reference
        ]
        if not pairs:
            raise OracleError(
                f"{where}: no m_outputs_N / c_outputs_N pair; give REFERENCE and PREDICTION "
                f"files, or a *_val_io.npz (keys found: {sorted(reference)})"
            )
        return pairs
    ref = {k: v for k, v in reference.items() if not k.startswith(("m_inputs", "c_inputs"))}
    pred = {k: v for k, v in prediction.items() if not k.startswith(("m_inputs", "c_inputs"))}
    common = [k for k in ref if k in pred]
    if common:
        return [(k or "output", ref[k], pred[k]) for k in common]
    mapped = [
        (k, ref[k], pred["c" + k[1:]]) for k in ref if k.startswith("m_") and "c" + k[1:] in pred
    ]
    if mapped:
        return mapped
    if len(ref) == 1 and len(pred) == 1:
        (rk, rv), (_pk, pv) = next(iter(ref.items())), next(iter(pred.items()))
        return [(rk or "output", rv, pv)]
    raise OracleError(
        f"{where}: cannot pair outputs: reference keys {sorted(ref)}, prediction keys "
        f"{sorted(pred)} (use equal names, m_outputs_N/c_outputs_N, or one array each)"
    )

"""`validate`: the tool's default stimulus, the reference run, a fake C model and ST's metrics."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from .context import Run

SAMPLES = 10
_LEGEND = [
    " acc  : Accuracy (class, axis=-1)",
    " rmse : Root Mean Squared Error",
    " mae  : Mean Absolute Error",
    " l2r  : L2 relative error",
    " mean : Mean error",
    " std  : Standard deviation error",
]


def metrics(r: np.ndarray, p: np.ndarray, with_snr: bool) -> dict[str, Any]:
    """ST's metric set (validation-and-protocol.md §1.2) over flattened float64 vectors."""
    r = np.asarray(r, np.float64).ravel()
    p = np.asarray(p, np.float64).ravel()
    e = r - p
    mse = float(np.mean(e * e))
    nr, npn = float(np.linalg.norm(r)), float(np.linalg.norm(p))
    var = float(np.var(r, ddof=1)) if r.size > 1 else 0.0
    out: dict[str, Any] = {
        "rmse": float(np.sqrt(mse)),
        "mae": float(np.mean(np.abs(e))),
        "l2r": float(np.linalg.norm(e) / npn) if npn else 0.0,
        "mean": float(np.mean(e)),
        "std": float(np.std(e, ddof=1)) if e.size > 1 else 0.0,
    }
    if with_snr:
        out["snr"] = float(10 * np.log10(np.sum(r * r) / np.sum(e * e))) if mse else float("inf")
    out["nse"] = 1.0 - mse / var if var else 1.0
    out["cos"] = float(np.dot(r, p) / (nr * npn)) if nr and npn else 1.0
    return out


def _user_inputs(files: list[str], count: int) -> list[np.ndarray]:
    """Arrays from `--valinput` files (.npy, or .npz with m_inputs_<k> / x_test keys)."""
    arrays: list[np.ndarray] = []
    for name in files:
        data = np.load(name, allow_pickle=False)
        if isinstance(data, np.ndarray):
            arrays.append(data)
            continue
        keys = sorted(k for k in data.files if "m_inputs" in k or "x_test" in k) or data.files
        arrays.extend(data[k] for k in keys)
    return arrays[:count]


def stimulus(run: Run) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """(reference inputs, C-model inputs, log lines): the tool's default stimulus is seed 42,
    uniform(0, 1) for float inputs and the whole representable range for int8 inputs."""
    seed = run.opts.get("seed") or 42
    rng = np.random.RandomState(seed)
    m_in, c_in = [], []
    batch = int(run.opts.get("batch_size") or SAMPLES)
    files = list(run.opts.get("valinput") or [])
    given = _user_inputs(files, len(run.dep.inputs)) if files else []
    log = [f" loading file: {f}" for f in files] or [
        f" generating random data, size={batch}, seed={seed}, range=(0, 1)"
    ]
    for k, t in enumerate(run.dep.inputs):
        dims = tuple(d if d > 0 else 1 for d in t.shape[1:])
        x: np.ndarray
        if k < len(given):
            x = given[k].astype(np.float32).reshape((-1,) + dims)
        elif t.quantized and t.scale:
            s, zp = t.scale, t.zero_point or 0
            x = rng.uniform((-128 - zp) * s, (127 - zp) * s, size=(batch,) + dims)
        else:
            x = rng.uniform(0, 1, size=(batch,) + dims)
        x = x.astype(np.float32)
        m_in.append(x)
        if t.quantized and t.scale:
            zp = t.zero_point or 0
            c_in.append(np.clip(np.round(x / t.scale) + zp, -128, 127).astype(np.int8))
        else:
            c_in.append(x)
    return m_in, c_in, log


def _reference(path: Path, inputs: list[np.ndarray], names: list[str]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    feeds_meta = {i.name: i for i in sess.get_inputs()}
    outs: list[list[np.ndarray]] = []
    for k in range(inputs[0].shape[0]):
        feed = {}
        for name, x in zip(names, inputs, strict=False):
            want = feeds_meta[name].type
            arr = x[k : k + 1]
            feed[name] = arr.astype(np.int8 if "int8" in want else np.float32)
        res = sess.run(None, feed)
        outs.append(res)
    return [np.concatenate([o[j] for o in outs]).astype(np.float64) for j in range(len(outs[0]))]


def _c_model(ref: np.ndarray, spec: dict[str, Any], seed: int) -> np.ndarray:
    """The fake C model: the reference plus a small deterministic error, or a fault."""
    rng = np.random.RandomState(seed)
    r = ref.ravel()
    noise = rng.standard_normal(r.size)
    if spec.get("identical"):  # bit-exact outputs: the real tool then prints snr=inf
        p = r.copy()
    elif spec.get("uncorrelated"):
        p = noise * (np.std(r) or 1.0) + np.mean(r)
    elif "cos" in spec:
        target = float(spec["cos"])
        rn = r / (np.linalg.norm(r) or 1.0)
        orth = noise - np.dot(noise, rn) * rn
        orth /= np.linalg.norm(orth) or 1.0
        p = (target * rn + np.sqrt(max(0.0, 1 - target * target)) * orth) * np.linalg.norm(r)
    else:
        p = r + noise * 1e-3 * (np.std(r) or 1.0)
    out: np.ndarray = np.asarray(p).reshape(ref.shape)
    return out


def run_validation(
    run: Run,
) -> tuple[
    dict[str, Any], list[str], dict[str, np.ndarray], list[tuple[str, str, dict[str, Any], str]]
]:
    """Run it: (c_info `validation` block, report lines, npz arrays, summary rows)."""
    m_in, c_in, data_log = stimulus(run)
    refs = _reference(run.facts.path, m_in, [t.name for t in run.dep.inputs])
    spec = run.faults.get("validate") or {}
    with_snr = run.ver.key >= (4, 0, 0)
    mode = "TARGET" if run.opts.get("mode") == "target" else "HOST"
    seed = int(hashlib.md5(run.facts.md5.encode()).hexdigest()[:8], 16)
    arrays: dict[str, np.ndarray] = {}
    for k, (m, c) in enumerate(zip(m_in, c_in, strict=False), 1):
        arrays[f"m_inputs_{k}"], arrays[f"c_inputs_{k}"] = m, c
    rows, val, lines = [], [], []
    for k, (t, ref) in enumerate(zip(run.dep.outputs, refs, strict=False), 1):
        p = _c_model(ref, spec, seed + k)
        if t.quantized and t.scale:
            q = np.clip(np.round(p / t.scale) + (t.zero_point or 0), -128, 127).astype(np.int8)
            pf = (q.astype(np.int32) - (t.zero_point or 0)) * np.float32(t.scale)
            c_out: np.ndarray = q
        else:
            pf = p.astype(np.float32)
            c_out = pf
        rank = c_out.ndim
        c_layout = c_out.reshape((c_out.shape[0], 1, 1, -1)) if rank == 2 else c_out
        arrays[f"m_outputs_{k}"], arrays[f"c_outputs_{k}"] = ref, c_layout
        met = metrics(ref, pf, with_snr)
        acc = "n.a."
        if run.opts.get("classifier") and ref.ndim >= 2:
            hit = np.mean(np.argmax(ref, -1) == np.argmax(np.asarray(pf).reshape(ref.shape), -1))
            acc = f"{100.0 * hit:.2f}%"
        dims = "x".join(str(d) for d in t.shape)
        tensor = (
            f"'{t.name}', {ref.shape[0]} x {'int8' if t.quantized else 'f32'}({dims}), "
            f"m_id=[{len(run.dep.layers)}]"
        )
        rows.append((f"X-cross #{k}", acc, met, tensor))
        val.append({"acc": acc, "desc": f"X-cross #{k}", **met})
        per = int(np.prod(ref.shape[1:])) if ref.ndim > 1 else 1
        lines += [
            f" Cross accuracy report #{k} (reference vs C-model)",
            " " + "-" * 100,
            " notes: - the output of the reference model is used as ground truth/reference value",
            f"        - {ref.shape[0]} samples ({per} items per sample)",
            "",
            "  acc=" + acc + " " + " ".join(f"{key}={_fmt(key, v)}" for key, v in met.items()),
            "",
        ]
    block = {
        "val_error": val[0]["l2r"] if val else 0.0,
        "val_error_desc": "x-cross (l2r) #1",
        "val_metrics": val,
    }
    head = [
        "Setting validation data...",
        *data_log,
        "",
        f"Running the ST.AI c-model (AI RUNNER)...(name={run.name}, mode={mode})",
        "",
        "Saving validation data...",
        f" output directory: {run.output}",
        f" creating {run.output / f'{run.name}_val_io.npz'}",
        "",
        "Computing the metrics...",
        "",
    ]
    return block, head + lines, arrays, rows


def _fmt(key: str, v: float) -> str:
    return f"{v:.9f}" if key in ("rmse", "mae", "l2r") else f"{v:.6f}"


def summary_table(rows: list[tuple[str, str, dict[str, Any], str]], with_snr: bool) -> list[str]:
    """`Evaluation report (summary)` with its legend."""
    keys = ["rmse", "mae", "l2r", "mean", "std"] + (["snr"] if with_snr else []) + ["nse", "cos"]
    table = [["Output", "acc", *keys, "tensor"]]
    for label, acc, met, tensor in rows:
        table.append([label, acc, *[_fmt(k, met[k]) for k in keys], tensor])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    text = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) for r in table]
    rule = "-" * len(text[0])
    legend = _LEGEND + (
        [" snr  : Signal-to-Noise Ratio (SNR), bigger is better"] if with_snr else []
    )
    legend += [
        " nse  : Nash-Sutcliffe efficiency criteria, bigger is better, best=1, range=(-inf, 1]",
        " cos  : COsine Similarity, bigger is better, best=1, range=(0, 1]",
    ]
    return ["Evaluation report (summary)", rule, text[0], rule, *text[1:], rule, "", *legend]

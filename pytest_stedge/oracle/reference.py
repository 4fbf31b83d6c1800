"""Reference inference with onnxruntime on the tool's default stimulus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError


def session(model: Any, where: str) -> Any:
    """An onnxruntime CPU session; unsupported operators become :class:`OracleError`."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    data = model if isinstance(model, bytes) else str(model)
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OracleError(f"{where}: onnxruntime cannot run this model: {exc}") from exc


def run_samples(sess: Any, inputs: dict[str, Any], where: str) -> list[Any]:
    """Run every sample through ``sess`` (batch 1 when the model's batch is fixed)."""
    import numpy as np

    metas = {m.name: m for m in sess.get_inputs()}
    missing = sorted(set(metas) - set(inputs))
    if missing:
        raise OracleError(f"{where}: no data for model inputs {missing}")
    samples = len(next(iter(inputs.values()))) if inputs else 1
    outputs: list[list[Any]] = []
    for i in range(samples):
        feed = {}
        for name, meta in metas.items():
            x = inputs[name][i : i + 1]
            rank = len(meta.shape)
            if x.ndim == rank + 1:  # the model has no batch axis
                x = x[0]
            elif x.ndim != rank:
                x = x.reshape([d if isinstance(d, int) else -1 for d in meta.shape])
            feed[name] = x
        try:
            result = sess.run(None, feed)
        except Exception as exc:
            raise OracleError(f"{where}: onnxruntime failed on sample {i}: {exc}") from exc
        outputs.append(result)
    stacked = []
    for k in range(len(outputs[0]) if outputs else 0):
        arrays = [np.asarray(o[k]) for o in outputs]
        if all(a.ndim and a.shape[0] == 1 for a in arrays):
            stacked.append(np.concatenate(arrays, axis=0))  # samples replace the batch axis
        else:
            stacked.append(np.stack(arrays))
    return stacked


def reference_outputs(
    model_path: Path | str,
    inputs: dict[str, Any] | None = None,
    *,
    samples: int = 10,
    seed: int = 42,
) -> dict[str, Any]:
    """Run the model on ``inputs`` (default: the tool's stimulus).

    :returns: ``{"m_inputs_N": ..., "m_outputs_N": ...}`` in model order, the
        ``*_val_io.npz`` key names, plus ``input_names``/``output_names``.
    """
    from .graph import load_model
    from .stimulus import default_stimulus

    where = str(model_path)
    load_model(model_path)  # not-ONNX and missing files get the oracle's own message
    sess = session(model_path, where)
    if inputs is None:
        inputs = default_stimulus(model_path, samples=samples, seed=seed)
    outs = run_samples(sess, inputs, where)
    result: dict[str, Any] = {}
    for k, meta in enumerate(sess.get_inputs(), 1):
        result[f"m_inputs_{k}"] = inputs[meta.name]
    for k, arr in enumerate(outs, 1):
        result[f"m_outputs_{k}"] = arr
    result["input_names"] = [m.name for m in sess.get_inputs()]
    result["output_names"] = [m.name for m in sess.get_outputs()]
    return result

"""Reference inference on the tool's default stimulus: onnxruntime for ONNX, LiteRT for TFLite."""

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
    from ..model.graph import load_model
    from .stimulus import _is_tflite_file, default_stimulus

    where = str(model_path)
    if _is_tflite_file(Path(model_path)):
        from ..model.tflite import read_tflite

        read_tflite(Path(model_path))  # not-a-flatbuffer and unsupported ops: clear errors
        if inputs is None:
            inputs = default_stimulus(model_path, samples=samples, seed=seed)
        return _litert_outputs(Path(model_path), inputs)
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


def _litert_outputs(path: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    """Run a TFLite model with LiteRT's interpreter, one sample at a time."""
    import numpy as np

    from .native_log import native_info_dropped

    try:
        from ai_edge_litert.interpreter import Interpreter  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise OracleError(f"{path}: LiteRT (ai-edge-litert) is not installed: {exc}") from exc
    try:
        with native_info_dropped():  # LiteRT's "INFO: Created ... XNNPACK delegate" line
            interp = Interpreter(model_path=str(path))
            interp.allocate_tensors()
    except Exception as exc:  # LiteRT raises ValueError/RuntimeError on bad models
        raise OracleError(f"{path}: LiteRT cannot run this model: {exc}") from exc
    ins = interp.get_input_details()
    outs = interp.get_output_details()
    missing = sorted({d["name"] for d in ins} - set(inputs))
    if missing:
        raise OracleError(f"{path}: no data for model inputs {missing}")
    samples = len(next(iter(inputs.values()))) if inputs else 1
    results: list[list[Any]] = [[] for _ in outs]
    for i in range(samples):
        for detail in ins:
            x = np.asarray(inputs[detail["name"]][i : i + 1]).astype(detail["dtype"])
            interp.set_tensor(detail["index"], x.reshape(detail["shape"]))
        try:
            interp.invoke()
        except Exception as exc:
            raise OracleError(f"{path}: LiteRT failed on sample {i}: {exc}") from exc
        for k, detail in enumerate(outs):
            results[k].append(np.array(interp.get_tensor(detail["index"])))
    result: dict[str, Any] = {}
    for k, detail in enumerate(ins, 1):
        result[f"m_inputs_{k}"] = inputs[detail["name"]]
    for k, arrays in enumerate(results, 1):
        result[f"m_outputs_{k}"] = np.concatenate(arrays, axis=0)
    result["input_names"] = [d["name"] for d in ins]
    result["output_names"] = [d["name"] for d in outs]
    return result

"""Open a model file as the oracle's :class:`Graph`: ONNX, TFLite, ST's ``_OE_`` ONNX + ``_Q.json``.

The format is decided by the file's content (a TFLite flatbuffer carries ``TFL3``),
its suffix only naming it in messages. Keras files are refused with the advice
the tool itself needs: convert to TFLite or ONNX.

ST's front end writes an intermediate ``<model>_OE_3_x_y.onnx`` whose weights stay
float initializers and whose deployed types live in ``<same stem>_Q.json`` beside
it (``tensors{name: {format: {class, type}}}``). Read alone that graph looks float
(blazeface: 1,204,608 B instead of 344,064 B), so the types of the ``_Q.json`` are
applied when it is there; it must be the one written for this file (its
``generated_model`` signature is the MD5 of the ONNX file).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .graph import Graph, build_graph
from .tflite import is_tflite, read_tflite

KERAS_SUFFIXES = (".h5", ".keras", ".hdf5")
# _Q.json type names -> ONNX TensorProto data types.
_Q_TYPES = {"S8": 3, "U8": 2, "S16": 5, "U16": 4, "S32": 6, "U32": 12, "FLOAT32": 1, "FLOAT16": 10}


def keras_refusal(path: Path) -> str:
    """The message for a Keras model (the oracle item skips with it)."""
    return (
        f"{path}: Keras models (.h5/.keras) are not supported by the oracle; convert the "
        f"model to TFLite (tf.lite.TFLiteConverter) or ONNX (tf2onnx) and name that file"
    )


def open_graph(source: Path | str | Any, *, q_json: Path | None = None) -> Graph:
    """The graph of an ONNX or TFLite file (an ``_OE_`` model with its ``_Q.json`` applied).

    :param q_json: the ``_Q.json`` of an OE model; default: the one beside it, if any.
    :raises OracleError: missing file, Keras, not a model, bad ``_Q.json``.
    """
    if not isinstance(source, (str, Path)):
        return build_graph(source)  # an onnx ModelProto
    path = Path(source)
    if path.suffix.lower() in KERAS_SUFFIXES:
        raise OracleError(keras_refusal(path))
    if not path.is_file():
        raise OracleError(f"{path}: no such model file (expected an .onnx or .tflite file)")
    with path.open("rb") as handle:
        head = handle.read(8)
    if is_tflite(head) or path.suffix.lower() == ".tflite":
        return read_tflite(path)
    graph = build_graph(path)
    found = q_json if q_json is not None else _q_json_beside(path)
    if found is not None:
        apply_q_json(graph, found)
    return graph


def _q_json_beside(path: Path) -> Path | None:
    candidate = path.with_name(f"{path.stem}_Q.json")
    return candidate if candidate.is_file() else None


def apply_q_json(graph: Graph, q_json: Path) -> None:
    """Give every tensor the deployed type the ``_Q.json`` records.

    :raises OracleError: unreadable, for another model (signature or tensor names).
    """
    try:
        data = json.loads(q_json.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OracleError(f"{q_json}: no such _Q.json file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OracleError(f"{q_json}: not a JSON _Q.json file ({exc})") from exc
    tensors = data.get("tensors") if isinstance(data, dict) else None
    if not isinstance(tensors, dict) or not tensors:
        raise OracleError(f"{q_json}: no 'tensors' table: not the _Q.json of an ST OE model")
    model_path = graph.path
    signatures = _signatures(data)
    if model_path is not None and signatures:
        md5 = hashlib.md5(model_path.read_bytes()).hexdigest()
        if md5 not in signatures:
            raise OracleError(
                f"{q_json}: this _Q.json was written for another file: its generated_model "
                f"signature {', '.join(sorted(signatures))} is not the MD5 {md5} of {model_path}"
            )
    unknown = [name for name in tensors if name not in graph.tensors]
    # Without a signature to trust, most of its tensors must be this model's (the tool
    # lists a few constants, such as Pad amounts, that the ONNX file folds away).
    if unknown and (not signatures and len(unknown) * 10 > len(tensors)):
        raise OracleError(
            f"{q_json}: {len(unknown)} tensor(s) of this _Q.json are not in {model_path}: "
            f"{', '.join(unknown[:5])}: it belongs to another model"
        )
    applied = 0
    for name, entry in tensors.items():
        fmt = entry.get("format") if isinstance(entry, dict) else None
        dtype = _Q_TYPES.get(str((fmt or {}).get("type", "")).upper())
        if dtype is None or name not in graph.tensors:
            continue
        info = graph.tensors[name]
        info.dtype = dtype
        applied += 1
    graph.notes.append(f"deployed types of {applied} tensors from {q_json.name}")


def _signatures(data: dict[str, Any]) -> set[str]:
    env = data.get("environment") or {}
    files = (env.get("generated_model") or {}).get("model_files") or []
    found = set()
    for item in files:
        sig = str(item.get("signature", "")).lower().removeprefix("0x")
        if len(sig) == 32:
            found.add(sig)
    return found

"""``<name>_c_info.json`` (schema 2.0, 9.0 -> 4.0) and the raw ATONN ``c_info.json``.

MCU files have one graph node per C layer; Neural-ART (STM32N6 NPU) files have one
top-level node per epoch (``epoch_<n>``, mapping ``NODE_HW|EC|SW|SW_HW|NO_X``) whose
``subgraph_nodes`` are the operators.

Epoch-controller runs: 2.x files keep one ``NODE_EC`` node per epoch (the 2.0.0 sample:
``epoch_1`` .. ``epoch_21``, each "Epoch Controller _ec_blob_1"). From 3.0 the file holds
ONE ``NODE_EC`` node per EC blob, which runs many epochs: such a node is a blob, never an
epoch. Its epochs are counted only when ``ec_blobs_info`` lists them (no real file in
../shared has a non-empty ``ec_blobs_info``); otherwise ``epochs.ec`` and ``epochs.total``
stay unknown and a folder takes them from the report's epoch table.
"""

from __future__ import annotations

import gc
import json
import math
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError
from pytest_stedge.result import Result, new_result

from .common import (
    as_int,
    decode_text,
    normalize_target,
    split_tool_version,
    version_warning,
)
from .figures import (
    MAX_DIGITS,
    FigureError,
    checked_float,
    checked_number,
    line_of_long_digits,
)

_KIND = {
    "NODE_HW": "hw",
    "NODE_EC": "ec",
    "NODE_SW": "sw",
    "NODE_SW_HW": "hybrid",
}
# Operator types that are bookkeeping, not computation: epochs holding only these are
# the pseudo-epochs the reports do not count (epoch_0 of parameters, trailing Return).
_PSEUDO_OPS = {"Param", "Return"}
_EPOCH_NAME = re.compile(r"epoch_(\d{1,9})$")
_METRIC_KEYS = ("acc", "rmse", "mae", "l2r", "mean", "std", "snr", "nse", "cos")


def load_json(path: Path, data: bytes) -> Any:
    """Parse JSON, naming the file and line on failure (truncated or corrupt files)."""
    text = decode_text(path, data)
    # A parsed JSON tree has no reference cycles; the cyclic collector would only rescan
    # the growing tree again and again (25 ms/MB instead of 12 on an 8 MB c_info).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportParseError(
            path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno
        ) from exc
    except ValueError as exc:  # an integer of more digits than int() converts
        raise ReportParseError(
            path,
            f"figure of more than {MAX_DIGITS} digits: not a number stedgeai writes",
            line=line_of_long_digits(text),
        ) from exc
    except RecursionError as exc:
        raise ReportParseError(path, "invalid JSON: nested too deeply") from exc
    finally:
        if collecting:
            gc.enable()


def is_c_info(doc: Any) -> bool:
    """Whether a parsed JSON document is a c_info file."""
    return isinstance(doc, dict) and "json_schema_version" in doc


def parse_c_info(path: Path, doc: dict[str, Any]) -> Result:
    """Turn a parsed c_info document into a Result."""
    schema = doc.get("json_schema_version")
    diagnostics: list[dict[str, Any]] = []
    if str(schema) != "2.0":
        diagnostics.append(
            {
                "level": "warning",
                "code": "unknown-schema",
                "kind": "UnknownSchema",
                "message": f"{path.name}: c_info json_schema_version {schema!r}, expected '2.0'",
            }
        )
    result = new_result("unknown")
    env = _dict(doc.get("environment"))
    tools = [t for t in _list(env.get("tools")) if isinstance(t, dict)]
    core = next(
        (t for t in tools if "EdgeAI" in str(t.get("name", ""))), tools[0] if tools else None
    )
    tool: dict[str, Any] = {}
    if core is not None:
        tool.update(split_tool_version(str(core.get("version", ""))))
        args = str(core.get("arguments", "")).split()
        command = _command(args) or _command_from_name(path.name)
        if command:
            result["command"] = command
        target = _option(args, "--target") or _option(args, "--series")
        if target:
            result["target"] = normalize_target(target)
        model = _model(core)
        if model:
            result["model"] = model
    compiler = next((t for t in tools if "ATONN" in str(t.get("name", "")).upper()), None)
    if compiler is not None and compiler.get("version"):
        tool["compiler"] = str(compiler["version"]).split()[0]
    if tool:
        result["tool"] = tool
    warning = version_warning(tool.get("version"))
    if warning:
        diagnostics.append(warning)
    if "target" not in result and env.get("target"):
        result["target"] = normalize_target(str(env["target"]))

    memory = _memory(doc)
    nodes = _nodes(doc)
    epochs = _epochs(nodes, _ec_blob_epochs(doc), _per_blob(tool.get("version"), nodes))
    if epochs is not None:
        result["neural_art"] = True
        result["epochs"] = epochs
        result["software_ops"] = _software_ops(epochs)
        if "target" not in result:
            result["target"] = "stm32n6"
    elif nodes:
        macc = sum(
            n["macc"]
            for n in nodes
            if isinstance(n.get("macc"), int) and not isinstance(n["macc"], bool)
        )
        if any("macc" in n for n in nodes):
            result["macc"] = macc
    if memory:
        result["memory"] = memory
    validation = _validation(doc, env)
    if validation:
        result["validation"] = validation
        result.setdefault("command", "validate")
    if result.get("command") == "unknown":
        result["command"] = "validate" if validation else "generate"
    if diagnostics:
        result["diagnostics"] = diagnostics
    result["sources"] = [str(path)]
    return result


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return as_int(value)


_COMMANDS = ("analyze", "generate", "validate")
# AI Studio: <name>_<model>_c_info_generate.json / _c_info_analyze.json; 3.0+ _c_info_valid.json
_NAME_COMMAND = re.compile(r"_c_info_(analyze|generate|validate|valid)\.json$", re.IGNORECASE)


def _command(args: list[str]) -> str | None:
    """The command of ``tools[].arguments``: its first word, or the word after the
    executable (``C:\\ST\\...\\stedgeai.exe analyze --target ...``)."""
    for arg in args:
        if arg.startswith("-"):
            return None
        if arg in _COMMANDS:
            return arg
    return None


def _command_from_name(name: str) -> str | None:
    match = _NAME_COMMAND.search(name)
    if not match:
        return None
    word = match.group(1).lower()
    return "validate" if word == "valid" else word


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _model(core: dict[str, Any]) -> dict[str, Any]:
    src = _dict(core.get("input_model"))
    model: dict[str, Any] = {}
    if src.get("name"):
        model["name"] = str(src["name"])
    files = [f for f in _list(src.get("model_files")) if isinstance(f, dict)]
    if files:
        if files[0].get("name"):
            model["file"] = str(files[0]["name"])
        if files[0].get("signature"):
            model["hash"] = str(files[0]["signature"])
    if src.get("type"):
        model["type"] = str(src["type"])
    params = _int(src.get("n_params"))
    if params:
        model["params"] = params
    return model


def _memory(doc: dict[str, Any]) -> dict[str, Any]:
    memory: dict[str, Any] = {}
    footprint = _dict(doc.get("memory_footprint"))
    for src, dst in (("weights", "weights_bytes"), ("activations", "activations_bytes")):
        value = _int(footprint.get(src))
        if value is not None:
            memory[dst] = value
    io = _list(footprint.get("io"))
    if len(io) == 2 and all(_int(v) is not None for v in io):
        memory["io_bytes"] = [_int(io[0]), _int(io[1])]
    pools = _pools(doc)
    if pools:
        memory["pools"] = pools
    return memory


def _pools(doc: dict[str, Any]) -> list[dict[str, Any]]:
    params_by_pool: dict[int, int] = {}
    for buf in _list(doc.get("buffers")):
        if isinstance(buf, dict) and buf.get("is_param") is True:
            pool_id = _int(buf.get("mpool_id"))
            if pool_id is not None:
                params_by_pool[pool_id] = params_by_pool.get(pool_id, 0) + (
                    _int(buf.get("size_bytes")) or 0
                )
    pools = []
    for pool in _list(doc.get("memory_pools")):
        if not isinstance(pool, dict):
            continue
        # Aggregates of other pools (N6 "cpuRAM2_npuRAM3_...") would count bytes twice.
        if _list(pool.get("subpools")):
            continue
        name = pool.get("name", pool.get("id", ""))
        entry: dict[str, Any] = {"name": name if isinstance(name, str) else json.dumps(name)}
        if pool.get("user_allocated") is True:
            entry["user_allocated"] = True  # an I/O buffer the application provides
        size = _int(pool.get("size_bytes"))
        if size is not None and size >= 0:
            entry["size_bytes"] = size
        used = _int(pool.get("used_size_bytes"))
        if used is not None:
            entry["used_bytes"] = used
            if pool.get("rights") == "ACC_READ":
                weights: int | None = used  # read-only pools hold only constants
            else:
                weights = params_by_pool.get(_int(pool.get("id")) or -1)
                if weights is None and doc.get("buffers") is not None:
                    weights = 0
            if weights is not None:
                weights = min(weights, used)
                entry["weights_bytes"] = weights
                entry["activations_bytes"] = used - weights
        pools.append(entry)
    return pools


def _nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    graphs = _list(doc.get("graphs"))
    if not graphs or not isinstance(graphs[0], dict):
        return []
    return [n for n in _list(graphs[0].get("nodes")) if isinstance(n, dict)]


def op_type(node: dict[str, Any]) -> str:
    """Operator type of a node: ``type`` (3.0+) or ``description: 'Node kind=X'`` (<= 2.2)."""
    kind = node.get("type")
    if isinstance(kind, str) and kind:
        return kind
    desc = str(node.get("description", ""))
    if desc.startswith("Node kind="):
        return desc[len("Node kind=") :]
    return desc


def _per_blob(version: str | None, nodes: list[dict[str, Any]]) -> bool:
    """Whether the file's ``NODE_EC`` nodes are blobs (3.0+) rather than epochs (2.x)."""
    match = re.match(r"(\d+)\.", version or "")
    if match:
        return int(match.group(1)) >= 3 and int(match.group(1)) < 9  # 9.0 is X-CUBE-AI 9
    ec = [n for n in nodes if n.get("mapping") == "NODE_EC"]
    return any(not _EPOCH_NAME.match(str(n.get("name", ""))) for n in ec)


def _ec_blob_epochs(doc: dict[str, Any]) -> dict[str, int]:
    """Epochs per blob name, where ``ec_blobs_info`` lists them (``"epochs": [ids]``)."""
    out: dict[str, int] = {}
    for blob in _list(doc.get("ec_blobs_info")):
        if not isinstance(blob, dict):
            continue
        ids = blob.get("epochs")
        if isinstance(ids, list) and ids and all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            out[str(blob.get("name", ""))] = len(ids)
    return out


def _epochs(
    nodes: list[dict[str, Any]], blob_epochs: dict[str, int], per_blob: bool
) -> dict[str, Any] | None:
    if not nodes or not any(
        _EPOCH_NAME.match(str(n.get("name", ""))) or n.get("mapping") == "NODE_EC" for n in nodes
    ):
        return None
    listing: list[dict[str, Any]] = []
    counts = {"hw": 0, "ec": 0, "sw": 0, "hybrid": 0}
    blobs: list[str] = []
    for node in nodes:
        name = str(node.get("name", ""))
        match = _EPOCH_NAME.match(name)
        kind = _KIND.get(str(node.get("mapping", "")))
        subs = [s for s in _list(node.get("subgraph_nodes")) if isinstance(s, dict)]
        types = [op_type(s) for s in subs]
        if kind == "ec" and (per_blob or not match):
            blobs.append(name)
            ops = _unique([t for t in types if t not in _PSEUDO_OPS])
            listing.append({"blob": name, "kind": "ec", "ops": ops})
            continue
        if not match or kind is None:
            continue  # NODE_NO_X and unnamed nodes are not executed epochs
        if types and all(t in _PSEUDO_OPS for t in types):
            continue
        if kind in ("sw", "hybrid"):
            ops = [
                op_type(s)
                for s in subs
                if "SW" in str(s.get("mapping", "")) and op_type(s) not in _PSEUDO_OPS
            ]
        else:
            ops = [t for t in types if t not in _PSEUDO_OPS]
        counts[kind] += 1
        listing.append({"id": int(match.group(1)), "kind": kind, "ops": _unique(ops)})
    out: dict[str, Any] = {}
    epochs = len(listing) - len(blobs)
    if blobs:
        out["ec_blobs"] = len(blobs)
        known = [blob_epochs.get(b) for b in blobs]
        if all(k is not None for k in known):
            counts["ec"] = sum(k for k in known if k is not None)
            out["total"] = epochs + counts["ec"]
            out.update(counts)
        else:  # how many epochs each blob runs is not in the file
            out.update({k: v for k, v in counts.items() if k != "ec"})
    else:
        out["total"] = epochs
        out.update(counts)
    out["list"] = listing
    return out


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item:
            seen.setdefault(item, None)
    return list(seen)


def _software_ops(epochs: dict[str, Any]) -> list[str]:
    ops: list[str] = []
    for epoch in epochs["list"]:
        if epoch["kind"] in ("sw", "hybrid"):
            ops.extend(epoch["ops"])
    return sorted(set(ops))


def metric_row(row: dict[str, Any]) -> dict[str, Any]:
    """Normalise a ``val_metrics`` entry (c_info or report.json): ``'n.a.'`` -> absent, ``'98%'`` -> 98.0."""
    out: dict[str, Any] = {}
    for key in _METRIC_KEYS:
        value = row.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[key] = float(checked_number(value))
        elif isinstance(value, str):
            text = value.strip().rstrip("%")
            try:
                out[key] = checked_float(text)
            except FigureError:
                raise
            except ValueError:
                continue
    return out


def validation_from_metrics(rows: list[Any]) -> dict[str, Any]:
    """Split ``val_metrics`` rows: X-cross rows (C-model vs reference) become ``outputs``."""
    parsed = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        desc = str(row.get("desc", ""))
        entry = {"desc": desc, **metric_row(row)}
        if row.get("ts_name"):
            entry["name"] = str(row["ts_name"])
        parsed.append(entry)
    if not parsed:
        return {}
    outputs = [_output(r) for r in parsed if r["desc"].lower().startswith("x-cross")]
    if not outputs:
        # Older runs without reference outputs list only the C-model rows.
        outputs = [_output(r) for r in parsed if "c-model" in r["desc"].lower()]
    return {"outputs": outputs, "rows": parsed}


def _output(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k in _METRIC_KEYS}
    match = re.search(r"#(\d+)", row["desc"])
    out["name"] = row.get("name") or (f"output_{match.group(1)}" if match else row["desc"])
    return out


def _validation(doc: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    val = _dict(doc.get("validation"))
    validation = validation_from_metrics(_list(val.get("val_metrics")))
    if not validation:
        return {}
    device = env.get("device")
    if device:
        validation["device"] = str(device)
        validation["mode"] = (
            "host" if "x86" in str(device).lower() or "host" in str(device).lower() else "target"
        )
    graphs = _list(doc.get("graphs"))
    exec_time = _dict(graphs[0].get("exec_time")) if graphs and isinstance(graphs[0], dict) else {}
    duration = exec_time.get("duration_ms")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        aton = [a for a in _list(doc.get("aton_execution_time")) if isinstance(a, dict)]
        values = [a.get("duration_ms") for a in aton]
        numbers = [
            float(checked_number(v))
            for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        # one entry per epoch block; their sum is the inference
        duration = sum(numbers) if numbers and len(numbers) == len(values) else None
    if duration is not None:
        duration = float(checked_number(duration))
        if not math.isfinite(duration):
            raise FigureError(repr(duration), "is not a duration")
        validation["duration_ms"] = duration
    return validation

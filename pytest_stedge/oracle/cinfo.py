"""The tool's own buffers (``*_c_info.json``) side by side with the oracle.

Reads ``memory_pools`` and ``buffers`` (offset, size, pool, ``epochs{start,end}``)
and explains the reported activation figure from the liveness of the tool's OWN
buffers (:mod:`.cinfo_parts`): signed parts that add up exactly to
``memory_footprint.activations``, the only negative one being overlay.

Counted pools are the writable ones (``rights == ACC_WRITE``) that are not
unions of other pools (``subpools``) and not user-allocated I/O pools; this
reproduces ``memory_footprint.activations`` on every sample in ../shared.
Buffers that the tool aliases (same addresses, overlapping epochs: in-place
operators) count once, so the tool's liveness bound never exceeds its pool.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .cinfo_buffers import ToolBuffer

_EXTERNAL_NAME = re.compile(r"ext|sdram|hyper|psram|xspi|ospi|octo|flash", re.IGNORECASE)
_EXTERNAL_BASE = 0x60000000  # FMC/OCTOSPI windows on STM32; internal SRAM sits below


def _address(value: Any) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:
            return None
    return None


def is_external(pool: dict[str, Any]) -> bool:
    """A pool in external RAM: by name, or by an address past internal SRAM."""
    if _EXTERNAL_NAME.search(str(pool.get("name", ""))):
        return True
    address = _address(pool.get("address"))
    return address is not None and address >= _EXTERNAL_BASE


def load_c_info(path: Path | str) -> dict[str, Any]:
    """Read a ``c_info.json`` and check it has the keys the analysis needs.

    :raises OracleError: missing, not JSON, or without ``memory_pools``/``buffers``.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OracleError(f"{p}: no such c_info file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OracleError(f"{p}: not a JSON c_info file ({exc})") from exc
    if not isinstance(data, dict) or "json_schema_version" not in data:
        raise OracleError(f"{p}: not a stedgeai c_info.json (no json_schema_version key)")
    if not data.get("buffers") or not data.get("memory_pools"):
        raise OracleError(
            f"{p}: c_info has no buffers[] or memory_pools[] (the analysis needs the c_info "
            f"written by analyze/generate, not the one of a target validate run)"
        )
    return data


def _counted_pools(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p
        for p in data["memory_pools"]
        if p.get("rights") == "ACC_WRITE" and not p.get("subpools") and not p.get("user_allocated")
    ]


def _kind(raw: dict[str, Any], scratch: bool, is_float: bool, has_16: bool) -> str:
    name = str(raw.get("name", "")).lower()
    flags = str(raw.get("flags", "")).upper()
    if scratch:
        return "scratch"
    if "pad" in name:
        return "pad_layers"
    if "transpose" in name or "copy" in name:
        return "copies"
    if is_float and "INPUTS" not in flags and "OUTPUTS" not in flags:
        return "float_conversions"
    if has_16 and int(raw.get("nbits") or 8) == 16:
        return "cut_16bit"
    return "core"


def tool_buffers(data: dict[str, Any], pools: dict[int, dict[str, Any]]) -> list[ToolBuffer]:
    """The tool's activation buffers in the counted pools, each with its kind."""
    return _buffers(data, pools)


def _buffers(data: dict[str, Any], pools: dict[int, dict[str, Any]]) -> list[ToolBuffer]:
    raw = [b for b in data["buffers"] if not b.get("is_param") and b.get("mpool_id") in pools]
    last = max((int((b.get("epochs") or {}).get("end", 0)) for b in raw), default=0)
    formats = [str(b.get("format", "")) for b in raw]
    has_int = any("FLOAT" not in f and f for f in formats)
    # 16-bit tensors are a cut only in a network whose tensors are otherwise 8-bit.
    has_16 = any(int(b.get("nbits") or 0) == 8 for b in raw)
    out = []
    for b in raw:
        epochs = b.get("epochs") or {"start": 0, "end": last}
        fmt = str(b.get("format", ""))
        scratch = "SCRATCH" in str(b.get("flags", "")).upper() or "scratch" in str(
            b.get("name", "")
        ).lower()
        # Float buffers are a cost only in a network that is otherwise integer.
        is_float = has_int and "FLOAT" in fmt
        out.append(
            ToolBuffer(
                name=str(b.get("name", b.get("id"))),
                pool=int(b["mpool_id"]),
                offset=int(b.get("offset_start") or 0),
                size=int(b.get("size_bytes") or 0),
                start=int(epochs.get("start", 0)),
                end=int(epochs.get("end", last)),
                scratch=scratch,
                is_float=is_float,
                kind=_kind(b, scratch, is_float, has_16),
            )
        )
    return out


def _signatures(data: dict[str, Any]) -> list[str]:
    env = data.get("environment") or {}
    found = []
    for tool in env.get("tools") or []:
        model = tool.get("input_model") or {}
        for f in model.get("model_files") or []:
            sig = str(f.get("signature", "")).lower().removeprefix("0x")
            if len(sig) == 32:
                found.append(sig)
    return found


def _io_elements(data: dict[str, Any]) -> tuple[list[int], list[int]] | None:
    graphs = data.get("graphs") or []
    if not graphs:
        return None
    by_id = {b.get("id"): b for b in data["buffers"]}
    sides = []
    for key in ("inputs", "outputs"):
        counts = []
        for ref in graphs[0].get(key) or []:
            buf = by_id.get(ref)
            if buf is None or not buf.get("shape"):
                return None
            counts.append(math.prod(int(d) for d in buf["shape"]))
        sides.append(sorted(counts))
    return sides[0], sides[1]


def _model_io(report: dict[str, Any]) -> tuple[list[int], list[int]] | None:
    sides = []
    for key in ("inputs", "outputs"):
        counts = []
        for item in report.get(key) or []:
            shape = item.get("shape")
            if not shape or not all(isinstance(d, int) for d in shape):
                return None
            counts.append(math.prod(shape))
        sides.append(sorted(counts))
    return sides[0], sides[1]


def check_pairing(report: dict[str, Any], data: dict[str, Any], c_info: Path) -> dict[str, Any]:
    """Is this c_info from this model? By MD5 signature first, then by I/O shapes.

    :raises OracleError: signature and I/O element counts both disagree.
    """
    sigs = _signatures(data)
    md5 = None
    model_path = report.get("model")
    if model_path and Path(model_path).is_file():
        md5 = hashlib.md5(Path(model_path).read_bytes()).hexdigest()
        if md5 in sigs:
            return {"status": "signature", "detail": f"model MD5 {md5} is recorded in the c_info"}
    tool_io = _io_elements(data)
    model_io = _model_io(report)
    if tool_io is None or model_io is None:
        return {"status": "unknown", "detail": "no signature match and no I/O shapes to compare"}
    if tool_io == model_io:
        detail = "input/output element counts agree"
        if md5 and sigs:
            detail += f" but the model MD5 {md5} is not among the c_info's {sigs}: another export?"
        return {"status": "shapes", "detail": detail}
    raise OracleError(
        f"{c_info}: c_info is from another model: its inputs/outputs hold {tool_io[0]}/"
        f"{tool_io[1]} elements, the model {model_path}'s hold {model_io[0]}/{model_io[1]}"
        + (f"; model MD5 {md5} is not among the recorded signatures {sigs}" if md5 else "")
    )




def run_arguments(data: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The target and options of the run that wrote this c_info (its recorded arguments)."""
    import shlex

    env = data.get("environment") or {}
    for tool in env.get("tools") or []:
        text = str(tool.get("arguments") or "")
        if not text:
            continue
        try:
            words = shlex.split(text, posix=False)
        except ValueError:
            words = text.split()
        target = None
        for k, word in enumerate(words):
            if word == "--target" and k + 1 < len(words):
                target = words[k + 1]
        return target, words
    return None, []


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """Explain the tool's activation figure from its ``c_info.json``.

    :param model: an :func:`~pytest_stedge.oracle.analyze_model` report, a model
        path (analysed with the target and options the c_info records), or None
        (then the explanation starts from the tool's own tensors).
    :returns: ``reported_bytes``, ``pools`` (per pool: used, liveness, address
        union, external), ``tool_bound_bytes`` (liveness of the tool's buffers over
        every counted pool, exact aliases once), ``oracle_lower_bound_bytes``,
        ``pairing``, ``parts`` ([{kind, bytes, words}] adding up exactly to
        ``reported_bytes``), ``external_bytes``, ``summary``, ``buffers``.
    :raises OracleError: unreadable c_info, or a c_info from another model.
    """
    from .cinfo_parts import explain_parts

    path = Path(c_info)
    data = load_c_info(path)
    report: dict[str, Any] | None
    if model is None or isinstance(model, dict):
        report = model
    else:
        from .deploy import deployment_options
        from .memory import analyze_model

        target, options = run_arguments(data)
        report = analyze_model(
            model, target=target or "stm32n6", options=deployment_options(options)
        )
    pools = {int(p["id"]): p for p in _counted_pools(data)}
    bufs = _buffers(data, pools)
    pairing = (
        check_pairing(report, data, path)
        if report
        else {"status": "none", "detail": "no model given"}
    )
    used = {pid: int(p.get("used_size_bytes") or 0) for pid, p in pools.items()}
    footprint = (data.get("memory_footprint") or {}).get("activations")
    reported = int(footprint) if isinstance(footprint, (int, float)) else sum(used.values())
    external = {pid for pid, p in pools.items() if is_external(p)}
    floor = report.get("lower_bound_bytes") if report else None
    explained = explain_parts(bufs, pools, used, external, reported, floor)
    parts = explained["parts"]
    assert sum(p["bytes"] for p in parts) == reported
    big = sorted(
        (p for p in parts if p["kind"] != "model" and p["bytes"] > 0), key=lambda p: -p["bytes"]
    )
    gap = reported - floor if floor is not None else None
    top = ", ".join(f"{p['kind']} {_fmt(p['bytes'])}" for p in big[:3]) or "nothing"
    if floor is not None:
        summary = (
            f"reported {_fmt(reported)} vs the oracle's floor {_fmt(floor)}: gap {_fmt(gap or 0)}; "
            f"largest parts: {top}"
        )
    else:
        summary = (
            f"reported {_fmt(reported)}; the tool's own buffers need {_fmt(explained['tool_bound'])} "
            f"at their peak; largest parts: {top}"
        )
    return {
        "c_info": str(path),
        "reported_bytes": reported,
        "oracle_lower_bound_bytes": floor,
        "gap_bytes": gap,
        "tool_bound_bytes": explained["tool_bound"],
        "external_bytes": sum(used[p] for p in external),
        "epochs": max((b.end for b in bufs), default=0) + 1,
        "pools": explained["pools"],
        "pairing": pairing,
        "parts": parts,
        "summary": summary,
        "buffers": [
            {
                "name": b.name,
                "pool": pools[b.pool].get("name"),
                "offset": b.offset,
                "bytes": b.size,
                "start": b.start,
                "end": b.end,
                "kind": b.kind,
                "scratch": b.scratch,
                "float": b.is_float,
            }
            for b in sorted(bufs, key=lambda b: (b.start, b.pool, b.offset))
        ],
    }


def _fmt(n: int) -> str:
    return f"{n:,} B"

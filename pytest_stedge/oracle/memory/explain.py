"""The tool's own buffers (``*_c_info.json``) side by side with the oracle.

Reads ``memory_pools`` and ``buffers`` (offset, size, pool, ``epochs{start,end}``):
virtual pools are mapped onto their member pools and parameters kept apart
(:mod:`.tool_buffers`), and the reported activation figure is measured part by part
from named buffers against the oracle's floor (:mod:`.explain_parts`), with one
``unexplained`` figure for what the parts do not account for.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .explain_parts import FloorTensors
from .tool_buffers import ToolBuffer, address, counted_pools, read_buffers

_EXTERNAL_NAME = re.compile(r"ext|sdram|hyper|psram|xspi|ospi|octo|flash", re.IGNORECASE)
_EXTERNAL_BASE = 0x60000000  # FMC/OCTOSPI windows on STM32; internal SRAM sits below


def is_external(pool: dict[str, Any]) -> bool:
    """A pool in external RAM: by name, or by an address past internal SRAM."""
    if _EXTERNAL_NAME.search(str(pool.get("name", ""))):
        return True
    start = address(pool.get("address"))
    return start is not None and start >= _EXTERNAL_BASE


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


def tool_buffers(data: dict[str, Any], pools: dict[int, dict[str, Any]]) -> list[ToolBuffer]:
    """The tool's activation buffers in the counted pools, each with its kind."""
    return read_buffers(data, pools)[0]


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
        union, external), ``tool_bound_bytes`` (liveness of the tool's buffers, exact
        aliases once), ``oracle_lower_bound_bytes``, ``pairing``, ``parts``
        ([{kind, bytes, buffers, words}], each measured from named buffers),
        ``unexplained_bytes`` (what the parts do not account for), ``clean``,
        ``epoch`` (where the parts are measured), ``external_bytes``, ``summary``,
        ``buffers``.
    :raises OracleError: unreadable c_info, or a c_info from another model.
    """
    from .explain_parts import measure

    path = Path(c_info)
    data = load_c_info(path)
    report: dict[str, Any] | None
    if model is None or isinstance(model, dict):
        report = model
    else:
        from ..deployment.recorded import deployment_options
        from .analysis import analyze_model

        target, options = run_arguments(data)
        report = analyze_model(
            model, target=target or "stm32n6", options=deployment_options(options, path.parent)
        )
    pools = counted_pools(data)
    bufs, params = read_buffers(data, pools)
    pairing = (
        check_pairing(report, data, path)
        if report
        else {"status": "none", "detail": "no model given"}
    )
    used = {pid: int(p.get("used_size_bytes") or 0) for pid, p in pools.items()}
    footprint = (data.get("memory_footprint") or {}).get("activations")
    reported = int(footprint) if isinstance(footprint, (int, float)) else sum(used.values())
    external = {pid for pid, p in pools.items() if is_external(p)}
    floor = _floor_tensors(report)
    explained = measure(bufs, params, pools, used, external, reported, floor)
    parts = explained["parts"]
    big = sorted(
        (p for p in parts if p["kind"] != "model" and p["bytes"] > 0), key=lambda p: -p["bytes"]
    )
    floor_bytes = floor.bytes if floor else None
    gap = reported - floor_bytes if floor_bytes is not None else None
    top = ", ".join(f"{p['kind']} {_fmt(p['bytes'])}" for p in big[:3]) or "nothing"
    unexplained = explained["unexplained_bytes"]
    tail = f"; unexplained {_fmt(unexplained)}" if unexplained else "; nothing unexplained"
    if floor_bytes is not None:
        summary = (
            f"reported {_fmt(reported)} vs the oracle's floor {_fmt(floor_bytes)}: gap "
            f"{_fmt(gap or 0)}; largest parts: {top}{tail}"
        )
    else:
        summary = f"reported {_fmt(reported)}; largest parts: {top}{tail}"
    return {
        "c_info": str(path),
        "reported_bytes": reported,
        "oracle_lower_bound_bytes": floor_bytes,
        "gap_bytes": gap,
        "tool_bound_bytes": explained["tool_bound"],
        "external_bytes": sum(used[p] for p in external),
        "epochs": max((b.end for b in bufs), default=0) + 1,
        "epoch": explained["epoch"],
        "pools": explained["pools"],
        "pairing": pairing,
        "parts": parts,
        "unexplained_bytes": unexplained,
        "floor_tensors_missing": explained["floor_tensors_missing"],
        "clean": explained["clean"],
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
            for b in sorted(bufs + params, key=lambda b: (b.start, b.pool, b.offset))
        ],
    }


def _floor_tensors(report: dict[str, Any] | None) -> FloorTensors | None:
    """The floor of an oracle report: its value, tensors and in-place writes."""
    if not report or report.get("lower_bound_bytes") is None:
        return None
    detail = report.get("floor") or {}
    tensors = [
        (str(t.get("name")), int(t.get("bytes") or 0))
        for t in detail.get("tensors") or []
        if t.get("bytes")
    ]
    return FloorTensors(
        int(report["lower_bound_bytes"]),
        tensors,
        int(detail.get("saved_bytes") or 0),
        tuple(detail.get("in_place") or ()),
    )


def _fmt(n: int) -> str:
    return f"{n:,} B"

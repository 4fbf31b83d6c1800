"""The tool's own buffers (``*_c_info.json``) side by side with the oracle.

Reads ``memory_pools`` and ``buffers`` (offset, size, pool, ``epochs{start,end}``)
and explains the reported activation figure as a sum of parts, in bytes and
words: what the model needs (the oracle's lower bound), how the tool's own
tensors differ, the cost of splitting over pools, float buffers, scratch
buffers, alignment padding, reuse the allocator did not take, buffers placed
in external RAM, and whatever the pools do not account for. The parts always
add up to the reported figure.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

_EXTERNAL_NAME = re.compile(r"ext|sdram|hyper|psram|xspi|ospi|octo|flash", re.IGNORECASE)
_EXTERNAL_BASE = 0x60000000  # FMC/OCTOSPI windows on STM32; internal SRAM sits below


@dataclass
class _Buf:
    name: str
    pool: int
    offset: int
    size: int
    start: int
    end: int
    scratch: bool
    is_float: bool


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


def _buffers(data: dict[str, Any], pools: dict[int, dict[str, Any]]) -> list[_Buf]:
    raw = [b for b in data["buffers"] if not b.get("is_param") and b.get("mpool_id") in pools]
    last = max((int((b.get("epochs") or {}).get("end", 0)) for b in raw), default=0)
    formats = [str(b.get("format", "")) for b in raw]
    has_int = any("FLOAT" not in f and f for f in formats)
    out = []
    for b in raw:
        epochs = b.get("epochs") or {"start": 0, "end": last}
        fmt = str(b.get("format", ""))
        out.append(
            _Buf(
                name=str(b.get("name", b.get("id"))),
                pool=int(b["mpool_id"]),
                offset=int(b.get("offset_start") or 0),
                size=int(b.get("size_bytes") or 0),
                start=int(epochs.get("start", 0)),
                end=int(epochs.get("end", last)),
                scratch="SCRATCH" in str(b.get("flags", "")).upper()
                or "scratch" in str(b.get("name", "")).lower(),
                # Float buffers are a cost only in a network that is otherwise integer.
                is_float=has_int and "FLOAT" in fmt,
            )
        )
    return out


def _union(spans: list[tuple[int, int]]) -> int:
    total, top = 0, None
    for lo, hi in sorted(spans):
        if top is None or lo > top:
            total += hi - lo
            top = hi
        elif hi > top:
            total += hi - top
            top = hi
    return total


def _profile(bufs: list[_Buf], align: int = 1) -> list[int]:
    """Bytes live at each epoch: the union of live address ranges."""
    if not bufs:
        return [0]
    nsteps = max(b.end for b in bufs) + 1
    starts: list[list[_Buf]] = [[] for _ in range(nsteps)]
    for b in bufs:
        starts[max(b.start, 0)].append(b)
    live: list[_Buf] = []
    out = []
    for t in range(nsteps):
        live.extend(starts[t])
        spans = []
        for b in live:
            hi = b.offset + b.size
            if align > 1:
                hi = -(-hi // align) * align
            spans.append((b.offset, hi))
        out.append(_union(spans))
        live = [b for b in live if b.end > t]
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


def _fmt(n: int) -> str:
    return f"{n:,} B"


def explain_c_info(model: dict[str, Any] | Path | str | None, c_info: Path | str) -> dict[str, Any]:
    """Explain the tool's activation figure from its ``c_info.json``.

    :param model: an :func:`~pytest_stedge.oracle.analyze_model` report, an ONNX
        path, or None (then the explanation starts from the tool's own tensors).
    :returns: ``reported_bytes``, ``pools`` (per pool: used, liveness bound,
        external), ``tool_bound_bytes`` (liveness bound over the tool's buffers
        using their epochs), ``oracle_lower_bound_bytes``, ``pairing`` and
        ``parts`` ([{kind, bytes, words}] adding up to ``reported_bytes``),
        ``summary`` (one sentence), ``buffers`` (the tool's activation buffers with
        pool, offset, size and epochs).
    :raises OracleError: unreadable c_info, or a c_info from another model.
    """
    path = Path(c_info)
    data = load_c_info(path)
    report: dict[str, Any] | None
    if model is None or isinstance(model, dict):
        report = model
    else:
        from .memory import analyze_model

        report = analyze_model(model)
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
    internal = [pid for pid in pools if pid not in external]

    def bound(pid: int, keep: Any, align: int = 1) -> int:
        return max(_profile([b for b in bufs if b.pool == pid and keep(b)], align))

    def core(b: _Buf) -> bool:
        return not b.scratch and not b.is_float

    def no_scratch(b: _Buf) -> bool:
        return not b.scratch

    def every(b: _Buf) -> bool:
        return True

    nsteps = max((b.end for b in bufs), default=0) + 1

    def global_bound(pids: list[int], keep: Any) -> int:
        totals = [0] * nsteps
        for pid in pids:
            prof = _profile([b for b in bufs if b.pool == pid and keep(b)])
            for t, v in enumerate(prof):
                totals[t] += v
        return max(totals) if totals else 0

    s_core_global = global_bound(internal, core)
    s_core = sum(bound(p, core) for p in internal)
    s_float = sum(bound(p, no_scratch) for p in internal)
    s_all = sum(bound(p, every) for p in internal)
    aligned = 0
    for pid in internal:
        align = int(pools[pid].get("alignment") or 1)
        raw = bound(pid, every)
        aligned += min(max(bound(pid, every, align), raw), max(used[pid], raw))
    u_int = sum(used[p] for p in internal)
    u_ext = sum(used[p] for p in external)
    oracle = report.get("lower_bound_bytes") if report else None

    parts: list[dict[str, Any]] = []

    def part(kind: str, value: int, words: str) -> None:
        parts.append({"kind": kind, "bytes": int(value), "words": words})

    n_float = sum(1 for b in bufs if b.is_float)
    n_scratch = sum(1 for b in bufs if b.scratch)
    if oracle is not None:
        part(
            "model",
            oracle,
            f"the model needs at least {_fmt(oracle)} (oracle liveness lower bound)",
        )
        diff = s_core_global - oracle
        if diff >= 0:
            words = (
                f"the tool's own tensors need {_fmt(diff)} more at their peak than the model's "
                f"(layout conversions, inserted copies, a different operator order)"
            )
        else:
            words = (
                f"the tool's own tensors need {_fmt(-diff)} less at their peak than the oracle's "
                f"bound (fused operators, in-place ops, int8 I/O, buffers moved to external RAM)"
            )
        part("tool_tensors", diff, words)
    else:
        part(
            "tool_tensors",
            s_core_global,
            f"the tool's own tensors need {_fmt(s_core_global)} at their peak",
        )
    part(
        "pool_split",
        s_core - s_core_global,
        f"tensors split over {len(internal)} internal pool(s) cannot share memory across pools",
    )
    part(
        "float_buffers",
        s_float - s_core,
        f"{n_float} float buffer(s) (4 bytes per element) in an integer network",
    )
    part("scratch", s_all - s_float, f"{n_scratch} scratch buffer(s) for kernels")
    part("padding", aligned - s_all, "alignment of buffer ends to the pools' alignment")
    part(
        "reuse_not_taken",
        u_int - aligned,
        "memory the allocator did not reuse: its pools' high-water marks exceed the live peak",
    )
    ext_names = ", ".join(str(pools[p].get("name")) for p in sorted(external)) or "none"
    part("external_ram", u_ext, f"placed in external RAM (pools: {ext_names})")
    part(
        "unaccounted",
        reported - u_int - u_ext,
        "difference between the reported figure and the counted pools' used bytes",
    )
    assert sum(p["bytes"] for p in parts) == reported

    pool_rows = []
    for pid, p in pools.items():
        mine = [b for b in bufs if b.pool == pid]
        pool_rows.append(
            {
                "id": pid,
                "name": p.get("name"),
                "used_bytes": used[pid],
                "bound_bytes": max(_profile(mine)),
                "buffers": len(mine),
                "external": pid in external,
                "alignment": p.get("alignment"),
            }
        )
    tool_bound = global_bound(list(pools), every)
    big = sorted(
        (p for p in parts if p["kind"] != "model" and p["bytes"] > 0), key=lambda p: -p["bytes"]
    )
    gap = reported - oracle if oracle is not None else None
    if oracle is not None and gap is not None:
        top = ", ".join(f"{p['kind']} {_fmt(p['bytes'])}" for p in big[:3]) or "nothing"
        summary = (
            f"reported {_fmt(reported)} vs oracle {_fmt(oracle)}: gap {_fmt(gap)}; "
            f"largest parts: {top}"
        )
    else:
        summary = f"reported {_fmt(reported)}; the tool's liveness bound is {_fmt(tool_bound)}"
    return {
        "c_info": str(path),
        "reported_bytes": reported,
        "oracle_lower_bound_bytes": oracle,
        "gap_bytes": gap,
        "tool_bound_bytes": tool_bound,
        "epochs": nsteps,
        "pools": pool_rows,
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
                "scratch": b.scratch,
                "float": b.is_float,
            }
            for b in sorted(bufs, key=lambda b: (b.start, b.pool, b.offset))
        ],
    }

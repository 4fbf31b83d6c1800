"""STM32N6 Neural-ART sections of text reports: per-pool memory usage and the epoch tables.

Epoch tables come in two shapes: the 2.x list (``epoch 2  -SW-  ( QuantizeLinear )``,
``EC``, ``??`` = hybrid) and the 3.x/4.x boxed table (``| epoch_56 | SW | Softmax |``,
``| epochs 1 -> 51 | EC | |``, ``Hybrid``) with its summary counts.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .figures import parse_size_precise

# "npuRAM5 [0x342E0000 - 0x34350000]: 240.000 kB / 448.000 kB ( 53.57 % used) -- weights: 0 B
# ( 0.00 % used)  activations: 240.000 kB ( 53.57 % used)". Negated classes, no lazy groups:
# a near-miss line costs one pass.
_POOL = re.compile(
    r"^\s*(\S+)\s+\[0x[0-9A-Fa-f]+\s*-\s*0x[0-9A-Fa-f]+\]:([^/]*)/([^(]*)\([^)]*used\)"
    r"\s*--\s*weights:([^(]*)\([^)]*\)\s*activations:([^(]*)\("
)

_V2_TOTAL = re.compile(
    r"Total number of epochs:\s*(\d{1,9})\s+of which\s+(\d{1,9})\s+implemented in software"
)
_V2_LINE = re.compile(r"^\s*epoch\s+(\d{1,9})\s+(HW|EC|-SW-|\?\?)(?:\s+\(([^)]*)\))?\s*$")
_V3_TOTAL = re.compile(r"^\s*Total number of epochs\s+(\d{1,9})\s*$")
_V3_SW = re.compile(r"pure software \(SW\) epochs\s+(\d{1,9})")
_V3_HYBRID = re.compile(r"hybrid epochs \(using both software and hardware\)\s+(\d{1,9})")
_V3_HW = re.compile(
    r"pure hardware \(HW or EC\) epochs\s+(\d{1,9})"
    r"(?:\s*\(implemented in (\d{1,9}) epoch controller)?"
)
# "| epoch_56 | SW | Softmax |", "| epochs 1 -> 51 | EC | |", "| <no executed epochs> | EC | |"
_V3_ROW = re.compile(
    r"^\s*\|\s*(epoch_(\d{1,9})|epochs\s+(\d{1,9})\s*->\s*(\d{1,9})|<[^>|]*>)\s*\|([^|]*)\|([^|]*)\|\s*$"
)

_KINDS = {
    "HW": "hw",
    "EC": "ec",
    "-SW-": "sw",
    "SW": "sw",
    "??": "hybrid",
    "HYBRID": "hybrid",
    "MIX": "hybrid",
}


def parse_memory_usage(lines: list[str]) -> dict[str, Any]:
    """Read ``Memory usage information``: the pools, and weights/activations twice over.

    Every figure there is printed rounded (``240.000 kB``, ``1.262 MB``). Returned:
    ``pools`` (each with ``precision_bytes`` when rounded), ``total`` (the ``Total:`` line)
    and ``pool_sums`` (the pools added up), each as ``{key: (bytes, error_bytes)}``: the
    sum of kB-rounded pools is often closer than an MB-rounded total.
    """
    pools: list[dict[str, Any]] = []
    total: dict[str, tuple[int, float]] = {}
    sums = {"weights_bytes": [0, 0.0], "activations_bytes": [0, 0.0]}
    for line in lines:
        match = _POOL.match(line)
        if match:
            pools.append(_pool(match, sums))
            continue
        stripped = line.strip()
        if stripped.startswith("Total:") and "weights:" in stripped:
            _, _, rest = stripped.partition("weights:")
            weights, _, activations = rest.partition("activations:")
            for key, text in (("weights_bytes", weights), ("activations_bytes", activations)):
                parsed = parse_size_precise(text)
                if parsed is not None:
                    total[key] = parsed
    out: dict[str, Any] = {"total": total}
    if pools:
        out["pools"] = pools
        out["pool_sums"] = {k: (int(v[0]), float(v[1])) for k, v in sums.items()}
    return out


def _pool(match: re.Match[str], sums: dict[str, list[Any]]) -> dict[str, Any]:
    name, used, size, weights, activations = match.groups()
    pool: dict[str, Any] = {"name": name}
    error = 0.0
    per_kind: dict[str, int] = {}
    for key, text in (
        ("size_bytes", size),
        ("used_bytes", used),
        ("weights_bytes", weights),
        ("activations_bytes", activations),
    ):
        parsed = parse_size_precise(text)
        if parsed is None:
            continue
        pool[key] = parsed[0]
        if key in sums:
            sums[key][0] += parsed[0]
            sums[key][1] += parsed[1]
        if key != "size_bytes":
            error = max(error, parsed[1])
        if key in sums:
            per_kind[key] = math.ceil(parsed[1])
    if error:
        pool["precision_bytes"] = math.ceil(error)
        # per kind too: "768  B" is exact beside a rounded "32.000 kB" of the same pool
        pool["precision"] = per_kind
    return pool


def parse_epochs(lines: list[str]) -> dict[str, Any] | None:
    """Read ``Epochs details`` in either the 2.x or the 3.x/4.x layout."""
    text_counts: dict[str, int] = {}
    listing: list[dict[str, Any]] = []
    ec_blobs: int | None = None
    for line in lines:
        match = _V2_TOTAL.search(line)
        if match:
            text_counts["total"], text_counts["sw"] = int(match.group(1)), int(match.group(2))
            continue
        match = _V2_LINE.match(line)
        if match:
            kind = _KINDS[match.group(2)]
            op = (match.group(3) or "").strip()
            ops = [op] if op else []
            listing.append({"id": int(match.group(1)), "kind": kind, "ops": ops})
            continue
        match = _V3_TOTAL.match(line)
        if match:
            text_counts["total"] = int(match.group(1))
            continue
        for key, pattern in (("sw", _V3_SW), ("hybrid", _V3_HYBRID)):
            found = pattern.search(line)
            if found:
                text_counts[key] = int(found.group(1))
        found = _V3_HW.search(line)
        if found:
            text_counts["hw_or_ec"] = int(found.group(1))
            if found.group(2) is not None:
                ec_blobs = int(found.group(2))
            continue
        row = _V3_ROW.match(line)
        if row:
            entry = _boxed_row(row)
            if entry is not None:
                listing.append(entry)
    if not text_counts and not listing:
        return None
    return _epoch_counts(text_counts, listing, ec_blobs)


def _boxed_row(row: re.Match[str]) -> dict[str, Any] | None:
    kind = _KINDS.get(row.group(5).strip().upper())
    if kind is None:
        return None
    details = row.group(6).strip()
    ops = [details] if details else []
    if row.group(2):
        return {"id": int(row.group(2)), "kind": kind, "ops": ops}
    if row.group(3):
        # A range of epochs run by one epoch-controller blob; its ids are not all executed
        # epochs, so it stays one entry and the summary lines give the counts.
        return {"id": int(row.group(3)), "to": int(row.group(4)), "kind": kind, "ops": ops}
    return None


def _epoch_counts(
    text_counts: dict[str, int], listing: list[dict[str, Any]], ec_blobs: int | None
) -> dict[str, Any]:
    singles = [e for e in listing if "to" not in e]
    by_kind = {k: sum(1 for e in singles if e["kind"] == k) for k in ("hw", "ec", "sw", "hybrid")}
    out: dict[str, Any] = {}
    if "total" in text_counts:
        out["total"] = text_counts["total"]
    elif listing and len(singles) == len(listing):
        out["total"] = len(listing)
    if "hw_or_ec" in text_counts:  # 3.x/4.x summary lines
        hw_or_ec = text_counts["hw_or_ec"]
        out["sw"] = text_counts.get("sw", by_kind["sw"])
        out["hybrid"] = text_counts.get("hybrid", by_kind["hybrid"])
        has_ec = ec_blobs not in (None, 0) or any(e["kind"] == "ec" for e in listing)
        hw_rows = by_kind["hw"]
        if not has_ec:
            out["hw"], out["ec"] = hw_or_ec, 0
        elif not any(e["kind"] == "hw" for e in listing):
            out["hw"], out["ec"] = 0, hw_or_ec
        else:
            out["hw"], out["ec"] = hw_rows, hw_or_ec - hw_rows
    else:  # 2.x: "N of which M implemented in software" (hybrid ?? epochs not in M)
        out["sw"] = text_counts.get("sw", by_kind["sw"])
        out["hybrid"] = by_kind["hybrid"]
        total = out.get("total")
        if total is not None and len(singles) == total:
            out["hw"], out["ec"] = by_kind["hw"], by_kind["ec"]
        elif total is not None and not singles:
            pass  # only the counts line: hw/ec split unknown
        elif total is not None:
            # 2.1 listed only some lines; the rest are hardware of the kind listed
            rest = total - out["sw"] - out["hybrid"]
            if by_kind["ec"] and not by_kind["hw"]:
                out["hw"], out["ec"] = 0, rest
            elif by_kind["hw"] and not by_kind["ec"]:
                out["hw"], out["ec"] = rest, 0
    if ec_blobs is not None:
        out["ec_blobs"] = ec_blobs
    out["list"] = listing
    return out


def software_ops(epochs: dict[str, Any]) -> list[str]:
    """Sorted operator types of SW and hybrid epochs.

    4.x details read ``Sub(float)``; the type is ``Sub`` (the epoch list keeps the detail).
    """
    ops = {
        _op_type(op) for e in epochs.get("list", []) if e["kind"] in ("sw", "hybrid") for op in e["ops"]
    }
    return sorted(op for op in ops if op)


def _op_type(detail: str) -> str:
    if detail.endswith(")") and "(" in detail:
        return detail[: detail.index("(")].rstrip()
    return detail

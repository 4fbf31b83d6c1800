"""What the epoch kinds of an N6 report mean, and which operators ran in each.

2.x text reports print a hybrid epoch as a bare ``??``; 3.x/4.x boxed tables print
``Hybrid`` with one operator; c_info calls it ``NODE_SW_HW``. Wherever the product shows
epochs it says what that is, which epochs and which operators, with software and hybrid
operators apart (the Result's ``software_ops`` joins them).
"""

from __future__ import annotations

from typing import Any

HYBRID_TEXT = ("hybrid epoch: the NPU and the Cortex-M55 share it; the tool prints it `??` "
               "in 2.x reports")
SOFTWARE_TEXT = "software epoch: the Cortex-M55 runs it, not the NPU"


def _op_type(detail: str) -> str:
    detail = str(detail)
    if detail.endswith(")") and "(" in detail:
        return detail[: detail.index("(")].rstrip()
    return detail


def ops_by_kind(epochs: dict[str, Any] | None) -> dict[str, Any]:
    """``{"sw": [ops], "hybrid": [ops], "hybrid_epochs": [ids], "sw_epochs": [ids]}``."""
    out: dict[str, Any] = {"sw": [], "hybrid": [], "sw_epochs": [], "hybrid_epochs": []}
    for entry in (epochs or {}).get("list") or []:
        kind = entry.get("kind")
        if kind not in ("sw", "hybrid"):
            continue
        if "id" in entry:
            out[f"{kind}_epochs"].append(entry["id"])
        for op in entry.get("ops") or []:
            name = _op_type(op)
            if name and name not in out[kind]:
                out[kind].append(name)
    out["sw"].sort()
    out["hybrid"].sort()
    return out


def _ids(ids: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" ... (+{len(ids) - limit})" if len(ids) > limit else "")


def explain(epochs: dict[str, Any] | None) -> list[str]:
    """Text lines: the software operators, then the hybrid epochs, their ids and operators
    and what ``??`` means (nothing when the run has neither)."""
    if not epochs:
        return []
    split = ops_by_kind(epochs)
    lines = []
    if split["sw"] or epochs.get("sw"):
        ops = ", ".join(split["sw"]) or "operators not printed"
        lines.append(f"SW ops: {ops} ({SOFTWARE_TEXT})")
    hybrid = int(epochs.get("hybrid") or 0) or len(split["hybrid_epochs"])
    if hybrid:
        where = f" (epoch {_ids(split['hybrid_epochs'])})" if split["hybrid_epochs"] else ""
        ops = ", ".join(split["hybrid"]) or "operators not printed (2.x `??` rows name none; " \
            "the run's c_info does)"
        lines.append(f"hybrid ops: {ops}{where}: {HYBRID_TEXT}")
    return lines


def _per_op(epochs: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for entry in (epochs or {}).get("list") or []:
        kind = entry.get("kind")
        if kind not in ("sw", "hybrid"):
            continue
        for op in entry.get("ops") or []:
            counts = out.setdefault(_op_type(op), {"sw": 0, "hybrid": 0})
            counts[kind] += 1
    return out


def placement_moves(base: dict[str, Any] | None, head: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per operator, how its software and hybrid epochs changed from ``base`` to ``head``
    (two Results' ``epochs``): ``to software`` when more of its epochs left the NPU (an
    operator that ran in hardware now runs, wholly or partly, on the Cortex-M55), ``to
    hardware`` when fewer did, ``software <-> hybrid`` when only the split changed.
    Unchanged operators are left out; the list is sorted by kind, then operator."""
    old, new = _per_op(base), _per_op(head)
    moves = []
    for op in sorted(set(old) | set(new)):
        a = old.get(op, {"sw": 0, "hybrid": 0})
        b = new.get(op, {"sw": 0, "hybrid": 0})
        if a == b:
            continue
        before, after = a["sw"] + a["hybrid"], b["sw"] + b["hybrid"]
        kind = ("to software" if after > before else "to hardware" if after < before
                else "software <-> hybrid")
        moves.append({"op": op, "kind": kind, "base": a, "head": b})
    order = {"to software": 0, "software <-> hybrid": 1, "to hardware": 2}
    return sorted(moves, key=lambda m: (order[m["kind"]], m["op"]))


def format_moves(moves: list[dict[str, Any]]) -> list[str]:
    """``to software: PRelu (SW 0 -> 33, hybrid 0 -> 0)`` lines."""
    return [f"{m['kind']}: {m['op']} (SW {m['base']['sw']} -> {m['head']['sw']}, hybrid "
            f"{m['base']['hybrid']} -> {m['head']['hybrid']})" for m in moves]


def summary_lines(items: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The terminal summary's section: per item with software or hybrid epochs, the
    operators of each kind (hybrid epochs by id), the oracle's prediction when stored, and
    where validation ran its worst cos and duration beside them (side by side only: the
    data says nothing of cause), then what ``??`` means."""
    lines = []
    any_hybrid = False
    for label, result in items:
        epochs = result.get("epochs") or {}
        sw, hybrid = int(epochs.get("sw") or 0), int(epochs.get("hybrid") or 0)
        if not sw and not hybrid:
            continue
        split = ops_by_kind(epochs)
        parts = []
        if sw:
            parts.append(f"SW {sw} ({', '.join(split['sw']) or 'operators not printed'})")
        if hybrid:
            any_hybrid = True
            where = f" epoch {_ids(split['hybrid_epochs'], 6)}" if split["hybrid_epochs"] else ""
            parts.append(f"hybrid ?? {hybrid} ({', '.join(split['hybrid']) or 'not named'}"
                         f"{';' if where else ''}{where})")
        predicted = (result.get("oracle") or {}).get("placement")
        if predicted:
            counts = predicted.get("counts") or {}
            parts.append(f"oracle predicted SW {counts.get('sw')}, hybrid {counts.get('hybrid')}")
        validation = result.get("validation") or {}
        cos = [o.get("cos") for o in validation.get("outputs") or [] if o.get("cos") is not None]
        if cos or validation.get("duration_ms") is not None:
            figures = [f"cos {min(cos):.4g}"] if cos else []
            if validation.get("duration_ms") is not None:
                figures.append(f"{validation['duration_ms']} ms")
            parts.append(f"validation {', '.join(figures)}")
        lines.append(f"  {label}: {'; '.join(parts)}")
    if not lines:
        return []
    if any_hybrid:
        lines.append(f"  ??: {HYBRID_TEXT}")
    return ["software and hybrid epochs (Cortex-M55):", *lines]

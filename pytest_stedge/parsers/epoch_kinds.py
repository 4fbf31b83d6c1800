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


UNNAMED = "operator not named"  # a SW/hybrid epoch the table counts but names no operator of


def op_counts(epochs: dict[str, Any] | None) -> dict[str, dict[str, int]] | None:
    """Per operator type, how many software and hybrid epochs name it (an epoch naming an
    operator twice counts once). Epochs the table counts but names no operator of (2.x
    ``??`` rows without their c_info, a table without its list) are counted under
    :data:`UNNAMED`, so that they never read as a move. None: the run has no epoch table."""
    if not epochs:
        return None
    out: dict[str, dict[str, int]] = {}
    listed = {"sw": 0, "hybrid": 0}
    for entry in epochs.get("list") or []:
        kind = entry.get("kind")
        if kind not in listed:
            continue
        listed[kind] += 1
        names = {_op_type(op) for op in entry.get("ops") or []} - {""}
        for name in names or {UNNAMED}:
            out.setdefault(name, {"sw": 0, "hybrid": 0})[kind] += 1
    for kind, seen in listed.items():
        missing = int(epochs.get(kind) or 0) - seen
        if missing > 0:
            out.setdefault(UNNAMED, {"sw": 0, "hybrid": 0})[kind] += missing
    return out


MOVE_KINDS = ("to software", "software <-> hybrid", "to hardware")


def moves_between(old: dict[str, dict[str, int]] | None,
                  new: dict[str, dict[str, int]] | None) -> list[dict[str, Any]]:
    """Per operator, how its software and hybrid epochs changed from ``old`` to ``new``
    (two :func:`op_counts`): ``to software`` when more of its epochs left the NPU (an
    operator that ran in hardware now runs, wholly or partly, on the Cortex-M55), ``to
    hardware`` when fewer did, ``software <-> hybrid`` when only the split changed.
    Unchanged operators are left out; nothing moves when either side has no epoch table.
    Sorted by kind (:data:`MOVE_KINDS`), then operator."""
    if old is None or new is None:
        return []
    zero = {"sw": 0, "hybrid": 0}
    moves = []
    for op in sorted(set(old) | set(new)):
        a, b = old.get(op, zero), new.get(op, zero)
        if a == b:
            continue
        before, after = a["sw"] + a["hybrid"], b["sw"] + b["hybrid"]
        kind = ("to software" if after > before else "to hardware" if after < before
                else "software <-> hybrid")
        moves.append({"op": op, "kind": kind, "base": dict(a), "head": dict(b)})
    return sorted(moves, key=lambda m: (MOVE_KINDS.index(m["kind"]), m["op"]))


def placement_moves(base: dict[str, Any] | None, head: dict[str, Any] | None) -> list[dict[str, Any]]:
    """:func:`moves_between` two Results' ``epochs``."""
    return moves_between(op_counts(base), op_counts(head))


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

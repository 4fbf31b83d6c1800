"""The gate's view of placement: operators that moved between the NPU and the Cortex-M55.

A change of its own kind beside the metric changes: per (case, stage) compared in two
versions, which operators gained (``to software``) or lost (``to hardware``) software or
hybrid epochs, or moved between the two (``software <-> hybrid``), from the two Results'
epoch tables (:func:`pytest_stedge.parsers.epoch_kinds.moves_between`). It never
contradicts the metric classification (:mod:`.compare`): a pair the gate cannot compare
(another model or other options: :func:`.store_diff._comparable`, the gate's own rule)
has its moves listed as not comparable too, and an operator moves ``to software`` only
when its SW+hybrid epochs grew, so ``epochs_sw + epochs_hybrid`` grew with it unless
another operator left. Moves are listed, never judged: they do not fail the gate.

Every view lists them the same way: ``stedge diff`` per case (:func:`format_placement_changes`),
the terminal summary, the diff page and the dashboard's changes page by operator
(:func:`moves_by_operator`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pytest_stedge.parsers.epoch_kinds import (
    MOVE_KINDS,
    UNNAMED,
    format_moves,
    moves_between,
    op_counts,
)

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store


def pair_moves(case_name: str, stage: str, base: Mapping[str, Any], head: Mapping[str, Any]
               ) -> dict[str, Any] | None:
    """The moves of one (case, stage) between two stored items (``model_sha256``,
    ``options_hash`` and the Result's ``epochs`` each), or None when nothing moved.

    ``comparable`` and ``note`` are the gate's (:mod:`.identity`)."""
    return counted_moves(case_name, stage, {**base, "counts": op_counts(base.get("epochs"))},
                         {**head, "counts": op_counts(head.get("epochs"))})


def counted_moves(case_name: str, stage: str, base: Mapping[str, Any], head: Mapping[str, Any]
                  ) -> dict[str, Any] | None:
    """:func:`pair_moves` of two items whose epochs are already ``counts``
    (:func:`op_counts`)."""
    from .identity import comparable as same_identity
    from .identity import not_comparable_reason

    moves = moves_between(base.get("counts"), head.get("counts"))
    if not moves:
        return None
    comparable = same_identity(base, head)
    note = "" if comparable else not_comparable_reason(base, head)
    return {"case_name": case_name, "stage": stage, "comparable": comparable, "note": note,
            "unnamed": unnamed_note(base.get("counts"), head.get("counts")), "moves": moves}


def unnamed_note(base: dict[str, dict[str, int]] | None,
                 head: dict[str, dict[str, int]] | None) -> str:
    """Say when a side's table names no operator for some SW/hybrid epochs (a 2.x ``??``
    row without its c_info): a move beside them may be a naming, not a placement."""
    parts = []
    for side, counts in (("base", base), ("head", head)):
        n = sum((counts or {}).get(UNNAMED, {}).values())
        if n:
            parts.append(f"{side}: {n} SW/hybrid epoch{'s name' if n != 1 else ' names'} "
                         "no operator")
    return "; ".join(parts)


def store_placement_changes(store: Store, base: str, head: str,
                            pairs: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per (case, stage) whose operators moved: the moves, and whether the pair is
    comparable (same model sha256 and options hash; else the moves may be the model's)."""
    out = []
    for case_name, stage in sorted(set(pairs)):
        old = store.latest_item(case_name, stage, base)
        new = store.latest_item(case_name, stage, head)
        if not old or not new or not old.get("result") or not new.get("result"):
            continue
        change = pair_moves(case_name, stage, {**old, "epochs": old["result"].get("epochs")},
                            {**new, "epochs": new["result"].get("epochs")})
        if change is not None:
            out.append(change)
    return out


def format_placement_changes(changes: list[dict[str, Any]], base: str, head: str) -> list[str]:
    """Text lines for ``stedge diff``: per case, operators moved to software first."""
    if not changes:
        return []
    lines = [f"operators moved between the NPU and the Cortex-M55 ({base} -> {head}):"]
    for change in changes:
        note = "" if change["comparable"] else \
            f"  (not comparable: {change.get('note') or 'model or options differ'})"
        if change.get("unnamed"):
            note += f"  ({change['unnamed']})"
        lines.append(f"  {change['case_name']} {change['stage']}{note}")
        lines.extend(f"    {line}" for line in format_moves(change["moves"]))
    return lines


def moves_by_operator(changes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The moves of many (case, stage) pairs grouped by (kind, operator): ``{"kind",
    "op", "cases": [{"case_name", "stage", "base", "head", "comparable", "note"}]}``,
    comparable pairs first in each group, ordered as :data:`MOVE_KINDS`, then operator."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for change in changes:
        for move in change["moves"]:
            groups.setdefault((move["kind"], move["op"]), []).append({
                "case_name": change["case_name"], "stage": change["stage"],
                "base": move["base"], "head": move["head"],
                "comparable": bool(change["comparable"]), "note": change.get("note", ""),
                "unnamed": change.get("unnamed", ""),
            })
    out = []
    for (kind, op), cases in sorted(groups.items(),
                                    key=lambda kv: (MOVE_KINDS.index(kv[0][0]), kv[0][1])):
        cases.sort(key=lambda c: (not c["comparable"], c["case_name"], c["stage"]))
        out.append({"kind": kind, "op": op, "cases": cases})
    return out


def format_by_operator(groups: list[dict[str, Any]], limit: int = 8) -> list[str]:
    """``to software: Transpose: blazeface generate (SW 0 -> 22, hybrid 0 -> 0); ...``
    lines, one per (kind, operator), at most ``limit`` cases each."""
    lines = []
    for group in groups:
        shown = []
        for case in group["cases"][:limit]:
            note = "" if case["comparable"] else ", not comparable: " + (
                case["note"] or "model or options differ")
            if case.get("unnamed"):
                note += f", {case['unnamed']}"
            shown.append(f"{case['case_name']} {case['stage']} (SW {case['base']['sw']} -> "
                         f"{case['head']['sw']}, hybrid {case['base']['hybrid']} -> "
                         f"{case['head']['hybrid']}{note})")
        more = len(group["cases"]) - limit
        lines.append(f"{group['kind']}: {group['op']}: {'; '.join(shown)}"
                     + (f"; ... (+{more})" if more > 0 else ""))
    return lines


def baseline_moves(placement: dict[str, dict[str, int]] | None, result: Mapping[str, Any],
                   comparable: bool, note: str) -> dict[str, Any] | None:
    """An item's moves against its baseline's ``placement`` (:func:`op_counts` of the
    baseline's Result), with the gate's comparability; None when nothing moved."""
    counts = op_counts(result.get("epochs"))
    moves = moves_between(placement, counts)
    if not moves:
        return None
    return {"comparable": comparable, "note": note, "unnamed": unnamed_note(placement, counts),
            "moves": moves}

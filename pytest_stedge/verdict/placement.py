"""The gate's view of placement: operators that moved between the NPU and the Cortex-M55.

A change of its own kind beside the metric changes: per (case, stage) stored in both
versions, which operators gained (``to software``) or lost (``to hardware``) software or
hybrid epochs, or moved between the two (``software <-> hybrid``), from the two Results'
epoch tables (:func:`pytest_stedge.parsers.epoch_kinds.placement_moves`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pytest_stedge.parsers.epoch_kinds import format_moves, placement_moves

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store


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
        moves = placement_moves(old["result"].get("epochs"), new["result"].get("epochs"))
        if not moves:
            continue
        comparable = all(old.get(k) and old.get(k) == new.get(k)
                         for k in ("model_sha256", "options_hash"))
        out.append({"case_name": case_name, "stage": stage, "comparable": comparable,
                    "moves": moves})
    return out


def format_placement_changes(changes: list[dict[str, Any]], base: str, head: str) -> list[str]:
    """Text lines for ``stedge diff``: operators moved to software first."""
    if not changes:
        return []
    lines = [f"operators moved between the NPU and the Cortex-M55 ({base} -> {head}):"]
    for change in changes:
        note = "" if change["comparable"] else "  (not comparable: model or options differ)"
        lines.append(f"  {change['case_name']} {change['stage']}{note}")
        lines.extend(f"    {line}" for line in format_moves(change["moves"]))
    return lines

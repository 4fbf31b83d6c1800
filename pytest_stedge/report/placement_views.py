"""Software and hybrid epochs on the HTML pages: which operators, which epochs, what ``??``
means, and the operators that moved between the NPU and the Cortex-M55.

Shared by the diff page, the dashboard's case pages and its changes page (rendered by
``_placement.html.j2``). The moves are the gate's (:mod:`pytest_stedge.verdict.placement`),
listed by operator; the epoch rows say, for each stored item with software or hybrid
epochs, the software operators apart from the hybrid ones, the hybrid epochs by id, and
:data:`~pytest_stedge.parsers.epoch_kinds.HYBRID_TEXT`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .data import _h, slug

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.placement_reads import EpochRow

IDS_SHOWN = 24  # hybrid epoch ids listed per row; the rest counted


@dataclass
class MoveRow:
    """One operator of one (case, stage) that moved between two versions."""

    kind: str = field(metadata=_h("to software, software <-> hybrid or to hardware"))
    op: str = field(metadata=_h("operator type as the epoch table prints it (untrusted text)"))
    case_name: str = field(metadata=_h("case name (untrusted text)"))
    case_href: str = field(metadata=_h("link to the case (its table or page), empty when none"))
    stage: str = field(metadata=_h("stage"))
    sw: str = field(metadata=_h("software epochs naming the operator, base → head"))
    hybrid: str = field(metadata=_h("hybrid (??) epochs naming the operator, base → head"))
    note: str = field(default="", metadata=_h("why the pair is not comparable (the gate's reason), and epochs that name no operator; empty when neither"))


@dataclass
class MoveGroup:
    """The operators moved between two versions, listed by operator."""

    base: str = field(metadata=_h("older version"))
    head: str = field(metadata=_h("newer version"))
    anchor: str = field(metadata=_h("HTML id"))
    rows: list[MoveRow] = field(default_factory=list, metadata=_h("by kind (to software first), then operator"))
    operators: int = field(default=0, metadata=_h("distinct (kind, operator) pairs"))


@dataclass
class EpochKinds:
    """The software and hybrid epochs of one stored item."""

    case_name: str = field(metadata=_h("case name (untrusted text)"))
    case_href: str = field(metadata=_h("link to the case (its table or page), empty when none"))
    stage: str = field(metadata=_h("stage"))
    version: str = field(metadata=_h("toolchain version"))
    anchor: str = field(metadata=_h("HTML id of the row"))
    sw: int = field(default=0, metadata=_h("software epochs (Cortex-M55)"))
    hybrid: int = field(default=0, metadata=_h("hybrid epochs (printed ?? in 2.x reports)"))
    sw_ops: str = field(default="", metadata=_h("operator types of the software epochs"))
    hybrid_ops: str = field(default="", metadata=_h("operator types of the hybrid epochs"))
    hybrid_epochs: str = field(default="", metadata=_h("ids of the hybrid epochs"))


def _ids(ids: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:IDS_SHOWN])
    return shown + (f" … (+{len(ids) - IDS_SHOWN})" if len(ids) > IDS_SHOWN else "")


def epoch_kinds(row: EpochRow, case_href: str = "") -> EpochKinds | None:
    """What one stored item ran off the NPU; None when it ran nothing there."""
    from pytest_stedge.parsers.epoch_kinds import ops_by_kind

    sw, hybrid = int(row.epochs.get("sw") or 0), int(row.epochs.get("hybrid") or 0)
    if not sw and not hybrid:
        return None
    split = ops_by_kind(row.epochs)
    unnamed = "not named by the report" if sw else ""
    return EpochKinds(
        case_name=row.case_name, case_href=case_href, stage=row.stage, version=row.version,
        anchor=epochs_anchor(row.case_name, row.stage, row.version), sw=sw, hybrid=hybrid,
        sw_ops=", ".join(split["sw"]) or unnamed,
        hybrid_ops=", ".join(split["hybrid"]) or ("not named by the report" if hybrid else ""),
        hybrid_epochs=_ids([int(i) for i in split["hybrid_epochs"]]),
    )


def epochs_anchor(case_name: str, stage: str, version: str) -> str:
    """The HTML id of an item's software/hybrid row."""
    return slug(f"{case_name}\0{stage}\0{version}", "sw-")


def move_group(base: str, head: str, changes: Iterable[Mapping[str, Any]],
               case_href: Callable[[str, str], str]) -> MoveGroup:
    """The moves of many (case, stage) pairs between ``base`` and ``head``, by operator."""
    from pytest_stedge.verdict.placement import moves_by_operator

    groups = moves_by_operator(changes)
    rows = [
        MoveRow(kind=g["kind"], op=g["op"], case_name=c["case_name"],
                case_href=case_href(c["case_name"], c["stage"]), stage=c["stage"],
                sw=f"{c['base']['sw']} → {c['head']['sw']}",
                hybrid=f"{c['base']['hybrid']} → {c['head']['hybrid']}",
                note="; ".join(n for n in (
                    "" if c["comparable"] else "not comparable: " + (c["note"] or "model or options differ"),
                    c.get("unnamed", "")) if n))
        for g in groups for c in g["cases"]
    ]
    return MoveGroup(base=base, head=head, anchor=slug(f"{base}\0{head}", "moves-"), rows=rows,
                     operators=len(groups))


@dataclass
class DiffPlacement:
    """The diff page's section on software and hybrid epochs."""

    moves: MoveGroup = field(metadata=_h("operators moved between the NPU and the Cortex-M55, by operator"))
    epochs: list[EpochKinds] = field(default_factory=list, metadata=_h("items of either version with software or hybrid epochs"))


def diff_placement(store: Store, base: str, head: str, pairs: Iterable[tuple[str, str]],
                   anchors: Mapping[tuple[str, str], str]) -> DiffPlacement:
    """The moves and the software/hybrid epochs of the compared (case, stage) pairs, from
    the same newest items ``stedge diff`` reads (:func:`store_placement_changes`)."""
    from pytest_stedge.store.placement_reads import epoch_rows
    from pytest_stedge.verdict.placement import pair_moves

    wanted = set(pairs)
    rows: dict[tuple[str, str, str], EpochRow] = {}
    for version in (base, head):
        for row in epoch_rows(store, version=version):
            if (row.case_name, row.stage) in wanted:
                rows[(row.case_name, row.stage, version)] = row

    def href(case_name: str, stage: str) -> str:
        anchor = anchors.get((case_name, stage))
        return f"#{anchor}" if anchor else ""

    changes = []
    for case_name, stage in sorted(wanted):
        old, new = rows.get((case_name, stage, base)), rows.get((case_name, stage, head))
        if old is None or new is None:
            continue
        change = pair_moves(case_name, stage, _identity(old), _identity(new))
        if change is not None:
            changes.append(change)
    kinds = [k for key in sorted(rows) if (k := epoch_kinds(rows[key], href(key[0], key[1])))]
    return DiffPlacement(moves=move_group(base, head, changes, href), epochs=kinds)


def _identity(row: EpochRow) -> dict[str, Any]:
    return {"model_sha256": row.model_sha256, "options_hash": row.options_hash,
            "epochs": row.epochs}


class MoveSeries:
    """The moves between consecutive stored versions of each (case, stage), fed the
    items sorted by case and stage (as
    :func:`~pytest_stedge.store.placement_reads.epoch_rows` yields them); only the
    current (case, stage)'s operator counts are held."""

    def __init__(self, order: Mapping[str, int]) -> None:
        self.order = order
        self.moves: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._key: tuple[str, str] | None = None
        self._series: list[tuple[str, dict[str, Any]]] = []  # (version, identity)

    def add(self, row: EpochRow) -> None:
        """One stored item."""
        from pytest_stedge.parsers.epoch_kinds import op_counts

        if (row.case_name, row.stage) != self._key:
            self._flush()
            self._key = (row.case_name, row.stage)
        self._series.append((row.version, {"model_sha256": row.model_sha256,
                                           "options_hash": row.options_hash,
                                           "counts": op_counts(row.epochs)}))

    def finish(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(base, head) -> the moves of every (case, stage) between them."""
        self._flush()
        return self.moves

    def _flush(self) -> None:
        from pytest_stedge.verdict.placement import counted_moves

        if self._key is None:
            return
        case_name, stage = self._key
        self._series.sort(key=lambda vi: self.order.get(vi[0], -1))
        for (base, old), (head, new) in itertools.pairwise(self._series):
            change = counted_moves(case_name, stage, old, new)
            if change is not None:
                self.moves.setdefault((base, head), []).append(change)
        self._series = []


"""The dashboard's operator atlas: where each operator ran, version by version, in the
stored runs (``atlas.html``).

Built from the stored Results the dashboard reads (the newest item of each case, stage
and version: :func:`pytest_stedge.store.placement_reads.epoch_rows`), never from the
oracle: it is what the real tool did. Per operator (as the epoch table prints it:
``Sub(float)`` apart from ``Sub``) and version, how many epochs naming it ran in
hardware (HW or EC: the NPU), in software (the Cortex-M55) or hybrid (``??``), and
which stored items show it, each linked to its row on the case's page and, for a
replayed public run, to the public files it was read from.

Hardware epochs are counted only where the run's table names their operators (c_info
epoch lists); 2.x text tables and 3.x/4.x boxed tables name only the software and
hybrid ones, so a blank HW count is "not named", not "never on the NPU". The page says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .data import _h, slug

if TYPE_CHECKING:
    from pytest_stedge.store.placement_reads import EpochRow

EVIDENCE_SHOWN = 20  # items listed per operator and version; the rest counted
KINDS = ("hw", "sw", "hybrid")
_KIND_OF = {"hw": "hw", "ec": "hw", "sw": "sw", "hybrid": "hybrid"}


@dataclass
class Evidence:
    """One stored item that shows an operator in a version."""

    case_name: str = field(metadata=_h("case name (untrusted text)"))
    stage: str = field(metadata=_h("stage"))
    run_id: int = field(metadata=_h("the store's run id"))
    href: str = field(metadata=_h("its row on the case page; empty when the case has no page"))
    counts: dict[str, int] = field(default_factory=dict, metadata=_h("epochs naming the operator: hw, sw, hybrid"))
    sources: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(file name, https URL) of the public files the run was read from"))
    recorded: bool = field(default=False, metadata=_h("a replayed recording, not a run of an install"))


@dataclass
class Cell:
    """One operator in one version."""

    counts: dict[str, int] = field(default_factory=dict, metadata=_h("epochs naming it: hw, sw, hybrid"))
    items: int = field(default=0, metadata=_h("stored items that show it"))
    anchor: str = field(default="", metadata=_h("HTML id of its evidence list"))
    placement: str = field(default="", metadata=_h("hw, sw or hybrid when every epoch agrees, else mixed"))
    evidence: list[Evidence] = field(default_factory=list, metadata=_h("the first items that show it"))

    @property
    def more(self) -> int:
        """Items not listed."""
        return self.items - len(self.evidence)


@dataclass
class Row:
    """One operator across versions."""

    op: str = field(metadata=_h("operator as the epoch table prints it (untrusted text)"))
    cells: list[Cell | None] = field(default_factory=list, metadata=_h("one per version of the page; None: no stored run of that version shows it"))


@dataclass
class AtlasPage:
    """Context of atlas.html.j2."""

    versions: list[str] = field(default_factory=list, metadata=_h("versions with epoch tables, release order"))
    rows: list[Row] = field(default_factory=list, metadata=_h("operators by name"))
    items: int = field(default=0, metadata=_h("stored items whose epoch table names operators"))
    read: int = field(default=0, metadata=_h("stored items with an epoch table read"))
    cases: int = field(default=0, metadata=_h("cases among them"))
    unnamed: list[tuple[str, Cell]] = field(default_factory=list, metadata=_h("(version, cell) of software/hybrid epochs whose operator the table does not name"))


UNNAMED_KEY = "\0unnamed"


class Atlas:
    """The atlas, accumulated one stored item at a time."""

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], Cell] = {}
        self._items = 0
        self._read = 0
        self._cases: set[str] = set()

    def add(self, row: EpochRow, href: str) -> None:
        """Count one item's epoch table (``href``: its row on the case page)."""
        self._read += 1
        per_op = _per_op(row.epochs)
        if not per_op:
            return
        self._items += 1
        self._cases.add(row.case_name)
        for op, counts in per_op.items():
            cell = self._cells.get((op, row.version))
            if cell is None:
                cell = self._cells[(op, row.version)] = Cell(
                    counts=dict.fromkeys(KINDS, 0),
                    anchor=slug(f"{op}\0{row.version}", "op-"))
            for kind, n in counts.items():
                cell.counts[kind] += n
            cell.items += 1
            if len(cell.evidence) < EVIDENCE_SHOWN:
                cell.evidence.append(Evidence(
                    case_name=row.case_name, stage=row.stage, run_id=row.run_id, href=href,
                    counts=counts, sources=[(_file_name(u), u) for u in row.sources],
                    recorded=row.recorded))

    def page(self, order: dict[str, int]) -> AtlasPage:
        """The page's context (``order``: version -> release rank)."""
        for cell in self._cells.values():
            kinds = [k for k in KINDS if cell.counts[k]]
            cell.placement = kinds[0] if len(kinds) == 1 else "mixed"
        versions = sorted({v for op, v in self._cells if op != UNNAMED_KEY},
                          key=lambda v: order.get(v, len(order)))
        ops = sorted({op for op, _ in self._cells if op != UNNAMED_KEY}, key=str.lower)
        rows = [Row(op=op, cells=[self._cells.get((op, v)) for v in versions]) for op in ops]
        unnamed = sorted(((v, c) for (op, v), c in self._cells.items() if op == UNNAMED_KEY),
                         key=lambda vc: order.get(vc[0], len(order)))
        return AtlasPage(versions=versions, rows=rows, items=self._items, read=self._read,
                         cases=len(self._cases), unnamed=unnamed)


def _file_name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1] or url


def _per_op(epochs: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per operator as printed, the epochs of each kind naming it (an epoch naming it
    twice counts once); software and hybrid epochs that name no operator under
    :data:`UNNAMED_KEY` (hardware ones without names are the norm: not counted)."""
    out: dict[str, dict[str, int]] = {}
    listed = {"sw": 0, "hybrid": 0}
    for entry in epochs.get("list") or []:
        kind = _KIND_OF.get(str(entry.get("kind")))
        if kind is None:
            continue
        if kind in listed:
            listed[kind] += 1
        names = {str(op).strip() for op in entry.get("ops") or []} - {""}
        if not names and kind != "hw":
            names = {UNNAMED_KEY}
        for name in names:
            out.setdefault(name, dict.fromkeys(KINDS, 0))[kind] += 1
    for kind, seen in listed.items():
        missing = int(epochs.get(kind) or 0) - seen
        if missing > 0:
            out.setdefault(UNNAMED_KEY, dict.fromkeys(KINDS, 0))[kind] += missing
    return out


def build_atlas(rows: Iterable[tuple[EpochRow, str]], order: dict[str, int]) -> AtlasPage:
    """The atlas of ``(item, href)`` pairs (for tests and callers holding the rows)."""
    atlas = Atlas()
    for row, href in rows:
        atlas.add(row, href)
    return atlas.page(order)

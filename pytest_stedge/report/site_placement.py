"""The dashboard's placement pages, from one read of the stored epoch tables: the
operator atlas (``atlas.html``), each case page's software and hybrid epochs, and the
changes page's operators moved between the NPU and the Cortex-M55.

:func:`read_placement` streams every stored item's epoch table once (newest per case,
stage and version) and keeps only what the pages show: the atlas's counts, the rows
of items that ran something off the NPU, and the moves between consecutive versions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .atlas import Atlas, AtlasPage
from .case_pages import row_anchor
from .placement_views import EpochKinds, MoveGroup, MoveSeries, epoch_kinds, move_group

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store


@dataclass
class SitePlacement:
    """What the dashboard's pages show of the stored epoch tables."""

    atlas: AtlasPage
    kinds: dict[str, list[EpochKinds]] = field(default_factory=dict)  # case -> its rows
    moves: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def move_groups(self, order: Mapping[str, int], case_pages: Mapping[str, str]
                    ) -> list[MoveGroup]:
        """The changes page's sections: per pair of versions (newest head first, as the
        page's pairs), the moves by operator, linked to the head's row on the case page."""
        def href_for(head: str) -> Callable[[str, str], str]:
            def href(case_name: str, stage: str) -> str:
                page = case_pages.get(case_name)
                return f"cases/{page}#{row_anchor(head, stage)}" if page else ""
            return href

        pairs = sorted(self.moves, key=lambda p: (order.get(p[1], -1), order.get(p[0], -1)))
        return [move_group(b, h, self.moves[(b, h)], href_for(h)) for b, h in pairs]


def read_placement(store: Store, order: Mapping[str, int], case_pages: Mapping[str, str]
                   ) -> SitePlacement:
    """One pass over the stored epoch tables (``case_pages``: case -> its page file)."""
    from pytest_stedge.store.placement_reads import epoch_rows

    atlas = Atlas()
    kinds: dict[str, list[EpochKinds]] = {}
    series = MoveSeries(order)
    for row in epoch_rows(store):
        page = case_pages.get(row.case_name)
        anchor = row_anchor(row.version, row.stage)
        atlas.add(row, f"cases/{page}#{anchor}" if page else "")
        kept = epoch_kinds(row, f"#{anchor}")
        if kept is not None:
            kinds.setdefault(row.case_name, []).append(kept)
        series.add(row)
    for rows in kinds.values():
        rows.sort(key=lambda r: (order.get(r.version, -1), r.stage))
    return SitePlacement(atlas=atlas.page(dict(order)), kinds=kinds, moves=series.finish())


def write_atlas(render: Any, out: Path, page: AtlasPage) -> Path:
    """atlas.html."""
    result: Path = render("atlas.html.j2", out / "atlas.html", page=page,
                          title="Operator atlas: NPU or Cortex-M55, by version", root="")
    return result

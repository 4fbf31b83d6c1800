"""``--stedge-shard K/N``: this session runs the K-th of N shards of the corpus.

A shard is a set of whole cases: every stage, variant and toolchain version of a case
stays in one shard, so a baseline run in the same session and the item folders of a
case stay together. Cases (their ``case.toml`` files, by path under the rootdir) are
sorted and dealt round-robin: shard K gets the cases at positions K-1, K-1+N, ...
Every job of a CI matrix sees the same corpus, so the N shards cover it once, with
sizes that differ by at most one case file. (pytest-split balances items by recorded
durations and pytest-test-groups deals items, not cases; both would split a case.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def picks(self, position: int) -> bool:
        """Whether the case file at ``position`` (0-based, in sorted order) is ours."""
        return position % self.count == self.index - 1


def parse_shard(text: str) -> Shard:
    """``--stedge-shard`` converter: ``K/N`` with 1 <= K <= N."""
    left, sep, right = text.partition("/")
    try:
        index, count = int(left), int(right)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shard: give K/N with 1 <= K <= N (e.g. 2/4 for the second "
            "of four CI jobs)"
        )
    return Shard(index, count)


def select(
    items: list[pytest.Item], shard: Shard, root: Path, is_case_item: Callable[[pytest.Item], bool]
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """Split ``items`` into (kept, deselected) for ``shard``; items that do not come
    from a case file (other tests in the session: ``is_case_item`` false) are kept in
    every shard."""
    files = sorted({_key(item, root) for item in items if is_case_item(item)})
    position = {name: i for i, name in enumerate(files)}
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if is_case_item(item) and not shard.picks(position[_key(item, root)]):
            dropped.append(item)
        else:
            kept.append(item)
    return kept, dropped


def _key(item: pytest.Item, root: Path) -> str:
    path = Path(item.path)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()

"""The run report's changes: each item of a run against its baseline, classified as the
gate did in the terminal (``--stedge-baseline``'s version, else, for a replayed recording,
the stored version before it) by the one rule :func:`pytest_stedge.verdict.store_diff.compare_items`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

    from ..case.model import Case
    from ..verdict.bands import BandSettings
    from ..verdict.compare import MetricChange


def run_changes(
    store: Store, run: Mapping[str, Any], cases: Mapping[str, Case | None],
    bands: BandSettings | None = None,
) -> tuple[list[tuple[str, str, list[int]]], dict[str, list[MetricChange]]]:
    """Per (baseline, version) pair of the run: the count of each kind of change
    (:data:`pytest_stedge.report.changes.SHOWN_KINDS` order); and per item node id its
    changes that are not unchanged."""
    from pytest_stedge.store.queries import case_items

    from ..case.recordings import release_key
    from ..verdict.bands import BandSettings
    from ..verdict.compare import ChangeKind
    from ..verdict.identity import not_comparable_reason
    from ..verdict.store_diff import compare_items
    from .changes import SHOWN_KINDS

    settings = bands or BandSettings()
    items = [i for i in run["items"] if i.get("version") and i["outcome"] != "skipped"]
    history = case_items(store, [i["case_name"] for i in items])
    tallies: dict[tuple[str, str], Counter[ChangeKind]] = {}
    by_item: dict[str, list[MetricChange]] = {}
    for item in items:
        name, stage, version = item["case_name"], item["stage"], str(item["version"])
        base = _baseline_version(run, item, history, release_key)
        if base is None or (name, stage, base) not in history:
            continue
        old = {**history[(name, stage, base)], "version": base}
        result = item.get("result") or {}
        new = {"model_sha256": item.get("model_sha256"), "options_hash": item.get("options_hash"),
               "options": result.get("options"), "metrics": dict(item.get("metrics") or {}),
               "version": version}
        changes = compare_items(name, stage, old, new, case=cases.get(name), bands=settings,
                                note=not_comparable_reason(old, new))
        tallies.setdefault((base, version), Counter()).update(c.kind for c in changes)
        moved = [c for c in changes if c.kind is not ChangeKind.UNCHANGED]
        if moved:
            by_item[str(item["nodeid"])] = moved
    pairs = sorted(tallies, key=lambda p: (release_key(p[1]), release_key(p[0])))
    return [(b, h, [tallies[(b, h)][k] for k in SHOWN_KINDS]) for b, h in pairs], by_item


def _baseline_version(
    run: Mapping[str, Any], item: Mapping[str, Any],
    history: Mapping[tuple[str, str, str], Any], release_key: Any,
) -> str | None:
    """The version the gate compared this item with: the run's ``--stedge-baseline``, else
    for a replayed recording the newest stored version before its own."""
    version = str(item["version"])
    if run.get("baseline"):
        return None if run["baseline"] == version else str(run["baseline"])
    if not item.get("recorded"):
        return None
    earlier: Sequence[str] = sorted(
        (v for (c, s, v) in history
         if c == item["case_name"] and s == item["stage"] and release_key(v) < release_key(version)),
        key=release_key,
    )
    return earlier[-1] if earlier else None

"""Two stored runs (or run groups) compared, case by case: the diff of ``stedge diff``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .bands import parse_band
from .compare import DiffReport, compare_results, expectation_flags

if TYPE_CHECKING:
    from ..case.model import Case
    from ..store.database import Store


def _check_groups(store: Store, names: Sequence[str]) -> None:
    """Refuse a group that is not stored, or lacks a shard (its cases would be missing)."""
    from ..errors import StoreError

    found = {g["run_group"]: g for g in store.run_groups(names)}
    for name in names:
        group = found.get(name)
        if group is None:
            known = [g["run_group"] for g in store.run_groups()][:10]
            raise StoreError(f"no run group {name} in {store.path}; stored groups: "
                             f"{', '.join(known) or 'none'}")
        if group["missing"]:
            total = group["missing"][0].split("/")[1]
            raise StoreError(
                f"run group {name} is incomplete: it holds shard {', '.join(group['shards'])} "
                f"of {total}; missing {', '.join(group['missing'])} (a shard's job failed "
                "or has not finished)"
            )


def diff_store(
    store: Store,
    base: str,
    head: str,
    *,
    bands_by_case: Mapping[str, Mapping[str, str]] | None = None,
    default_band: str = "0",
    cases: Mapping[str, Case] | None = None,
    run_groups: Sequence[str] | None = None,
    metric_bands: Mapping[str, str] | None = None,
) -> DiffReport:
    """Compare the newest stored results of ``base`` and ``head``, case by case.

    :param run_groups: only the runs of these run groups (each the shards of one CI
        pipeline, read as one run); a group that lacks a shard is refused.
    :param metric_bands: per-metric default bands (None: :data:`NOISY_BANDS`).
    :param bands_by_case: ``[baseline]`` bands by case name (else taken from ``cases``).
    :param cases: corpus cases by name; their ``[expect]`` bounds decide newly failing / fixed.
    :raises StedgeError: when either version has no stored results (listing those stored).
    """
    from ..errors import StoreError

    if run_groups:
        _check_groups(store, run_groups)
    stored = store.versions()
    missing = [v for v in (base, head) if v not in stored]
    if missing:
        raise StoreError(
            f"no stored results for version {', '.join(missing)} in {store.path}; "
            f"versions with results: {', '.join(stored) or 'none'}"
        )
    parse_band(default_band)  # fail early, naming the value
    items: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in store.metric_rows(versions=[base, head], run_groups=run_groups):
        key = (row["case_name"], row["stage"], row["version"])
        item = items.setdefault(
            key,
            {
                "model_sha256": row["model_sha256"],
                "options_hash": row["options_hash"],
                "metrics": {},
            },
        )
        if row["metric"] is not None and row["value"] is not None:
            item["metrics"][row["metric"]] = float(row["value"])
    pairs = sorted({(c, s) for c, s, _ in items})
    report = DiffReport(base=base, head=head)
    for case_name, stage in pairs:
        old = items.get((case_name, stage, base))
        new = items.get((case_name, stage, head))
        if old is None:
            report.only_head.append((case_name, stage))
            continue
        if new is None:
            report.only_base.append((case_name, stage))
            continue
        comparable, note = _comparable(old, new)
        case = (cases or {}).get(case_name)
        bands: Mapping[str, str] = {}
        if bands_by_case and case_name in bands_by_case:
            bands = bands_by_case[case_name]
        elif case is not None:
            bands = case.baseline
        base_ok = head_ok = None
        if case is not None:
            base_ok = expectation_flags(case.bounds_for(stage, old["metrics"]), old["metrics"])
            head_ok = expectation_flags(case.bounds_for(stage, new["metrics"]), new["metrics"])
        report.changes += compare_results(
            case_name,
            stage,
            old["metrics"],
            new["metrics"],
            comparable=comparable,
            bands=bands,
            default_band=default_band,
            base_ok=base_ok,
            head_ok=head_ok,
            note=note,
            metric_bands=metric_bands,
        )
    return report


def _comparable(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[bool, str]:
    """Same model and options on both sides; an unknown identity is not assumed equal."""
    reasons = []
    for key, label in (("model_sha256", "model sha256"), ("options_hash", "options hash")):
        a, b = old.get(key), new.get(key)
        if not a or not b:
            reasons.append(f"{label} unknown")
        elif a != b:
            reasons.append(f"{label} differs")
    return (not reasons, ", ".join(reasons))

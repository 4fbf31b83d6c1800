"""Two stored runs (or run groups) compared, case by case: the diff of ``stedge diff``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .bands import BandSettings, parse_band
from .compare import DiffReport, MetricChange, compare_results, expectation_flags

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
    untold: list[tuple[str, str, int]] = []  # not comparable: (case, stage, first change)
    for case_name, stage in pairs:
        old = items.get((case_name, stage, base))
        new = items.get((case_name, stage, head))
        if old is None:
            report.only_head.append((case_name, stage))
            continue
        if new is None:
            report.only_base.append((case_name, stage))
            continue
        if not _comparable(old, new):
            untold.append((case_name, stage, len(report.changes)))
        case = (cases or {}).get(case_name)
        own = bands_by_case.get(case_name) if bands_by_case else None
        report.changes += compare_items(
            case_name, stage, old, new, case=case,
            bands=BandSettings(default_band, metric_bands), case_bands=own,
        )
    _say_why(store, report, items, untold)
    return report


def compare_items(
    case_name: str,
    stage: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    case: Case | None,
    bands: BandSettings,
    case_bands: Mapping[str, str] | None = None,
    note: str = "",
) -> list[MetricChange]:
    """Every metric change between two stored items of one (case, stage): the pair of
    ``stedge diff`` and of the run report's changes.

    :param old: ``{model_sha256, options_hash, metrics}`` of the base item.
    :param case: the corpus case (its ``[baseline]`` bands and ``[expect]`` bounds), if known.
    :param case_bands: bands that replace the case's own.
    :param note: why the pair does not compare, when it does not.
    """
    bands_of: Mapping[str, str] = case_bands if case_bands is not None else (
        case.baseline if case is not None else {})
    base_ok = head_ok = None
    if case is not None:
        base_ok = expectation_flags(case.bounds_for(stage, old["metrics"]), old["metrics"])
        head_ok = expectation_flags(case.bounds_for(stage, new["metrics"]), new["metrics"])
    return compare_results(
        case_name,
        stage,
        old["metrics"],
        new["metrics"],
        comparable=_comparable(old, new),
        bands=bands_of,
        default_band=bands.default_band,
        base_ok=base_ok,
        head_ok=head_ok,
        note=note,
        metric_bands=bands.metric_bands,
    )


def _comparable(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Same model and options on both sides; an unknown identity is not assumed equal."""
    from .identity import comparable

    return comparable(old, new)


def _say_why(
    store: Store, report: DiffReport, items: Mapping[tuple[str, str, str], dict[str, Any]],
    untold: Sequence[tuple[str, str, int]],
) -> None:
    """Put on each change of a pair that does not compare why, in words: the model's two
    hashes, or the options that differ (read from the two items' Results)."""
    from ..store.queries import stated_options
    from .identity import not_comparable_reason

    if not untold:
        return
    options = stated_options(store, [report.base, report.head], sorted({c for c, _s, _i in untold}))
    ends = [i for _c, _s, i in untold[1:]] + [len(report.changes)]
    for (case_name, stage, first), end in zip(untold, ends):
        sides = []
        for version in (report.base, report.head):
            item = items[(case_name, stage, version)]
            sides.append({**item, "version": version,
                          "options": options.get((case_name, stage, version))})
        why = not_comparable_reason(sides[0], sides[1])
        for change in report.changes[first:end]:
            if change.case_name == case_name and change.stage == stage:
                change.note = why

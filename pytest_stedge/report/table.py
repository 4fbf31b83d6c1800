"""The terminal listing of a :class:`pytest_stedge.verdict.compare.DiffReport` (``stedge diff``,
the session summary): per case, changed metrics with old, new, delta and kind."""

from __future__ import annotations

import math

from pytest_stedge.report.visible import visible

from ..verdict.compare import KIND_RANK, ChangeKind, DiffReport, MetricChange


def fmt_number(metric: str, value: float | None) -> str:
    """A metric value for a table: thousands separators for whole numbers."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):  # snr=inf: the tool's figure for identical outputs
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


def fmt_delta(change: MetricChange) -> str:
    """``+270,336 (+10.0%)``, or ``-`` when one side is missing."""
    if change.delta is None:
        return "-"
    sign = "+" if change.delta >= 0 else "-"
    text = sign + fmt_number(change.metric, abs(change.delta))
    if change.delta_pct is not None:
        text += f" ({change.delta_pct:+.1f}%)"
    return text


def format_table(report: DiffReport, *, show_unchanged: bool = False) -> str:
    """The terminal listing: per case, changed metrics with old, new, delta and kind.

    Cases with regressions come first; within a case, regressions first. Unchanged
    metrics are counted, not listed (unless ``show_unchanged``).
    """
    counts = report.counts()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    lines = [f"stedge diff {report.base} -> {report.head}: {summary or 'nothing to compare'}"]
    groups: dict[tuple[str, str], list[MetricChange]] = {}
    for change in report.changes:
        groups.setdefault((change.case_name, change.stage), []).append(change)

    def worst(key: tuple[str, str]) -> tuple[int, str, str]:
        return (min(KIND_RANK[c.kind] for c in groups[key]), *key)

    header = ("metric", "old", "new", "delta", "kind", "band")
    for key in sorted(groups, key=worst):
        changes = sorted(groups[key], key=lambda c: (KIND_RANK[c.kind], c.metric))
        shown = [c for c in changes if show_unchanged or c.kind is not ChangeKind.UNCHANGED]
        quiet = len(changes) - len(shown)
        if not shown:
            continue
        lines.append("")
        lines.append(visible(f"{key[0]} [{key[1]}]") + (f"  ({quiet} unchanged)" if quiet else ""))
        rows = [header] + [
            (
                c.metric,
                fmt_number(c.metric, c.old),
                fmt_number(c.metric, c.new),
                fmt_delta(c),
                c.kind.value.upper() if c.kind is ChangeKind.REGRESSED else c.kind.value,
                c.band + (f"  {visible(c.note)}" if c.note else ""),
            )
            for c in shown
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:
            lines.append(
                "  "
                + "  ".join(
                    cell.rjust(w) if 0 < i < 4 else cell.ljust(w)
                    for i, (cell, w) in enumerate(zip(row, widths))
                ).rstrip()
            )
    quiet_cases = sum(1 for v in groups.values() if all(c.kind is ChangeKind.UNCHANGED for c in v))
    if quiet_cases and not show_unchanged:
        lines.append("")
        lines.append(f"{quiet_cases} case stage(s) unchanged")
    for label, pairs in (
        (f"only in {report.base}", report.only_base),
        (f"only in {report.head}", report.only_head),
    ):
        if pairs:
            lines.append("")
            lines.append(visible(f"{label}: " + ", ".join(f"{c} [{s}]" for c, s in pairs)))
    return "\n".join(lines)

"""``--stedge-update``: write measured values back into a case.toml, keeping its layout.

A missed ``[expect]`` bound moves to the measured value where the item's bound is
defined (``[expect]``, ``[expect.<stage>]``, ``[variants.<v>.expect]`` or
``[variants.<v>.expect.<stage>]``, following the merge rules of
:mod:`pytest_stedge.case.load`); a regression beyond its band widens the
``[baseline]`` band just enough to cover the change. An item of a variant writes into
that variant's own tables only: a bound or band the case shares with every variant is
copied into the variant and moved there (a stage table whole, as the variant's stage
table replaces the case's), so the other variants keep theirs. tomlkit keeps comments,
key order and number style; nothing is ever deleted.

In a session, :class:`UpdateTracker` applies the controller's updates and makes the
exit status 0 when every failing item was a miss that got written.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import InlineTable, Item

from ..case.model import ALL_STAGES
from ..errors import CaseError, StedgeError
from ..result import METRICS
from .bands import beyond_band, parse_band

_COUNT_UNITS = ("epochs", "nodes", "MACC")


def update_case(
    path: Path,
    *,
    variant: str | None,
    stage: str,
    misses: Mapping[str, float | None],
    baseline_deltas: Mapping[str, tuple[float, float]],
) -> list[str]:
    """Update one case file for one item; return what changed, one line per edit.

    :param variant: the item's variant (None for a case without variants).
    :param misses: measured value by metric whose expectation missed (None: not measured,
        left alone).
    :param baseline_deltas: ``(old, new)`` by metric that regressed beyond its band.
    :raises CaseError: when the file cannot be read or written.
    """
    written, left = _update(path, variant, stage, misses, baseline_deltas)
    return written + left


def _update(
    path: Path,
    variant: str | None,
    stage: str,
    misses: Mapping[str, float | None],
    baseline_deltas: Mapping[str, tuple[float, float]],
) -> tuple[list[str], list[str]]:
    """(what was written, what was left alone), one line each."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise CaseError(path, None, f"cannot update: {exc}") from None
    written: list[str] = []
    left: list[str] = []
    for metric, measured in sorted(misses.items()):
        done, line = _move_bound(doc, variant, stage, metric, measured)
        (written if done else left).append(line)
    for metric, (old, new) in sorted(baseline_deltas.items()):
        done, line = _widen_band(doc, variant, metric, old, new)
        if line:
            (written if done else left).append(line)
    new_text = tomlkit.dumps(doc)
    if new_text != text:
        try:
            path.write_text(new_text, encoding="utf-8")
        except OSError as exc:
            raise CaseError(path, None, f"cannot write the update: {exc}") from None
    return written, left


# -- expectations ----------------------------------------------------------------------------


def _table(container: Any, key: str) -> Any | None:
    value = container.get(key) if container is not None and hasattr(container, "get") else None
    return value if isinstance(value, dict) else None


def _variant_table(doc: Any, variant: str | None) -> Any | None:
    if not variant:
        return None
    return _table(_table(doc, "variants"), variant)


def locate_bound(doc: Any, variant: str | None, stage: str, metric: str) -> tuple[Any, str] | None:
    """The table that defines ``metric``'s bound for (variant, stage), and its TOML name.

    Mirrors the loader: a variant's ``expect.<stage>`` table replaces the case's, a
    stage table overrides generic bounds, a variant's generic bound overrides the case's.
    """
    var_expect = _table(_variant_table(doc, variant), "expect")
    top_expect = _table(doc, "expect")
    var_prefix = f"variants.{variant}.expect"
    stage_table, stage_name = None, ""
    if var_expect is not None and _table(var_expect, stage) is not None:
        stage_table, stage_name = var_expect[stage], f"{var_prefix}.{stage}"
    elif top_expect is not None and _table(top_expect, stage) is not None:
        stage_table, stage_name = top_expect[stage], f"expect.{stage}"
    if stage_table is not None and metric in stage_table:
        return stage_table, stage_name
    for table, name in ((var_expect, var_prefix), (top_expect, "expect")):
        if table is not None and metric in table and metric not in ALL_STAGES:
            return table, name
    return None


def _move_bound(
    doc: Any, variant: str | None, stage: str, metric: str, measured: float | None
) -> tuple[bool, str]:
    """(written, the line saying what happened) for one missed bound."""
    if measured is None or (isinstance(measured, float) and not math.isfinite(measured)):
        return False, f"{metric} on {stage} not measured; its expectation is left alone"
    found = locate_bound(doc, variant, stage, metric)
    if found is None:
        return False, f"no [expect] bound of {metric} for {stage}; nothing to move"
    table, name = found
    note = ""
    if variant and not name.startswith("variants."):
        own = _variant_expect(doc, variant, stage if name != "expect" else None, table)
        if own is None:
            return False, (f"[{name}] {metric} is shared by every variant and variant "
                           f"{variant!r} has no table to hold its own; left alone")
        if metric not in own[0]:
            own[0][metric] = copy.deepcopy(table[metric])
        note = f" (copied from [{name}], which the other variants keep)"
        table, name = own
    bound = table[metric]
    if not isinstance(bound, dict):  # a bare number is an exact expectation
        old = float(bound)
        table[metric] = _number_like(bound, measured)
        return True, f"[{name}] {metric} = {_fmt(old)} -> {_fmt(measured)}{note}"
    if "exact" in bound:
        old = float(bound["exact"])
        bound["exact"] = _number_like(bound["exact"], measured)
        return True, f"[{name}] {metric} exact {_fmt(old)} -> {_fmt(measured)}{note}"
    rel = float(bound.get("rel", 0.0))
    absolute = float(bound.get("abs", 0.0))
    moved = []
    for side in ("max", "min"):
        if side not in bound:
            continue
        limit = float(bound[side])
        slack = absolute + rel * abs(limit)
        violated = measured > limit + slack if side == "max" else measured < limit - slack
        if violated:
            bound[side] = _number_like(bound[side], measured)
            moved.append(f"{side} {_fmt(limit)} -> {_fmt(measured)}")
    if not moved:
        return True, f"[{name}] {metric}: {_fmt(measured)} meets its bound; left alone"
    return True, f"[{name}] {metric} {', '.join(moved)}{note}"


def _variant_expect(
    doc: Any, variant: str, stage: str | None, shared: Any
) -> tuple[Any, str] | None:
    """The variant's own ``expect`` table (``stage`` None) or ``expect.<stage>`` table,
    made when absent; a new stage table starts as a copy of ``shared``, the case's, which
    it replaces whole for this variant."""
    holder = _variant_table(doc, variant)
    if holder is None:
        return None
    expect = _sub_table(holder, "expect")
    if stage is None:
        return expect, f"variants.{variant}.expect"
    if _table(expect, stage) is None:
        table = _new_table_like(expect)
        for key, value in shared.items():
            table[key] = copy.deepcopy(value)
        expect[stage] = table
    return expect[stage], f"variants.{variant}.expect.{stage}"


def _sub_table(holder: Any, key: str) -> Any:
    """``holder[key]`` as a table, made when absent (inline inside an inline table)."""
    if _table(holder, key) is None:
        holder[key] = _new_table_like(holder)
    return holder[key]


def _new_table_like(holder: Any) -> Any:
    return tomlkit.inline_table() if isinstance(holder, InlineTable) else tomlkit.table()


def _number_like(old: Any, value: float) -> Item:
    """``value`` as a TOML number in the style of ``old`` (integer, underscores)."""
    is_int = isinstance(old, int) and not isinstance(old, bool)
    if is_int and float(value).is_integer():
        whole = int(value)
        raw = old.as_string() if isinstance(old, Item) else str(old)
        if "_" in raw:
            return tomlkit.integer(f"{whole:,}".replace(",", "_"))
        return tomlkit.integer(whole)
    if float(value).is_integer() and abs(value) < 1e15 and not isinstance(old, float):
        return tomlkit.integer(int(value))
    return tomlkit.float_(repr(float(value)))


def _fmt(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


# -- baseline bands ----------------------------------------------------------------------------


def widened_band(metric: str, old: float, new: float, current: str | None) -> str:
    """The narrowest band in ``current``'s style that covers the change ``old`` -> ``new``.

    Relative bands grow in 0.1% steps, absolute ones to the next whole unit for counts
    and bytes. Without a band (or with "0"), counts and changes from zero get an
    absolute band, everything else a relative one.
    """
    band = parse_band(current) if current is not None else None
    unit = METRICS[metric].unit if metric in METRICS else ""
    if band is not None and band.value > 0:
        relative = band.relative
    else:
        relative = unit not in _COUNT_UNITS and old != 0
    change = abs(new - old)
    if relative and old != 0:
        pct = math.ceil(change / abs(old) * 1000 - 1e-9) / 10
        if band is not None and band.relative:
            pct = max(pct, band.value)
        text = f"+{pct:.1f}".removesuffix(".0") + "%"
        while beyond_band(old, new, parse_band(text)):  # guard float rounding
            pct += 0.1
            text = f"+{pct:.1f}".removesuffix(".0") + "%"
        return text
    integral = float(old).is_integer() and float(new).is_integer()
    amount = math.ceil(change) if integral or unit in ("B", *_COUNT_UNITS) else change
    if band is not None and not band.relative:
        amount = max(amount, band.value)
    return f"+{_plain(amount)}"


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _widen_band(
    doc: Any, variant: str | None, metric: str, old: float, new: float
) -> tuple[bool, str]:
    """(written, the line saying what happened; empty when the band already covers it)."""
    variant_table = _variant_table(doc, variant)
    var_base = _table(variant_table, "baseline")
    top_base = _table(doc, "baseline")
    if var_base is not None and metric in var_base:
        table, name = var_base, f"variants.{variant}.baseline"
    elif top_base is not None and metric in top_base:
        table, name = top_base, "baseline"
    else:
        table, name = None, ""
    current = None if table is None else str(table[metric])
    try:
        text = widened_band(metric, old, new, current)
    except StedgeError as exc:
        return False, f"[{name}] {metric}: {exc}; left alone"
    if text == current:
        return True, ""
    change = f"({_fmt(old)} -> {_fmt(new)})"
    if table is not None and not (variant and name == "baseline"):
        table[metric] = text
        return True, f"[{name}] {metric} band {current!r} -> {text!r} {change}"
    if variant:  # the variant's own band; the case's stays for the other variants
        if variant_table is None:
            return False, (f"[baseline] {metric}: variant {variant!r} has no table to hold "
                           "its own band; left alone")
        _sub_table(variant_table, "baseline")[metric] = text
        name = f"variants.{variant}.baseline"
        was = f", over the case's {current!r}, which the other variants keep" if current else ""
        return True, f"[{name}] {metric} = {text!r} added {change}{was}"
    _sub_table(doc, "baseline")[metric] = text
    return True, f"[baseline] {metric} = {text!r} added {change}"


# -- in a session --------------------------------------------------------------------------


class UpdateTracker:
    """``--stedge-update`` on the controller: writes each failing item's update (the
    session hands it over as the reports arrive) and, when every failure of the session
    was a miss whose new bounds were all written, turns the exit status to 0."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.updated: set[str] = set()
        self.failed: set[str] = set()
        self.collection_errors = 0

    def apply(self, nodeid: str, spec: Mapping[str, Any]) -> list[str]:
        """Write one item's update; return what it says, one line per edit, path first."""
        path = Path(spec["path"])
        try:
            written, left = _update(
                path,
                spec["variant"],
                spec["stage"],
                spec["misses"],
                {k: (float(v[0]), float(v[1])) for k, v in spec["baseline_deltas"].items()},
            )
        except StedgeError as exc:
            written, left = [], [f"not updated: {exc}"]
        if written and not left:
            self.updated.add(nodeid)
        lines = [f"{path}: {line}" for line in written + left]
        self.lines += lines
        return lines

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.add(report.nodeid)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collection_errors += 1

    @property
    def everything_written(self) -> bool:
        """Every failing item was updated in full, and nothing else went wrong."""
        return bool(self.failed) and not self.collection_errors and self.failed <= self.updated

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        import pytest

        if exitstatus == pytest.ExitCode.TESTS_FAILED and self.everything_written:
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.everything_written:
            terminalreporter.write_line(
                f"--stedge-update wrote the new expectations of all {len(self.failed)} "
                "failing item(s): exit status 0; run again without --stedge-update to check"
            )


TRACKER_NAME = "stedge-update"


def session_tracker(config: Any) -> UpdateTracker:
    """The session's :class:`UpdateTracker` (registered at configure time by the plugin,
    so it sees every report)."""
    tracker = config.pluginmanager.get_plugin(TRACKER_NAME)
    if tracker is None:
        tracker = UpdateTracker()
        config.pluginmanager.register(tracker, TRACKER_NAME)
    assert isinstance(tracker, UpdateTracker)
    return tracker

"""``--stedge-update``: write measured values back into a case.toml, keeping its layout.

A missed ``[expect]`` bound moves to the measured value where the bound is
defined (``[expect]``, ``[expect.<stage>]``, ``[variants.<v>.expect]`` or
``[variants.<v>.expect.<stage>]``, following the merge rules of
:mod:`pytest_stedge.corpus`); a regression beyond its band widens the
``[baseline]`` band just enough to cover the change. tomlkit keeps comments,
key order and number style; nothing is ever deleted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Item

from .corpus import ALL_STAGES
from .diff import beyond_band, parse_band
from .errors import CaseError, StedgeError
from .result import METRICS

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
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise CaseError(path, None, f"cannot update: {exc}") from None
    lines: list[str] = []
    for metric, measured in sorted(misses.items()):
        lines += _move_bound(doc, path, variant, stage, metric, measured)
    for metric, (old, new) in sorted(baseline_deltas.items()):
        lines += _widen_band(doc, path, variant, metric, old, new)
    new_text = tomlkit.dumps(doc)
    if new_text != text:
        try:
            path.write_text(new_text, encoding="utf-8")
        except OSError as exc:
            raise CaseError(path, None, f"cannot write the update: {exc}") from None
    return lines


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
    doc: Any, path: Path, variant: str | None, stage: str, metric: str, measured: float | None
) -> list[str]:
    if measured is None or (isinstance(measured, float) and not math.isfinite(measured)):
        return [f"{path}: {metric} on {stage} not measured; its expectation is left alone"]
    found = locate_bound(doc, variant, stage, metric)
    if found is None:
        return [f"{path}: no [expect] bound of {metric} for {stage}; nothing to move"]
    table, name = found
    shared = " (shared by every variant)" if variant and not name.startswith("variants.") else ""
    bound = table[metric]
    if not isinstance(bound, dict):  # a bare number is an exact expectation
        old = float(bound)
        table[metric] = _number_like(bound, measured)
        return [f"{path}: [{name}] {metric} = {_fmt(old)} -> {_fmt(measured)}{shared}"]
    if "exact" in bound:
        old = float(bound["exact"])
        bound["exact"] = _number_like(bound["exact"], measured)
        return [f"{path}: [{name}] {metric} exact {_fmt(old)} -> {_fmt(measured)}{shared}"]
    rel = float(bound.get("rel", 0.0))
    absolute = float(bound.get("abs", 0.0))
    out = []
    for side in ("max", "min"):
        if side not in bound:
            continue
        limit = float(bound[side])
        slack = absolute + rel * abs(limit)
        violated = measured > limit + slack if side == "max" else measured < limit - slack
        if violated:
            bound[side] = _number_like(bound[side], measured)
            out.append(
                f"{path}: [{name}] {metric} {side} {_fmt(limit)} -> {_fmt(measured)}{shared}"
            )
    if not out:
        out.append(f"{path}: [{name}] {metric}: {_fmt(measured)} meets its bound; left alone")
    return out


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
    doc: Any, path: Path, variant: str | None, metric: str, old: float, new: float
) -> list[str]:
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
        return [f"{path}: [{name}] {metric}: {exc}; left alone"]
    if table is None:
        if variant and variant_table is not None:
            if var_base is None:
                variant_table["baseline"] = tomlkit.table()
                var_base = variant_table["baseline"]
            table, name = var_base, f"variants.{variant}.baseline"
        else:
            if top_base is None:
                doc["baseline"] = tomlkit.table()
                top_base = doc["baseline"]
            table, name = top_base, "baseline"
        table[metric] = text
        return [f"{path}: [{name}] {metric} = {text!r} added ({_fmt(old)} -> {_fmt(new)})"]
    if text == current:
        return []
    table[metric] = text
    shared = " (shared by every variant)" if variant and name == "baseline" else ""
    line = f"{path}: [{name}] {metric} band {current!r} -> {text!r} ({_fmt(old)} -> {_fmt(new)})"
    return [line + shared]

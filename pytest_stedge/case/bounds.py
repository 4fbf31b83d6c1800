"""The ``[expect]`` and ``[baseline]`` tables of a case file, checked into bounds and bands."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import CaseError
from ..result import METRICS
from .model import ALL_STAGES, EXPECT_BOUNDS, Bound
from .suggest import did_you_mean

_BOUND_NAMES = frozenset(EXPECT_BOUNDS)
_LIMIT_NAMES = frozenset(("min", "max", "exact"))
EXPECT_HELP = "a table of metric = {min, max, exact, rel, abs}"
BASELINE_HELP = "a table of metric = band ('+3%', '+1024', '0')"


def parse_expectations(path: Path, raw: Any, prefix: str) -> dict[str, tuple[Bound, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CaseError(path, prefix + "expect", f"expected {EXPECT_HELP}")
    result: dict[str, list[Bound]] = {"": []}
    for key, value in raw.items():
        if key in ALL_STAGES:
            if not isinstance(value, dict):
                raise CaseError(path, f"{prefix}expect.{key}", "expected a table of metrics")
            result[key] = [
                parse_bound(path, f"{prefix}expect.{key}.{m}", m, v) for m, v in value.items()
            ]
        else:
            result[""].append(parse_bound(path, f"{prefix}expect.{key}", key, value))
    return {k: tuple(v) for k, v in result.items() if v}


def parse_bound(path: Path, key: str, metric: str, raw: Any) -> Bound:
    if metric not in METRICS:
        raise CaseError(
            path, key, f"unknown metric {metric!r}{did_you_mean(metric, METRICS)}; "
            f"accepted: {', '.join(sorted(METRICS))}"
        )
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise CaseError(path, key, f"expected a finite number, got {raw!r}")
        return Bound(metric, exact=float(raw))
    if not isinstance(raw, dict) or not raw:
        raise CaseError(path, key, "expected a number or a table with min, max, exact, rel, abs")
    unknown = raw.keys() - _BOUND_NAMES
    if unknown:
        raise CaseError(
            path, f"{key}.{min(unknown)}", f"unknown bound; accepted: {', '.join(EXPECT_BOUNDS)}"
        )
    values: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CaseError(path, f"{key}.{name}", f"expected a number, got {value!r}")
        if not math.isfinite(value):  # nan compares false: `max = nan` would pass anything
            raise CaseError(path, f"{key}.{name}", f"expected a finite number, got {value!r}")
        if value < 0 and name in ("rel", "abs"):
            raise CaseError(path, f"{key}.{name}",
                            f"expected a tolerance >= 0 (a fraction for rel), got {value!r}")
        values[name] = float(value)
    limits = values.keys() & _LIMIT_NAMES
    if not limits:
        raise CaseError(path, key, "needs at least one of min, max, exact")
    if "exact" in limits and len(limits) > 1:
        raise CaseError(path, key, "exact cannot be combined with min or max")
    if values.get("min", -math.inf) > values.get("max", math.inf):
        raise CaseError(path, key, f"min {values['min']:g} is above max {values['max']:g}")
    return Bound(metric, **values)


def parse_baseline_bands(path: Path, raw: Any, prefix: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CaseError(path, prefix + "baseline", f"expected {BASELINE_HELP}")
    out: dict[str, str] = {}
    for metric, band in raw.items():
        key = f"{prefix}baseline.{metric}"
        if metric not in METRICS:
            raise CaseError(
                path, key, f"unknown metric {metric!r}{did_you_mean(metric, METRICS)}; "
                f"accepted: {', '.join(sorted(METRICS))}"
            )
        if isinstance(band, (int, float)) and not isinstance(band, bool):
            band = str(band)
        if not isinstance(band, str):
            raise CaseError(path, key, f"expected a band such as '+3%', '+1024' or '0', got {band!r}")
        out[metric] = band
    return out

"""Bands: how far a metric may move between two versions before it is a change.

Bands follow pytest-benchmark's compare-fail syntax without the field name:
``"+3%"`` (relative), ``"+1024"`` (absolute, in the metric's unit), ``"0"``
(exact: any worsening counts). A metric's band is, first found: the case's
``[baseline]`` entry, the user's per-metric default (ini ``stedge_metric_bands``),
:data:`NOISY_BANDS` for the validation metrics, else the session's default band.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import CaseError, StedgeError
from ..result import METRICS

if TYPE_CHECKING:
    from ..case.model import Case

BAND_HELP = "a band such as '+3%' (relative), '+1024' (absolute) or '0' (exact)"
_BAND_RE = re.compile(r"^\s*[+±]?\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*(%?)\s*$")
# Float noise (e.g. a cos printed with more digits by another version) is not a change.
EPSILON = 1e-12

# Default bands of the metrics that move a little between versions on the tool's fixed
# stimulus (seed 42): real MobileNetV2-224 int8 on the N6, 2.2.0 -> 4.0.1 (real-cases
# n6-mobilenetv2-224-onnx-irv) moved cos 0.997552 -> 0.997453 (-0.0001), nse 0.994966 ->
# 0.994808 (-0.00016), rmse +1.5 %, l2r +1.7 %, mae -0.2 %. Each band is ~10x that move, so
# an accuracy collapse (cos 0.091 on a 4.0.1 TCN) stands out and rounding does not.
# Byte, MACC and epoch counts have none: any change counts.
NOISY_BANDS: dict[str, str] = {
    "val_cos": "+0.001",  # cosine is in (0, 1]: an absolute band
    "val_nse": "+0.002",  # <= 1, scale-free
    "val_snr": "+1",  # dB; 1 dB is a 12 % move of the error's RMS
    "val_l2r": "+15%",
    "val_rmse": "+15%",  # in the output's unit: relative
    "val_mae": "+15%",
    "val_acc": "+10",  # percentage points: one sample of the tool's default 10
    "duration_ms": "+5%",  # one board repeats within 0.1 %; printed to 1 us
}


class BandError(StedgeError):
    """A baseline band string is malformed."""


@dataclass(frozen=True)
class Band:
    """How far a metric may move from its baseline before the change counts.

    :param value: the allowed magnitude, percent when ``relative``.
    :param relative: a percentage of the baseline value, else an absolute amount.
    """

    value: float
    relative: bool
    text: str = ""

    def allowed(self, old: float) -> float:
        """The absolute amount a change from ``old`` may reach without counting."""
        if self.relative:
            return abs(old) * self.value / 100.0
        return self.value

    def __str__(self) -> str:
        return self.text or (f"+{self.value:g}%" if self.relative else f"+{self.value:g}")


def parse_band(text: str | float) -> Band:
    """Parse ``"+3%"``, ``"5%"``, ``"+1024"`` or ``"0"`` into a :class:`Band`.

    :raises BandError: naming the value and what is accepted.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise BandError(f"band {text!r}: expected {BAND_HELP}")
    match = _BAND_RE.match(text)
    if not match:
        hint = (
            " (a band is a magnitude: both directions are checked)"
            if text.strip().startswith("-")
            else ""
        )
        raise BandError(f"band {text!r}: expected {BAND_HELP}{hint}")
    number = text.strip().lstrip("+±").strip().rstrip("%").strip()
    value = float(number)
    if not math.isfinite(value):
        raise BandError(f"band {text!r}: expected {BAND_HELP}")
    return Band(value=value, relative=bool(match.group(2)), text=text.strip())


def check_case_bands(case: Case) -> None:
    """Refuse a case whose ``[baseline]`` bands do not parse, naming the file and key
    (at collection: a band the gate cannot read would fail every item after its run).

    :raises CaseError: for the first malformed band.
    """
    prefix = f"variants.{case.variant}." if case.variant else ""
    for metric, text in case.baseline.items():
        try:
            parse_band(text)
        except BandError as exc:
            raise CaseError(case.path, f"{prefix}baseline.{metric}", str(exc)) from None


def beyond_band(old: float, new: float, band: Band) -> bool:
    """Whether ``new`` moved from ``old`` by more than ``band`` allows (either direction)."""
    if not (math.isfinite(old) and math.isfinite(new)):
        # snr=inf (identical outputs) to a finite figure is a move whatever the band
        return old != new
    allowed = band.allowed(old)
    return abs(new - old) > allowed + EPSILON * max(1.0, abs(old))


def band_for(
    metric: str,
    bands: Mapping[str, str],
    default_band: str,
    metric_bands: Mapping[str, str] | None = None,
) -> str:
    """The band text of ``metric``: the case's, else the per-metric default (``metric_bands``,
    :data:`NOISY_BANDS` when None), else ``default_band``."""
    if metric in bands:
        return bands[metric]
    defaults = NOISY_BANDS if metric_bands is None else metric_bands
    return defaults.get(metric, default_band)


def parse_metric_bands(lines: Iterable[str]) -> dict[str, str]:
    """``["val_cos=+0.005", ...]`` (ini ``stedge_metric_bands``) over :data:`NOISY_BANDS`.

    :raises BandError: naming the entry and what is accepted.
    """
    out = dict(NOISY_BANDS)
    for raw in lines:
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        metric, sep, band = entry.partition("=")
        metric, band = metric.strip(), band.strip()
        if not sep or metric not in METRICS:
            raise BandError(
                f"metric band {entry!r}: expected METRIC=BAND with METRIC one of "
                f"{', '.join(sorted(METRICS))}"
            )
        parse_band(band)
        out[metric] = band
    return out


@dataclass(frozen=True)
class BandSettings:
    """The bands a store is read with: per-metric defaults and the default band (what
    ``stedge diff --band`` and the ini keys give)."""

    default_band: str = "0"
    metric_bands: Mapping[str, str] | None = None  # None: the noisy metrics' built-in bands

    def band(self, metric: str, case_bands: Mapping[str, str]) -> str:
        """The band text of ``metric`` for a case with these ``[baseline]`` bands."""
        return band_for(metric, case_bands, self.default_band, self.metric_bands)

"""The baseline version's figures a session gates each item against."""

from __future__ import annotations

from typing import Any

from .gate import Baseline


class Baselines:
    """The baseline version's figures per (case, stage): stored ones, and those of this
    session's own baseline items (a later version in this process compares with them)."""

    def __init__(
        self,
        version: str | None,
        *,
        strict: bool,
        default_band: str,
        metric_band_lines: list[str] | None = None,
    ) -> None:
        self.version = version
        self.strict = strict
        self.default_band = default_band
        self.metric_band_lines = list(metric_band_lines or [])
        self.stored: dict[tuple[str, str], Baseline] = {}
        self._session: dict[tuple[str, str, str], Baseline] = {}

    @property
    def metric_bands(self) -> dict[str, str]:
        """Per-metric default bands: ini ``stedge_metric_bands`` over the noisy metrics' own.

        :raises BandError: for a malformed entry (the session checks them at start).
        """
        from .bands import parse_metric_bands

        return parse_metric_bands(self.metric_band_lines)

    def in_session(self, versions: list[str]) -> bool:
        """Whether the baseline version runs in this session too."""
        return bool(self.version) and self.version in versions

    def for_item(self, case_name: str, stage: str, version: str | None) -> Baseline | None:
        """The baseline's figures for this case and stage: from this session, else the store."""
        if not self.version or version is None or version == self.version:
            return None
        return self._session.get((case_name, stage, self.version)) or self.stored.get(
            (case_name, stage)
        )

    def remember(self, case_name: str, stage: str, version: str, row: Any) -> None:
        """Keep an item's figures for the versions after it."""
        from ..parsers.epoch_kinds import op_counts

        self._session[(case_name, stage, version)] = Baseline(
            version=version,
            metrics=dict(row.metrics),
            model_sha256=row.model_sha256,
            options_hash=row.options_hash,
            options=(row.result or {}).get("options"),
            placement=op_counts((row.result or {}).get("epochs")),
        )

    def to_data(self) -> dict[str, Any]:
        return {f"{c}\x00{s}": b.to_dict() for (c, s), b in self.stored.items()}

    def from_data(self, data: dict[str, Any]) -> None:
        self.stored = {}
        for key, value in data.items():
            case_name, stage = key.split("\x00", 1)
            self.stored[(case_name, stage)] = Baseline(**value)

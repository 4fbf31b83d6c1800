"""The row one finished item hands to the controller (kept free of duckdb: workers build it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ItemRow:
    """One finished pytest item, as the controller stores it."""

    nodeid: str
    case_name: str
    stage: str
    version: str | None
    outcome: str
    model_sha256: str | None = None
    options_hash: str | None = None
    recorded: bool = False
    duration_s: float | None = None
    tool_seconds: float | None = None
    message: str | None = None
    result: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    case: dict[str, Any] | None = None  # the cases row (case_path, model_path, target, ...)
    findings: list[dict[str, Any]] = field(default_factory=list)  # {bug_id, status, evidence}
    changes: list[dict[str, Any]] = field(default_factory=list)  # against the baseline (not stored)
    baseline_version: str | None = None  # the version those changes are against (not stored)
    placement_moves: dict[str, Any] | None = None  # operators moved against it (not stored)
    update: dict[str, Any] | None = None  # what --stedge-update should write (not stored)
    expect_keys: list[str] = field(default_factory=list)  # the case's bounds (not stored)
    checked: list[str] = field(default_factory=list)  # bounds this item's stage checks (not stored)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, the shape workers hand over to the controller."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ItemRow:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def run_label(run_id: int, run_uuid: str | None) -> str:
    """``run-<id>-<uuid8>``: names a run's work folder and report page, unique across
    stores (another store's run 3 is another label)."""
    return f"run-{run_id}" + (f"-{run_uuid[:8]}" if run_uuid else "")

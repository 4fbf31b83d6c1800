"""What a bug report holds: each version's run and the report written from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case.model import Case


@dataclass
class VersionRun:
    """One version's run of the stage (or its stored figures)."""

    version: str
    source: str  # how the figures were obtained
    figures: dict[str, float] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    error: str | None = None
    commands: list[list[str]] = field(default_factory=list)
    tool: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    outputs: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the run met every expectation of the stage."""
        return self.error is None and not self.misses and bool(self.figures)

    def to_json(self) -> dict[str, Any]:
        """For figures.json."""
        return {"version": self.version, "source": self.source, "passed": self.passed,
                "figures": self.figures, "misses": self.misses, "error": self.error,
                "tool": self.tool, "device": self.device, "outputs": self.outputs}


@dataclass
class Report:
    """What was written."""

    folder: Path
    zip: Path
    case: Case
    stage: str
    failing: VersionRun
    passing: VersionRun | None
    bisect: dict[str, Any] | None
    divergence: dict[str, Any] | None
    dropped: list[str]

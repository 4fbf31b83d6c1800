"""Which of the figures a text report states twice goes into the Result.

A report can state weights and activations in up to five places; exact figures always win
over rounded ones:

1. the ``Exec/report summary`` of the generate/analyze run (``497 B``: exact);
2. the MCU ``model/c-model:`` totals line (exact);
3. on Neural-ART reports, the ``weights`` / ``activations`` rows of ``Requested memory
   size by section`` (exact; on MCU reports these rows carry 4 bytes of alignment more
   than the summary, so they are used on N6 only);
4. the ``Memory usage information`` pools added up (each rounded to 3 decimals of kB/MB);
5. its ``Total:`` line (rounded, ``3.936 MB`` is ±524 B).

A figure only known rounded goes into the Result with ``memory.precision[key]``: the
number of bytes it may be off (half its last digit, rounded up).

The summary of a ``validate`` run describes the validation front end when the target is
the NPU (TFLite-side tensor names, another MACC, ``activations (rw)`` of the host-side
graph): it never gives these figures. On MCU targets a validate-only report's summary is
the deployed model and is used when nothing else states them.

User I/O: ``activations_bytes`` is the activation memory the tool allocates. 2.0.0 N6
reports print the I/O buffers apart (the ``io`` row of the section table, c_info
``memory_footprint.io``), while the memory-usage totals may count user I/O pools; the
section table, c_info and report.json agree and exclude them, so the Result holds the
figure without user I/O (in ``io_bytes`` where stated) and versions compare like for like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

_MEMORY_KEYS = ("weights_bytes", "activations_bytes")
_SECTION_ROWS = {"weights_bytes": ("weights", "rodata"), "activations_bytes": ("activations", "bss")}


@dataclass
class Summary:
    """The figures of one ``Exec/report summary (<command>)`` block."""

    command: str  # "" for rows before any header (a capture that starts mid-summary)
    target: str | None = None
    npu: bool = False
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def describes_deployment(self) -> bool:
        """Whether its weights/activations/MACC are the deployed model's."""
        return self.command != "validate" or not self.npu


@dataclass
class Figures:
    """Every place a text report stated a figure, collected while the lines are read."""

    summaries: list[Summary] = field(default_factory=lambda: [Summary("")])
    totals: dict[str, int] = field(default_factory=dict)
    sections: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None

    def _stated(self) -> list[dict[str, Any]]:
        runs = [s for s in self.summaries if s.command != "validate"]
        validates = [s for s in self.summaries if s.command == "validate" and s.describes_deployment]
        out = [s.values for s in runs]
        out.append(self.totals)
        if self.usage is not None and self.sections:
            out.append(self._section_figures())
        out += [s.values for s in validates]
        return out

    def _section_figures(self) -> dict[str, int]:
        assert self.sections is not None
        modules = self.sections["modules"]
        figures: dict[str, int] = {}
        for key, (row, column) in _SECTION_ROWS.items():
            value = modules.get(row, {}).get(column)
            if isinstance(value, int):
                figures[key] = value
        return figures

    def choose(self) -> tuple[dict[str, Any], int | None]:
        """The Result's ``memory`` and ``macc`` from the most exact source of each figure."""
        stated = self._stated()
        memory: dict[str, Any] = {}
        precision: dict[str, int] = {}
        for key in _MEMORY_KEYS:
            exact = next((s[key] for s in stated if s.get(key) is not None), None)
            if exact is not None:
                memory[key] = exact
                continue
            rounded = self._rounded(key)
            if rounded is not None:
                memory[key] = rounded[0]
                if rounded[1] > 0:
                    precision[key] = math.ceil(rounded[1])
        io = next((s["io_bytes"] for s in stated if s.get("io_bytes")), None)
        if io is not None and all(isinstance(v, int) for v in io):
            memory["io_bytes"] = io
        if self.usage and self.usage.get("pools"):
            memory["pools"] = self.usage["pools"]
        if self.sections and self.sections["modules"]:
            memory["sections"] = self.sections
        if precision:
            memory["precision"] = precision
        macc = next((s["macc"] for s in stated if s.get("macc")), None)
        return memory, macc

    def _rounded(self, key: str) -> tuple[int, float] | None:
        """The closer of the pools' sum and the ``Total:`` line (bytes, error in bytes)."""
        if not self.usage:
            return None
        candidates: list[tuple[int, float]] = [
            c
            for c in (self.usage.get("pool_sums", {}).get(key), self.usage["total"].get(key))
            if c is not None
        ]
        if not candidates:
            return None
        return min(candidates, key=lambda c: c[1])

"""The runs a command takes from a file or folder, and the corpus stage each stands for.

A console log or an output folder may hold several runs (a generate and a validate, two
validates): ``stedge parse`` and ``stedge ingest`` pick among them the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stedge.errors import StedgeError, describe_run


def stage_of(result: dict[str, Any]) -> str:
    """The corpus stage a parsed Result stands for."""
    command = result.get("command") or "generate"
    if command == "validate":
        mode = (result.get("validation") or {}).get("mode")
        return "validate-target" if mode == "target" else "validate-host"
    return str(command)


def pick_runs(path: Path, runs: list[dict[str, Any]], number: int | None) -> list[dict[str, Any]]:
    """``runs``, or run ``number`` (1-based) of them.

    :raises StedgeError: a number the file or folder has no run for, naming the runs it has.
    """
    if number is None:
        return runs
    if not 1 <= number <= len(runs):
        listed = "; ".join(f"{i}: {describe_run(r)}" for i, r in enumerate(runs, 1))
        raise StedgeError(f"{path}: --run {number}, but it holds {len(runs)} run(s): {listed}")
    return [runs[number - 1]]

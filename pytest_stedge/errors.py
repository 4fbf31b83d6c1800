"""One exception hierarchy for pytest-stedge, caught at the edges (CLI, pytest hooks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class StedgeError(Exception):
    """Base class of every error pytest-stedge raises on purpose."""


class CaseError(StedgeError):
    """A corpus case file is malformed: names the file, the key and what is accepted."""

    def __init__(self, path: Path | str, key: str | None, message: str) -> None:
        self.path = Path(path)
        self.key = key
        self.message = message
        where = f"{self.path}" + (f": [{key}]" if key else "")
        super().__init__(f"{where}: {message}")


class ToolchainNotFound(StedgeError):
    """A requested stedgeai version is not installed where we looked."""


class ToolchainError(StedgeError):
    """Running stedgeai failed: non-zero exit, timeout, crash or unreadable output."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        returncode: int | None = None,
        timed_out: float | None = None,
        output_tail: str = "",
        reason: str | None = None,
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.timed_out = timed_out
        self.output_tail = output_tail
        self.reason = reason
        super().__init__(self._describe())

    def _what(self) -> str:
        if self.timed_out is not None:
            return f"timed out after {self.timed_out:g} s"
        if self.returncode is not None and self.returncode != 0:
            return f"exited with status {self.returncode}"
        return "failed"

    def short(self) -> str:
        """One line for summaries: ``stedgeai generate exited with status 2: E103(...)``."""
        name = Path(self.argv[0]).name if self.argv else "stedgeai"
        command = " ".join([name, *self.argv[1:2]])
        return f"{command} {self._what()}" + (f": {self.reason}" if self.reason else "")

    def _describe(self) -> str:
        import shlex

        head = f"Command {shlex.join(self.argv)!r} {self._what()}"
        if self.reason:
            head += f": {self.reason}"
        if self.output_tail:
            head += "\n--- last lines of output ---\n" + self.output_tail
        return head


class ReportParseError(StedgeError):
    """A tool output could not be read: names the file and, where known, the line."""

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        where = f"{self.path}" + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class SeveralRunsError(ReportParseError):
    """A file or folder holds several runs of the tool: a Result is one run, never a merge.

    ``runs`` holds each run's Result, in the order the tool made them; ``parse_runs``
    returns them, ``stedge parse`` prints each and ``stedge ingest --run N`` takes one.
    """

    def __init__(self, path: Path | str, runs: list[dict[str, Any]]) -> None:
        self.runs = runs
        listed = "; ".join(f"run {i}: {describe_run(r)}" for i, r in enumerate(runs, 1))
        super().__init__(
            path,
            f"holds {len(runs)} runs of the tool ({listed}); a Result is one run: "
            "`stedge parse` prints each, `stedge ingest --run N` stores one",
        )


def describe_run(result: dict[str, Any]) -> str:
    """``generate 4.0.1 (network_generate_report.txt)``: how a run is named to a user."""
    version = (result.get("tool") or {}).get("version")
    names = sorted({Path(s).name for s in result.get("sources") or []})
    where = f" ({', '.join(names)})" if names else ""
    return f"{result.get('command', 'unknown')}{' ' + version if version else ''}{where}"


class StoreError(StedgeError):
    """The results store cannot be opened or written."""


class StoreVersionError(StoreError):
    """The store was written by a newer pytest-stedge (unknown migrations)."""


class StoreBusyError(StoreError):
    """Another process holds the store's write lock."""


class OracleError(StedgeError):
    """The oracle cannot analyse a model (not ONNX, unresolved shapes, ...)."""


class BoardError(StedgeError):
    """A board or its serial link misbehaved."""

"""The readers trial of fault_trials.py (issue 31): N sessions write one DuckDB file while
`stedge runs` and `stedge dashboard` read it in a loop, each a process of its own with the
default 5 s wait, as a CI job and a developer would.

Counts: reads, reads refused (exit status 2 with the store busy), the slowest read; and
for the sessions: exit statuses, finished items, finished items not in the store.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_stedge.store.database import Store

_WORDS = "PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS"
# `-v` says an item finished as "nodeid PASSED", and under xdist as "[gw0] [ 12%] PASSED nodeid"
_STATUS_RE = re.compile(rf"^(?:(\S+::\S+) (?:{_WORDS})|\[gw\d+\](?: \[\s*\d+%\])? (?:{_WORDS}) "
                        rf"(\S+::\S+))")


def finished_items(output: str) -> set[str]:
    """Node ids of the items a `pytest -v` output reports finished (with or without xdist)."""
    return {m.group(1) or m.group(2) for line in output.splitlines()
            if (m := _STATUS_RE.match(line))}


@dataclass
class ReadersResult:
    """What the readers saw and what the sessions stored."""

    sessions: int = 0
    exit_statuses: list[int] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=lambda: {"runs": 0, "dashboard": 0})
    refused: dict[str, int] = field(default_factory=lambda: {"runs": 0, "dashboard": 0})
    slowest_s: float = 0.0
    finished_items: int = 0
    lost_items: int = 0
    refusals: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        reads = ", ".join(f"{k} {self.refused[k]}/{self.reads[k]} refused" for k in self.reads)
        line = (f"readers: {self.sessions} sessions (exit statuses {sorted(self.exit_statuses)}),"
                f" {self.finished_items} finished items, {self.lost_items} not in the store; "
                f"reads: {reads}; slowest read {self.slowest_s:.1f} s")
        return line + "".join(f"\n       {r}" for r in self.refusals[:8])


def readers_trial(
    writers: int, start: Callable[[Path, Path], subprocess.Popen[str]], root: Path
) -> ReadersResult:
    """``start(db, workdir)`` starts one session; ``writers`` of them run at once."""
    db = root / "readers.duckdb"
    Store.open(db).close()
    result = ReadersResult(sessions=writers)
    sessions = [start(db, root / f"readers-work-{k}") for k in range(writers)]
    outputs: list[str] = [""] * writers
    readers = [_reader(db, "runs", root), None]
    kinds = ["runs", "dashboard"]
    turn = 0
    while any(s.poll() is None for s in sessions) or any(r is not None for r in readers):
        for k, proc in enumerate(readers):
            if proc is None or proc[0].poll() is None:
                continue
            reader, began, kind = proc
            _err = reader.communicate()[1]
            took = time.monotonic() - began
            result.reads[kind] += 1
            result.slowest_s = max(result.slowest_s, took)
            if reader.returncode != 0:
                result.refused[kind] += 1
                result.refusals.append(f"refused: {kind} after {took:.1f} s: {_err.strip()[:300]}")
            readers[k] = None
        if any(s.poll() is None for s in sessions):
            for k in range(2):
                if readers[k] is None:
                    kind = kinds[(turn + k) % 2]
                    readers[k] = _reader(db, kind, root)
            turn += 1
        time.sleep(0.05)
    for k, proc in enumerate(sessions):
        outputs[k] = proc.communicate()[0]
        result.exit_statuses.append(proc.returncode)
        if proc.returncode not in (0, 1):
            last = [x for x in outputs[k].splitlines() if x.strip()][-1:]
            result.refusals.append(f"session {k} exit {proc.returncode}: {last}")
    with Store.open(db, create=False, read_only=True) as store:
        by_run = {int(r["run_id"]): store.item_nodeids(r["run_id"]) for r in store.list_runs()}
    for output in outputs:
        finished = finished_items(output)
        result.finished_items += len(finished)
        run = _RUN_RE.search(output)  # "stored as run N", or "run N is incomplete"
        items = by_run.get(int(run.group(1) or run.group(2)), set()) if run else set()
        result.lost_items += len(finished - items)
    return result


_RUN_RE = re.compile(r"stored as run (\d+)|run (\d+)(?: \(run group [^)]*\))? is incomplete")


def _reader(db: Path, kind: str, root: Path) -> tuple[subprocess.Popen[str], float, str]:
    argv = [sys.executable, "-m", "pytest_stedge.cli.main", kind, "--db", str(db)]
    if kind == "dashboard":
        argv += ["--out", str(root / "readers-site"), "--corpus", str(root / "corpus")]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, time.monotonic(), kind

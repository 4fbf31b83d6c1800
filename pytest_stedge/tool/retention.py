"""How long the work folder keeps each run's outputs (``.stedge/work/run-*``).

Every session writes the tool's outputs of each item under its own run folder; nothing
else ever removes them. At the end of a session the controller marks its run folder
(``.stedge-run.json``: status, failed items, time) and prunes: the folders of the newest
``keep`` runs stay, a run with a failure (or one that never finished: killed, crashed)
stays while it is among the newest ``keep_failed``, and older ones go. ``stedge clean``
applies the same rule on demand (or ``--all``). Only ``run-*`` and ``pid-*`` folders are
ever touched: anything else a user keeps in the work folder stays.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

RUN_MARKER = ".stedge-run.json"
RUN_PREFIXES = ("run-", "pid-")
DEFAULT_KEEP = 10
DEFAULT_KEEP_FAILED = 50
ALL = "all"


@dataclass(frozen=True)
class RunFolder:
    """One run's folder under the work folder, and what its marker says."""

    path: Path
    status: str  # passed, failed, interrupted, error; "unfinished" without a marker
    when: float  # seconds since the epoch: the marker's time, else the folder's mtime
    size_bytes: int

    @property
    def kept_longer(self) -> bool:
        """A failed or unfinished run: its outputs are what someone will want to read."""
        return self.status != "passed"


def mark_run(run_dir: Path, status: str, failed: int) -> None:
    """Write the run folder's marker (the session's outcome, its failed item count); a
    folder that does not exist (nothing ran the tool) gets none."""
    if not run_dir.is_dir():
        return
    data = {"status": status, "failed": failed, "finished": time.time()}
    tmp = run_dir / f"{RUN_MARKER}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, run_dir / RUN_MARKER)


def run_folders(root: Path) -> list[RunFolder]:
    """The run folders under ``root``, newest first."""
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) or not entry.name.startswith(RUN_PREFIXES):
            continue
        path = Path(entry.path)
        status, when = "unfinished", entry.stat(follow_symlinks=False).st_mtime
        try:
            marker = json.loads((path / RUN_MARKER).read_text(encoding="utf-8"))
            status, when = str(marker["status"]), float(marker["finished"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        found.append(RunFolder(path, status, when, _size(path)))
    return sorted(found, key=lambda run: (run.when, run.path.name), reverse=True)


def to_remove(
    runs: list[RunFolder], keep: int | None, keep_failed: int | None
) -> list[RunFolder]:
    """The runs (newest first, as :func:`run_folders` lists them) that the rule drops:
    beyond the newest ``keep``, and for failed or unfinished ones beyond the newest
    ``keep_failed`` too. ``None`` keeps that class for ever."""
    if keep is None:
        return []
    longer = None if keep_failed is None else max(keep, keep_failed)
    drop = []
    for rank, run in enumerate(runs):
        limit = longer if run.kept_longer else keep
        if limit is not None and rank >= limit:
            drop.append(run)
    return drop


def prune(root: Path, keep: int | None, keep_failed: int | None) -> list[RunFolder]:
    """Remove the run folders :func:`to_remove` names; return them."""
    removed = []
    for run in to_remove(run_folders(root), keep, keep_failed):
        shutil.rmtree(run.path, ignore_errors=True)
        if not run.path.exists():
            removed.append(run)
    return removed


def parse_keep(text: str | int | None, what: str) -> int | None:
    """A retention count: a whole number >= 1, or ``all`` (None: never remove)."""
    if text is None or str(text).strip().lower() == ALL:
        return None
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{what}: expected a whole number of runs >= 1 or 'all', got {text!r}")
    return value


def _size(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total

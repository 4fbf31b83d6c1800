"""Where the tool writes: one folder per run, one per item, every name escaped."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..case.model import Case
from ..store.rows import run_label


class WorkFolders:
    """Where the tool writes: one folder per run (shared by xdist workers), one per item.

    Unique per store and per run (``run-<id>-<uuid>``: another store's run 3 is another
    folder), and per item: every name is escaped one-to-one (:func:`path_segment`), so
    case ``a_b`` and variant ``b`` of case ``a`` never share a folder.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_id: int | None = None
        self.run_uuid: str | None = None

    def run_name(self) -> str:
        """This run's folder name (``pid-N`` before the run is recorded)."""
        if self.run_id is None:
            return f"pid-{os.getpid()}"
        return run_label(self.run_id, self.run_uuid)

    def run_dir(self) -> Path:
        """This session's folder under the work folder."""
        return self.root / self.run_name()

    def item_dir(self, case: Case, stage: str, version: str) -> Path:
        """Its own output folder for one item: ``<case folder>[/@<variant>]/<stage>-<version>``."""
        folder = self.run_dir() / path_segment(case.folder.name)
        if case.variant is not None:
            folder = folder / ("@" + path_segment(case.variant))
        return folder / path_segment(f"{stage}-{version}")


def path_segment(text: str) -> str:
    """``text`` as one folder name, one-to-one: characters outside ``[A-Za-z0-9_.-]``
    (``/`` included) and ``%`` become ``%XX``, and a leading dot is escaped, so no name
    can climb out of its folder or collide with another."""
    out = "".join(
        ch if re.fullmatch(r"[A-Za-z0-9_.-]", ch) else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in text
    )
    return "%2E" + out[1:] if out.startswith(".") else out or "%00"

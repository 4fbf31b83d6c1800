"""Recorded runs shipped with the corpus: ``<case folder>/recordings.json``.

Each run is a normalised Result of one (case, stage, toolchain version) that the real
tool produced somewhere public, with its provenance (repository, commit, path and md5 of
every source file). They are data, written by ``corpus/real/record.py`` from the files
in ``../shared``; here they are read, checked and handed to the session's toolchains
beside the store's own recordings (``stedge ingest``), so that ``pytest corpus`` on a
machine without any install replays them, version after version.

A run's identity for comparisons is its own: ``model_sha256`` (the model's sha256, or
``md5:<hex>`` when only the tool's model_hash is known) and ``options_hash`` (the
options its command line stated), so two runs compare only when they compiled the same
model with the same options.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import CaseError
from .scan import FolderScan, scan_folder

RECORDINGS_FILE = "recordings.json"
SCHEMA = "stedge.recordings/1"
RUN_KEYS = ("case", "stage", "version", "model_sha256", "options", "options_hash", "result",
            "provenance")
_SKIP_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".stedge", ".tox"}


def options_hash(target: str, options: Sequence[str]) -> str:
    """Hash of what a recorded run's command line stated (target and normalised options)."""
    blob = json.dumps({"target": target, "options": list(options)}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def load_recordings(path: Path) -> list[dict[str, Any]]:
    """The runs of one ``recordings.json``, as the toolchains hold recordings.

    :raises CaseError: naming the file and the key, for a malformed file.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaseError(path, None, f"not a readable JSON file: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CaseError(path, "schema", f"expected {SCHEMA!r}")
    runs = data.get("runs")
    if not isinstance(runs, list):
        raise CaseError(path, "runs", "expected a list of recorded runs")
    out = []
    for index, run in enumerate(runs):
        key = f"runs[{index}]"
        if not isinstance(run, dict):
            raise CaseError(path, key, "expected a table")
        missing = [k for k in RUN_KEYS if k not in run]
        if missing:
            raise CaseError(path, f"{key}.{missing[0]}", f"missing; a run needs {', '.join(RUN_KEYS)}")
        for name in ("case", "stage", "version", "model_sha256", "options_hash"):
            if not isinstance(run[name], str) or not run[name]:
                raise CaseError(path, f"{key}.{name}", "expected a non-empty string")
        if not isinstance(run["result"], dict) or not isinstance(run["provenance"], dict):
            raise CaseError(path, f"{key}.result", "expected the Result and provenance tables")
        options = run["options"]  # null: no file of the run states its command line
        if options is not None and (
            not isinstance(options, list) or not all(isinstance(o, str) for o in options)
        ):
            raise CaseError(path, f"{key}.options",
                            "expected the list of the run's options, or null when unknown")
        out.append(
            {
                "version": run["version"],
                "case_name": run["case"],
                "stage": run["stage"],
                "model_sha256": run["model_sha256"],
                "options_hash": run["options_hash"],
                # the command line's (the oracle reads it); None when no file states it
                "options": None if options is None else list(options),
                "source": f"{path}#{key}",
                "result": run["result"],
                "provenance": run["provenance"],
                "corpus": True,
            }
        )
    return out


def find_recordings(
    paths: Iterable[Path], scans: dict[str, FolderScan] | None = None
) -> list[dict[str, Any]]:
    """Every corpus recording under ``paths`` (case files or folders), in a stable order.

    :param scans: filled with the listing of every folder searched (by path), for the
        collection that follows (it would list the same thousands of case folders again).
    :raises CaseError: for a malformed file.
    """
    files: set[Path] = set()
    for path in paths:
        if path.name == "case.toml":
            candidate = path.parent / RECORDINGS_FILE
            if candidate.is_file():
                files.add(candidate.resolve())
        elif path.is_dir():
            folders = [os.fspath(path)]
            while folders:  # no symlinked, hidden or tool folder (as os.walk did)
                folder = folders.pop()
                scan = scan_folder(folder)
                if scan is None:
                    continue
                if scans is not None:
                    scans[folder] = scan
                if RECORDINGS_FILE in scan.files and "case.toml" in scan.files:
                    files.add(Path(folder, RECORDINGS_FILE).resolve())
                folders += [f for f in scan.subfolders if _searched(os.path.basename(f))]
    runs: list[dict[str, Any]] = []
    for file in sorted(files):
        runs += load_recordings(file)
    return runs


def _searched(folder_name: str) -> bool:
    return folder_name not in _SKIP_DIRS and not folder_name.startswith(".")


def release_key(version: str) -> tuple[Any, ...]:
    """Sort key of toolchain versions in release order (``2.2.0`` before ``10.0``)."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version), "")
    except InvalidVersion:
        return (1, Version("0"), version)


def public_sources(case_toml: Path, case_name: str) -> list[tuple[str, str]]:
    """``(title, URL)`` of a case's public sources: its record-only model's source and every
    file its corpus recordings were read from (``recordings.json`` beside the case file),
    each once, in version order. Empty for a case without them, or whose files are gone."""
    from ..errors import StedgeError
    from .load import load_cases

    out: list[tuple[str, str]] = []
    try:
        case = next((c for c in load_cases(case_toml) if c.name == case_name), None)
    except (StedgeError, OSError):
        return out
    if case is not None and case.model_source is not None and case.model_source.source.startswith(("https://", "http://")):
        out.append((f"the model: {case.model_source.file}", case.model_source.source))
    recordings = case_toml.parent / RECORDINGS_FILE
    if recordings.is_file():
        try:
            runs = [r for r in json.loads(recordings.read_text(encoding="utf-8")).get("runs", [])
                    if isinstance(r, dict) and r.get("case") == case_name]
        except (OSError, ValueError):
            runs = []
        for run in sorted(runs, key=lambda r: (release_key(str(r.get("version"))), str(r.get("stage")))):
            for item in (run.get("provenance") or {}).get("files") or []:
                url = str(item.get("url") or "")
                if url.startswith("https://"):
                    out.append((f"{run.get('version')} {run.get('stage')}: {item.get('path')}", url))
    unique: dict[str, str] = {}
    for title, url in out:
        unique.setdefault(url, title)
    return [(title, url) for url, title in unique.items()]

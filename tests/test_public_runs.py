"""The 80 public runs of ../shared/public-runs (INDEX.md) parse to the figures they state.

Independent of the parsers: the version is SOURCE.txt's "folder version", the figures are
the report's exact byte lines (``weights (ro) : 898,820 B``, ``activations (rw) : ...``,
``macc : ...``) read here with a plain regular expression, and the legacy report.json's
``rom_size`` / ``ram_size`` / ``rom_n_macc``. Each is checked on the run of the command the
file states (a folder may hold several runs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.parsers import parse_runs

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "public-runs"
FOLDERS = sorted(p.name for p in PUBLIC.iterdir() if p.is_dir()) if PUBLIC.is_dir() else []
_LINES = {
    "weights_bytes": re.compile(r"^\s*weights \(ro\)\s*:\s*([\d,]+)", re.MULTILINE),
    "activations_bytes": re.compile(r"^\s*activations \(rw\)\s*:\s*([\d,]+)", re.MULTILINE),
    "macc": re.compile(r"^\s*macc\s*:\s*([\d,]+)", re.MULTILINE),
}


def _figure(run: dict[str, Any], key: str) -> Any:
    return run.get("macc") if key == "macc" else (run.get("memory") or {}).get(key)


def _run_of(runs: list[dict[str, Any]], command: str | None) -> dict[str, Any]:
    return next((r for r in runs if r["command"] == command), runs[0])


def test_all_80_runs_are_here() -> None:
    if not FOLDERS:
        pytest.skip(f"public runs not available: {PUBLIC} is absent")
    assert len(FOLDERS) == 80


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_public_run_parses_to_the_figures_it_states(folder: str) -> None:
    path = PUBLIC / folder
    stated = re.search(r"folder version (\d+\.\d+\.\d+)", (path / "SOURCE.txt").read_text())
    assert stated is not None
    runs = parse_runs(path)
    assert {r["tool"]["version"] for r in runs} == {stated.group(1)}
    checked = 0
    for report in sorted(path.glob("*_report.txt")):
        text = report.read_text(encoding="utf-8", errors="replace")
        command = re.search(r"_(analyze|generate|validate)_report\.txt$", report.name)
        run = _run_of(runs, command.group(1) if command else None)
        for key, line in _LINES.items():
            found = line.search(text)
            if found and not (key == "macc" and found.group(1) == "0"):  # N6: not computed
                assert _figure(run, key) == int(found.group(1).replace(",", "")), (report, key)
                checked += 1
    for legacy in sorted(path.glob("*_report.json")):
        doc = json.loads(legacy.read_text(encoding="utf-8"))
        run = _run_of(runs, doc.get("exec_cmd"))
        ram = doc.get("ram_size")
        for key, value in (("weights_bytes", doc.get("rom_size")),
                           ("activations_bytes", ram[0] if isinstance(ram, list) else ram),
                           ("macc", doc.get("rom_n_macc"))):  # fmt: skip
            if isinstance(value, int):
                assert _figure(run, key) == value, (legacy, key)
                checked += 1
    for c_info in sorted(path.glob("*c_info*.json")):
        doc = json.loads(c_info.read_text(encoding="utf-8"))
        footprint = doc.get("memory_footprint") or {}
        arguments = str(((doc.get("environment") or {}).get("tools") or [{}])[0].get("arguments"))
        run = _run_of(runs, arguments.split()[0] if arguments.split() else None)
        for key, value in (("weights_bytes", footprint.get("weights")),
                           ("activations_bytes", footprint.get("activations"))):  # fmt: skip
            if isinstance(value, int):
                assert _figure(run, key) == value, (c_info, key)
                checked += 1
    for report in sorted(path.glob("*_report.txt")):
        # N6 reports state the totals rounded: "Total: ... weights: 3.415 MB activations: ..."
        total = re.search(r"^Total:.*weights:\s*([\d.]+)\s*(kB|MB|B)\s+activations:\s*"
                          r"([\d.]+)\s*(kB|MB|B)", report.read_text(errors="replace"), re.MULTILINE)
        if total is None:
            continue
        run = runs[0]
        for key, number, unit in (("weights_bytes", total.group(1), total.group(2)),
                                  ("activations_bytes", total.group(3), total.group(4))):
            scale = {"B": 1, "kB": 1024, "MB": 1024 * 1024}[unit]
            decimals = len(number.partition(".")[2])
            error = scale * 10.0 ** -decimals / 2
            assert abs(_figure(run, key) - float(number) * scale) <= error, (report, key)
            checked += 1
    if folder != "stm32-5.0.0-generate-Try1-1":  # a failed run: its report states no figure
        assert checked, folder

"""Every `stedge` error reads `stedge: error: ...` (exit 2), and its hints name the flags of
the command that is running, not pytest's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main


def test_board_run_hints_name_its_own_board_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    assert main(["board-run", str(model), "--board", f"serial:{tmp_path / 'no-such-port'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stedge: error: cannot open serial port")
    assert "--board auto" in err and "--stedge-board" not in err


def test_toolchains_names_its_own_root_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchains", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path.resolve()} (--root)" in out and "--stedge-root" not in out
    assert "point to one with --root DIR" in out


def test_store_hints_name_the_db_flag() -> None:
    from argparse import Namespace

    from pytest_stedge.cli.main import build_parser, command_flags, own_flags

    flags = command_flags(build_parser(), Namespace(command="runs"))
    assert flags["--stedge-db"] == "--db"
    hint = "or give this session its own store with --stedge-db PATH."
    assert own_flags(hint, flags) == "or give this session its own store with --db PATH."
    # a flag the command does not have stays as pytest's (a hint to run pytest)
    assert own_flags("pytest corpus --stedge-version 4.0.1", flags).endswith("--stedge-version 4.0.1")


def test_parse_errors_use_the_one_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("stedge: error: ")


def test_parse_on_a_folder_of_run_folders_points_to_them(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a work folder as a session leaves it: run-3/<case>/<stage>-<version>/ with the outputs
    real = shared_dir / "real-cases" / "n6-mobilenetv2-qdq-3versions" / "3.0.0"
    work = tmp_path / "work"
    for case in ("mnv2", "tcn"):
        shutil.copytree(real, work / "run-3" / case / "generate-3.0.0",
                        ignore=shutil.ignore_patterns("st_ai_ws", "*.onnx"))
    assert main(["parse", str(work)]) == 2
    err = capsys.readouterr().err
    first = work / "run-3" / "mnv2" / "generate-3.0.0"
    assert err.startswith(f"stedge: error: {work}: no stedgeai output in this folder itself")
    assert f"2 folder(s) below it hold some: {first}, " in err
    assert f"e.g. stedge parse {first}" in err
    assert main(["parse", str(first)]) == 0  # and that is a run folder indeed

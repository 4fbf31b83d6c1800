"""No traceback reaches a user without -v (issue 16): every ``stedge`` command given a
missing or unusable file ends with one ``stedge: error: ...`` line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.cli import main as cli_main
from pytest_stedge.cli import toolchains


def _stedge(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli_main.main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_board_run_example_of_its_own_help_without_the_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no corpus/kws here: today a FileNotFoundError traceback
    code, err = _stedge(capsys, "board-run", "corpus/kws/case.toml", "--board", "auto")
    assert code == 2
    assert err == ("stedge: error: corpus/kws/case.toml: cannot read the case file: "
                   "No such file or directory\n")


def test_board_run_with_a_file_that_is_not_onnx(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"\x08\xff\xff garbage")  # today: protobuf's DecodeError traceback
    code, err = _stedge(capsys, "board-run", str(bogus), "--board", "socket://127.0.0.1:9")
    assert code == 2 and err.startswith(f"stedge: error: {bogus}: not an ONNX model (")


def test_a_file_the_system_refuses_names_the_file_and_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = make_conv_model(tmp_path / "m.onnx", channels=2, size=4, layers=1)
    out = tmp_path / "not-a-folder"
    out.write_text("a file, not a folder")
    code, err = _stedge(capsys, "reference", str(model), "--out", str(out / "ref.npz"))
    assert code == 2
    # the tool makes the folder first: the system refuses, naming the file in the way
    assert err == f"stedge: error: {out}: File exists\n"


def test_an_unexpected_error_is_one_line_unless_verbose(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(args: object) -> int:
        raise KeyError("installs")

    monkeypatch.setattr(toolchains, "_toolchains", broken)
    code, err = _stedge(capsys, "toolchains")
    assert code == 2
    assert err == ("stedge: error: KeyError: 'installs' (unexpected: this is a bug of "
                   "pytest-stedge; rerun with -v for the traceback)\n")
    with pytest.raises(KeyError):
        cli_main.main(["-v", "toolchains"])


MISSING = [
    ["board-run", "missing/case.toml", "--board", "auto"],
    ["board-run", "missing.onnx", "--board", "socket://127.0.0.1:9"],
    ["oracle", "missing.onnx"],
    ["reference", "missing.onnx", "--out", "o.npz"],
    ["metrics", "missing.npy"],
    ["diverge", "missing.onnx", "missing.npz"],
    ["parse", "missing_dir"],
    ["ingest", "missing_dir", "--case", "x", "--version", "1.0.0"],
    ["import", "missing_dir"],
    ["export", "--db", "missing.duckdb", "--out", "bundle"],
    ["runs", "--db", "missing.duckdb"],
    ["show", "latest", "--db", "missing.duckdb"],
    ["report", "latest", "--db", "missing.duckdb"],
    ["dashboard", "--db", "missing.duckdb"],
    ["diff", "1.0.0", "2.0.0", "--db", "missing.duckdb"],
]


@pytest.mark.parametrize("argv", MISSING, ids=[" ".join(a[:2]) for a in MISSING])
def test_every_command_with_a_missing_file_says_so_in_one_line(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _stedge(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stedge"), err
    assert "missing" in lines[0] or "no store" in lines[0] or "socket" in lines[0], err


@pytest.mark.parametrize("argv", [["runs"], ["show", "latest"], ["diff", "1.0.0", "2.0.0"]])
def test_a_store_that_is_not_a_store(argv: list[str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "results.duckdb"
    bogus.write_bytes(b"not a database at all" * 100)
    code, err = _stedge(capsys, *argv, "--db", str(bogus))
    assert code == 2 and err.startswith(f"stedge: error: store {bogus} is not a DuckDB file")

"""``stedge parse PATH [--json]``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_stedge.cli import parse as commands

SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "stedgeai-samples"


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="stedge")
    commands.add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


def test_summary_of_an_n6_folder(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["parse", str(SAMPLES / "n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs")]) == 0
    out = capsys.readouterr().out
    assert "stedgeai 2.2.0 (20266 2adc00962)  generate  target=stm32n6  Neural-ART" in out
    assert "epochs      95 (hw 68, ec 0, sw 26, hybrid 1)" in out
    assert "SW ops      DequantizeLinear, QuantizeLinear, Transpose" in out
    assert "pool npuRAM5" in out and "macc        32,092,044" in out


def test_json_output_is_the_result(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["parse", str(SAMPLES / "stm32-v2.2.0-validate-host-mlp"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["schema"] == "stedge.result/1"
    assert result["command"] == "validate"
    assert result["memory"]["weights_bytes"] == 21_004


def test_error_names_the_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_stedge.cli.main import main

    path = tmp_path / "network_c_info.json"
    path.write_text('{"json_schema_version": "2.0", "environment": {')
    assert main(["parse", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stedge: error: {path}") and "invalid JSON" in err


def test_help_has_description_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _run(["parse", "--help"])
    out = capsys.readouterr().out
    assert "--json" in out and "examples:" in out

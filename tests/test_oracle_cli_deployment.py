"""``stedge oracle``'s deployment arguments: one stedgeai option per --options, and
--target meaning what the tool means."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))
from tflite_nets import micro_conv


def _deployment(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["oracle", *argv, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out)["deployment"])


def test_options_take_a_single_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(micro_conv(tmp_path / "m.tflite"))
    dep = _deployment(capsys, model, "--target", "stm32n6", "--options", "--st-neural-art")
    assert dep["family"] == "n6-npu"
    dep = _deployment(
        capsys, model, "--target", "stm32h7", "--options", "--no-inputs-allocation",
        "--options", "--no-outputs-allocation",
    )
    assert dep["inputs_in_activations"] is False and dep["outputs_in_activations"] is False
    dep = _deployment(capsys, model, "--target", "stm32h7", "--options=--no-inputs-allocation")
    assert dep["inputs_in_activations"] is False
    # several options in one string, as before
    dep = _deployment(
        capsys, model, "--target", "stm32n6", "--options", "--st-neural-art --no-inputs-allocation"
    )
    assert dep["family"] == "n6-npu" and dep["inputs_in_activations"] is False


def test_target_stm32n6_alone_is_the_software_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(micro_conv(tmp_path / "m.tflite"))
    assert main(["oracle", model, "--target", "stm32n6"]) == 0
    out = capsys.readouterr().out
    assert "software path: stedgeai without --st-neural-art" in out
    assert main(["oracle", model]) == 0
    out = capsys.readouterr().out
    assert "Neural-ART NPU" in out and "no --target: the N6 NPU" in out
    assert _deployment(capsys, model, "--target", "stm32n6")["family"] == "n6-sw"
    assert _deployment(capsys, model)["family"] == "n6-npu"
    with pytest.raises(SystemExit):
        main(["oracle", "--help"])
    text = capsys.readouterr().out
    assert "--target stm32n6 alone is the software path" in " ".join(text.split())

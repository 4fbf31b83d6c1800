"""Flat metrics derived from Results of real tool outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_stedge.parsers import parse_path
from pytest_stedge.result import flat_metrics


@pytest.mark.parametrize(
    ("folder", "external"),
    [
        # STM32N6 2.0: 401,408 B of activations in hyperRAM (the field problem: silent spill)
        ("stedgeai-samples/n6-v2.0.0-xcubeai10.0-analyze-tinyyolo", 401_408),
        # STM32F4 2.1 Developer Cloud build with an external SDRAM pool
        ("real-cases/stm32f4-mobilenetv2-2builds/2.1.0-20182-devcloud", 202_800),
        # STM32N6 4.0 default profile: internal RAM only
        ("stedgeai-samples/n6-v4.0.0-generate-npu-conv2d-default-profile", 0),
    ],
)
def test_activations_in_external_ram(shared_dir: Path, folder: str, external: int) -> None:
    metrics = flat_metrics(parse_path(shared_dir / folder))
    assert metrics["activations_external_bytes"] == external


def test_unknown_pools_are_not_zero() -> None:
    assert "activations_external_bytes" not in flat_metrics({"memory": {"activations_bytes": 5}})

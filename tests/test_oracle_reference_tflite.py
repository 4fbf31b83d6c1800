"""Reference inference of TFLite models with LiteRT on the tool's default stimulus.

Proven on the real validate runs of the 8 micro convolution models: the tool's own
``network_val_io.npz`` holds the stimulus it drew (m_inputs_1) and the reference
outputs its TFLite interpreter gave (m_outputs_1); ours must be the same arrays.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.metrics import compute_metrics
from pytest_stedge.oracle.accuracy.reference import reference_outputs

MICRO = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases" / "n6-micro-convs-4flows"
MODELS = sorted(MICRO.glob("*/baseline_*_int8.tflite")) if MICRO.is_dir() else []


@pytest.mark.skipif(not MODELS, reason=f"{MICRO} is absent (real validate runs)")
@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.parent.name)
def test_litert_reference_equals_the_tools_own(model: Path) -> None:
    io = np.load(model.parent / "2.2.0-cubemx-target" / "network_val_io.npz")
    ours = reference_outputs(model)
    assert ours["m_inputs_1"].dtype == np.int8
    # Same stimulus, same reference: at most one of the 122,880 input codes and one of
    # the outputs differ, by one step (a value on a rounding edge of the tool's
    # quantizer, whose exact float arithmetic is not documented); 3 of the 8 are exact.
    for key in ("m_inputs_1", "m_outputs_1"):
        diff = np.abs(ours[key].astype(int) - io[key].reshape(ours[key].shape).astype(int))
        assert diff.max() <= 1 and int((diff > 0).sum()) <= 1, key
    # host metrics work for TFLite: the board's output against our reference
    metrics = compute_metrics(ours["m_outputs_1"], io["c_outputs_1"], scale=0.001, zero_point=-128)
    assert metrics["cos"] > 0.99


def test_not_a_flatbuffer_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "model.tflite"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(OracleError, match=r"model.tflite: not a TFLite flatbuffer"):
        reference_outputs(bad)

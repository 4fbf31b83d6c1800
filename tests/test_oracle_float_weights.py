"""A QDQ model whose PReLU was left out of quantization: the oracle must say it stays float."""

from __future__ import annotations

from pathlib import Path

from pytest_stedge.oracle import analyze_model

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_prelu_with_a_float_slope_is_a_float_node() -> None:
    float_prelu = analyze_model(CORPUS / "mtcnn-rnet" / "model_prelu_float.onnx")
    int8 = analyze_model(CORPUS / "mtcnn-rnet" / "model_int8.onnx")
    prelus = [n for n in float_prelu["float_nodes"] if n["op_type"] == "PRelu"]
    assert len(prelus) == 4  # RNet's four PReLU layers, wrapped by DQ/Q yet with float slopes
    assert int8["float_nodes"] == []
    # their outputs exist in float32 on the target: four times the int8 activations
    assert float_prelu["lower_bound_bytes"] == 4 * int8["lower_bound_bytes"]

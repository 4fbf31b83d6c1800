"""A PReLU whose slope stays a float initializer is a float node (it runs in software)."""

from __future__ import annotations

from pathlib import Path

from pytest_stedge.oracle import analyze_model
from pytest_stedge.oracle.memory import analyze_graph
from pytest_stedge.oracle.model_files import open_graph

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_prelu_with_a_float_slope_is_a_float_node() -> None:
    float_prelu = analyze_model(CORPUS / "mtcnn-rnet" / "model_prelu_float.onnx")
    int8 = analyze_model(CORPUS / "mtcnn-rnet" / "model_int8.onnx")
    prelus = [n for n in float_prelu["float_nodes"] if n["op_type"] == "PRelu"]
    assert len(prelus) == 4  # RNet's four PReLU layers, wrapped by DQ/Q yet with float slopes
    assert int8["float_nodes"] == []
    # as exported (no target rules), their outputs exist in float32: four times int8
    plain_float = analyze_graph(open_graph(CORPUS / "mtcnn-rnet" / "model_prelu_float.onnx"))
    plain_int8 = analyze_graph(open_graph(CORPUS / "mtcnn-rnet" / "model_int8.onnx"))
    assert plain_float["lower_bound_bytes"] == 4 * plain_int8["lower_bound_bytes"]
    # on the N6 NPU the int8 PReLUs stream out of their convolutions; the float ones cannot
    assert int8["lower_bound_bytes"] < plain_int8["lower_bound_bytes"]
    assert float_prelu["lower_bound_bytes"] > 4 * int8["lower_bound_bytes"]

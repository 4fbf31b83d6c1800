"""A PReLU whose slope stays a float initializer runs on int8 tensors, in software on the N6.

Its DequantizeLinear input and the QuantizeLinear after it fix its tensors as int8: the N6
runs such PReLUs in software epochs on int8 buffers (the tool's c_info holds S8 and Q16
buffers there, no FLOAT one). The floor assumes integer execution, so the model needs no
more than its all-int8 twin; the typical deployment stores the tensors around the
software PReLU, which the NPU cannot stream.
"""

from __future__ import annotations

from pathlib import Path

from pytest_stedge.oracle import analyze_model
from pytest_stedge.oracle.memory.analysis import analyze_graph
from pytest_stedge.oracle.model.files import open_graph

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_prelu_with_a_float_slope_runs_on_int8_tensors() -> None:
    float_prelu = analyze_model(CORPUS / "mtcnn-rnet" / "model_prelu_float.onnx")
    int8 = analyze_model(CORPUS / "mtcnn-rnet" / "model_int8.onnx")
    assert float_prelu["float_nodes"] == [] and int8["float_nodes"] == []
    software = [n["op_type"] for n in float_prelu["software_nodes"]]
    assert software == ["PRelu"] * 4  # RNet's four PReLU layers keep float slopes
    assert int8["software_nodes"] == []
    # as exported (no target rules) both are int8 throughout: the same liveness
    plain_float = analyze_graph(open_graph(CORPUS / "mtcnn-rnet" / "model_prelu_float.onnx"))
    plain_int8 = analyze_graph(open_graph(CORPUS / "mtcnn-rnet" / "model_int8.onnx"))
    assert plain_float["lower_bound_bytes"] == plain_int8["lower_bound_bytes"]
    # floor: conv1 + PReLU + maxpool stream; 24x24x3 int8 input + 11x11x28 pooled output
    assert float_prelu["lower_bound_bytes"] == int8["lower_bound_bytes"] == 1_728 + 3_388
    # typical: conv1's 22x22x28 int8 output and the software PReLU's output are stored
    assert float_prelu["typical_bound_bytes"] == 2 * 22 * 22 * 28 == 27_104
    assert int8["typical_bound_bytes"] < float_prelu["typical_bound_bytes"]

"""Attribute forms the placement oracle keys apart (issue 27b): a dilated convolution, a
per-channel PReLU slope, a SpaceToDepth/DepthToSpace pair around a convolution.

No real N6 run in ../shared shows any of them (no PRelu in any N6 report or model, every
convolution of the N6 runs' models has dilation 1, the only DepthToSpace epochs are the
front end's rebuild of a nearest Resize): the predictor must say "unknown in this
version" for them, never take the plain operator's placement. A table that holds runs of
such a form decides them (checked with a table built here, saying so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

from pytest_stedge.oracle.model.files import open_graph
from pytest_stedge.oracle.placement.predict import predict_placement
from pytest_stedge.oracle.placement.table import SCHEMA, load_table

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


class _QDQ:
    """A tiny int8 QDQ ONNX graph, built node by node (float I/O, int8 activations)."""

    def __init__(self, channels: int = 8) -> None:
        self.c = channels
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.rng = np.random.RandomState(0)

    def qdq(self, x: str) -> str:
        name = f"{x}_qdq"
        self.inits += [nh.from_array(np.array(0.02, np.float32), f"{name}_s"),
                       nh.from_array(np.array(0, np.int8), f"{name}_z")]
        self.nodes += [
            helper.make_node("QuantizeLinear", [x, f"{name}_s", f"{name}_z"], [f"{name}_q"],
                             name=f"{name}_Q"),
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"],
                             [name], name=f"{name}_DQ")]
        return name

    def const(self, name: str, shape: tuple[int, ...]) -> str:
        """An int8 constant read through DequantizeLinear (weights, a slope)."""
        self.inits += [nh.from_array(self.rng.randint(-60, 60, shape).astype(np.int8), f"{name}8"),
                       nh.from_array(np.array(0.01, np.float32), f"{name}_s"),
                       nh.from_array(np.array(0, np.int8), f"{name}_z")]
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}8", f"{name}_s",
                                                                f"{name}_z"], [name]))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return self.qdq(name)

    def save(self, path: Path, last: str, shape: list[int]) -> Path:
        import onnx

        graph = helper.make_graph(
            self.nodes, "g",
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, self.c, 16, 16])],
            [helper.make_tensor_value_info(last, TensorProto.FLOAT, shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.save(model, path)
        return path


def _conv_model(path: Path, dilations: list[int]) -> Path:
    m = _QDQ()
    x = m.qdq("input")
    pad = dilations[0]
    y = m.op("Conv", [x, m.const("w", (8, 8, 3, 3))], "conv", dilations=dilations,
             pads=[pad] * 4)
    return m.save(path, y, [1, 8, 16, 16])


def _nodes(plan: dict[str, Any], op_type: str) -> list[dict[str, Any]]:
    return [n for n in plan["nodes"] if n["op_type"] == op_type]


def test_dilated_convolution_is_unknown_where_the_plain_one_ran_on_the_npu(tmp_path: Path) -> None:
    # the shipped table: Conv ran in hardware in every real 2.2 epoch table
    plain = predict_placement(open_graph(_conv_model(tmp_path / "plain.onnx", [1, 1])), "2.2.0")
    assert [(n["kind"], n["rule"]) for n in _nodes(plain, "Conv")] == [("HW", "mapped")]
    dilated = predict_placement(open_graph(_conv_model(tmp_path / "d.onnx", [2, 2])), "2.2.0")
    (conv,) = _nodes(dilated, "Conv")
    assert (conv["kind"], conv["rule"]) == ("unknown", "attribute")
    assert conv["reason"].startswith("unknown in this version: Conv with dilations 2x2 (dilated)")
    assert "no real N6 epoch table of 2.2 shows Conv in this form" in conv["reason"]
    assert "SpaceToDepth/DepthToSpace pair" in conv["reason"]
    assert dilated["counts"]["unknown"] == 1 and "Conv" in dilated["unknown_ops"]


def test_attribute_form_is_decided_by_runs_of_that_form_only(tmp_path: Path) -> None:
    """A table with a (made-up, said so) 2.2 run that put a dilated Conv in software: the
    dilated Conv follows it, the plain Conv still follows the plain rows."""
    table = load_table()
    line = dict(table["versions"]["2.2"])
    line["Conv(dilated)"] = {"sw": 1, "hybrid": 0, "hw": 0, "rows": [
        {"version": "2.2.0", "op": "Conv(dilated)", "kind": "sw", "file": "made-up.txt",
         "line": 7, "count": 1}]}
    custom = {"schema": SCHEMA, "runs": [], "versions": {**table["versions"], "2.2": line}}
    dilated = predict_placement(open_graph(_conv_model(tmp_path / "d.onnx", [2, 2])), "2.2.0",
                                table=custom)
    (conv,) = _nodes(dilated, "Conv")
    assert (conv["kind"], conv["rule"]) == ("SW", "attribute")
    assert conv["evidence"] == ["made-up.txt:7"]
    plain = predict_placement(open_graph(_conv_model(tmp_path / "p.onnx", [1, 1])), "2.2.0",
                              table=custom)
    assert _nodes(plain, "Conv")[0]["kind"] == "HW"


@pytest.mark.parametrize(("channels", "slope", "variant"),
                         [(8, (8, 1, 1), True), (2, (2, 1, 1), True), (8, (1,), False)])
def test_prelu_is_unknown_in_every_version_the_data_holds(
    tmp_path: Path, channels: int, slope: tuple[int, ...], variant: bool
) -> None:
    m = _QDQ(channels)
    x = m.qdq("input")
    y = m.op("PRelu", [x, m.const("slope", slope)], "prelu")
    model = open_graph(m.save(tmp_path / "prelu.onnx", y, [1, channels, 16, 16]))
    for version in ("2.1.0", "2.2.0", "3.0.0", "4.0.1"):
        (node,) = _nodes(predict_placement(model, version), "PRelu")
        assert node["kind"] == "unknown", (version, node)
        if variant:  # keyed apart: the per-channel form never borrows a plain PRelu's rows
            assert node["rule"] == "attribute"
            assert (f"PRelu with a slope of {channels} values (per-channel slope)"
                    in node["reason"])
        else:
            assert node["rule"] == "unknown"
            assert node["reason"].endswith("shows PRelu")


def test_space_to_depth_pair_around_a_convolution_is_unknown(tmp_path: Path) -> None:
    m = _QDQ()
    x = m.qdq("input")
    s2d = m.op("SpaceToDepth", [x], "s2d", blocksize=2)
    conv = m.op("Conv", [s2d, m.const("w", (32, 32, 3, 3))], "conv", pads=[1, 1, 1, 1])
    d2s = m.op("DepthToSpace", [conv], "d2s", blocksize=2)
    plan = predict_placement(open_graph(m.save(tmp_path / "pair.onnx", d2s, [1, 8, 16, 16])),
                             "4.0.1")
    kinds = {n["op_type"]: (n["kind"], n["rule"]) for n in plan["nodes"]
             if n["op_type"] in ("SpaceToDepth", "Conv", "DepthToSpace")}
    # DepthToSpace alone is hybrid in 4.0 (the front end's nearest-Resize rebuild); around
    # a convolution it is another form, not decided by those rows
    assert kinds == {"SpaceToDepth": ("unknown", "attribute"), "Conv": ("unknown", "attribute"),
                     "DepthToSpace": ("unknown", "attribute")}


def test_a_prelu_without_its_slope_is_not_a_crash(tmp_path: Path) -> None:
    """ONNX shape inference lets a one-input PRelu through (the checker would not): the
    predictor still answers, unknown, instead of failing on the missing slope."""
    m = _QDQ()
    y = m.op("PRelu", [m.qdq("input")], "p")
    plan = predict_placement(open_graph(m.save(tmp_path / "p.onnx", y, [1, 8, 16, 16])), "2.2.0")
    assert [(n["kind"], n["rule"]) for n in _nodes(plan, "PRelu")] == [("unknown", "unknown")]


def test_depth_to_space_after_another_operator_is_the_plain_one(tmp_path: Path) -> None:
    """Only a DepthToSpace reading a convolution is keyed apart: one after a Relu is the
    operator the 4.0 tables show (hybrid: the front end's nearest-Resize rebuild)."""
    m = _QDQ(32)
    x = m.op("Relu", [m.qdq("input")], "relu")
    y = m.op("DepthToSpace", [x], "d2s", blocksize=2)
    plan = predict_placement(open_graph(m.save(tmp_path / "d.onnx", y, [1, 8, 32, 32])), "4.0.1")
    (node,) = _nodes(plan, "DepthToSpace")
    assert (node["kind"], node["rule"]) == ("hybrid", "hybrid")
    # and one fed straight by the model's input (no producer at all) too
    m = _QDQ(32)
    m.nodes.append(helper.make_node("DepthToSpace", ["input"], ["out"], name="d", blocksize=2))
    plan = predict_placement(open_graph(m.save(tmp_path / "i.onnx", "out", [1, 8, 32, 32])),
                             "4.0.1")
    assert _nodes(plan, "DepthToSpace")[0]["rule"] != "attribute"


@pytest.mark.skipif(not (SHARED / "real-cases").is_dir(), reason="../shared is absent")
def test_tflite_convolution_dilations_are_read() -> None:
    """The TFLite reader keeps each CONV_2D/DEPTHWISE_CONV_2D's dilation factors: all 37
    convolutions of the real blazeface model have 1x1 (none is keyed apart)."""
    graph = open_graph(SHARED / "real-cases" / "n6-blazeface-2profiles"
                       / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite")
    dilations = [n.attrs["dilations"] for n in graph.nodes if n.op_type == "Conv"]
    assert len(dilations) == 37 and all(d == [1, 1] for d in dilations)

"""The placement plan of a small model, read by hand (fast; no ../shared needed).

The table here is written for the test (file names made up, said so), so that every
rule's outcome, the grouping, the counts and the text are checked against what a reader
works out from the model and the table, not against another run of the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from onnx import helper
from test_placement_attributes import _QDQ

from pytest_stedge.oracle.model.files import open_graph
from pytest_stedge.oracle.placement.predict import (
    HYBRID_TEXT,
    format_plan,
    placement_summary,
    predict_placement,
)
from pytest_stedge.oracle.placement.table import SCHEMA


def _rows(kind: str, *where: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"version": "2.2.0", "kind": kind, "file": f, "line": n, "count": 1} for f, n in where]


TABLE = {"schema": SCHEMA, "runs": [], "versions": {"2.2": {
    "Conv": {"sw": 0, "hybrid": 0, "hw": 5, "rows": _rows("hw", ("made-up/a.txt", 3))},
    "Softmax": {"sw": 3, "hybrid": 0, "hw": 0,
                "rows": _rows("sw", ("made-up/b.txt", 9), ("made-up/b.txt", 12),
                              ("made-up/c.txt", 1))},
    "Concat": {"sw": 0, "hybrid": 2, "hw": 0, "rows": _rows("hybrid", ("made-up/d.txt", 4))},
    "DequantizeLinear(float)": {"sw": 1, "hybrid": 0, "hw": 0,
                                "rows": _rows("sw", ("made-up/g.txt", 7))},
    "Relu": {"sw": 1, "hybrid": 0, "hw": 1, "rows": _rows("sw", ("made-up/e.txt", 5))
             + _rows("hw", ("made-up/f.txt", 6))},
}, "3.0": {}}}


def _model(tmp_path: Path, convs_first: int = 2) -> Path:
    """conv x N -> Softmax -> Concat(self, self) -> Relu -> PRelu -> conv, all int8 QDQ."""
    m = _QDQ()
    x = m.qdq("input")
    for i in range(convs_first):
        x = m.op("Conv", [x, m.const(f"w{i}", (8, 8, 1, 1))], f"conv{i}")
    x = m.op("Softmax", [x], "sm", axis=1)
    x = m.op("Concat", [x, x], "cat", axis=1)
    x = m.op("Relu", [x], "relu")
    x = m.op("PRelu", [x, m.const("slope", (1,))], "prelu")
    x = m.op("Conv", [x, m.const("wl", (8, 16, 1, 1))], "last")
    return m.save(tmp_path / f"m{convs_first}.onnx", x, [1, 8, 16, 16])


@pytest.fixture
def plan(tmp_path: Path) -> dict[str, Any]:
    return predict_placement(open_graph(_model(tmp_path)), "2.2.0", table=TABLE)


def test_each_operator_gets_the_rule_its_table_rows_decide(plan: dict[str, Any]) -> None:
    placed = {n["node"]: (n["kind"], n.get("rule")) for n in plan["nodes"] if n["kind"] != "folded"}
    assert placed == {
        "conv0": ("HW", "mapped"), "conv1": ("HW", "mapped"), "sm": ("SW", "not-mapped"),
        "cat": ("hybrid", "hybrid"), "relu": ("unknown", "unknown"),  # rows disagree
        "prelu": ("unknown", "unknown"), "last": ("HW", "mapped")}
    # every Q/DQ pair around them folds: 2 for the input, 2 after each of the 7 operators
    assert sum(1 for n in plan["nodes"] if n["kind"] == "folded") == 16
    assert plan["counts"] == {"sw": 1, "hybrid": 1, "unknown": 2}
    assert (plan["software_ops"], plan["hybrid_ops"], plan["unknown_ops"]) == (
        ["Softmax"], ["Concat"], ["PRelu", "Relu"])
    assert plan["table_versions"] == ["2.2", "3.0"] and plan["version_line"] == "2.2"
    sm = next(n for n in plan["nodes"] if n["node"] == "sm")
    # one citation per file, first row of each: b.txt:9, not b.txt:12
    assert sm["evidence"] == ["made-up/b.txt:9", "made-up/c.txt:1"]
    assert sm["reason"] == ("Softmax is not mapped to the NPU in 2.2 (SW 3, hybrid 0, HW 0 "
                            "epochs in 2.2)")
    relu = next(n for n in plan["nodes"] if n["node"] == "relu")
    # disagreeing rows are both cited; nothing was inserted by the front end
    assert relu["evidence"] == ["made-up/e.txt:5", "made-up/f.txt:6"] and "inserted" not in relu
    prelu = next(n for n in plan["nodes"] if n["node"] == "prelu")
    assert "evidence" not in prelu  # no row at all
    assert relu["reason"] == ("unknown in this version: the real runs of 2.2 disagree (SW 1, "
                              "hybrid 0, HW 1 epochs in 2.2)")


def test_plan_groups_hardware_runs_and_keeps_each_software_epoch(plan: dict[str, Any]) -> None:
    assert plan["epochs"] == [
        {"kind": "HW", "ops": ["Conv", "Conv"], "nodes": ["conv0", "conv1"]},
        {"kind": "SW", "ops": ["Softmax"], "nodes": ["sm"], "epochs": 1, "rule": "not-mapped"},
        {"kind": "hybrid", "ops": ["Concat"], "nodes": ["cat"], "epochs": 1, "rule": "hybrid"},
        {"kind": "unknown", "ops": ["Relu", "PRelu"], "nodes": ["relu", "prelu"]},
        {"kind": "HW", "ops": ["Conv"], "nodes": ["last"]},
    ]


def test_plan_text(plan: dict[str, Any]) -> None:
    assert format_plan(plan) == [
        "placement (2.2.0, table line 2.2): 1 SW epochs, 1 hybrid, 2 operator epochs unknown",
        "  software (Cortex-M55): Softmax",
        f"  hybrid ({HYBRID_TEXT}): Concat",
        "  unknown in this version: PRelu, Relu",
        "  plan:",
        "    HW          Conv, Conv",
        "    SW      x1  Softmax  [not-mapped]",
        "    hybrid  x1  Concat  [hybrid]",
        "    unknown     Relu, PRelu",
        "    HW          Conv",
        "  why:",
        ("    SW      sm (Softmax): Softmax is not mapped to the NPU in 2.2 (SW 3, hybrid 0, HW "
        "0 epochs in 2.2) [made-up/b.txt:9; made-up/c.txt:1]"),
        ("    hybrid  cat (Concat): Concat ran in hybrid epochs in 2.2 (SW 0, hybrid 2, HW 0 "
        f"epochs in 2.2): {HYBRID_TEXT} [made-up/d.txt:4]"),
        ("    unknown relu (Relu): unknown in this version: the real runs of 2.2 disagree (SW 1, "
        "hybrid 0, HW 1 epochs in 2.2) [made-up/e.txt:5; made-up/f.txt:6]"),
        ("    unknown prelu (PRelu): unknown in this version: no real epoch table of 2.2 shows "
        "PRelu"),
    ]
    short = format_plan(plan, limit=3)
    assert short[5:9] == ["    HW          Conv, Conv", "    SW      x1  Softmax  [not-mapped]",
                          "    hybrid  x1  Concat  [hybrid]", "    ... 2 more groups (--json has all)"]
    assert short[-1] == "    ... 1 more (--json has all)" and len(short) == 14
    exact = format_plan(plan, limit=5)
    assert not any(line.startswith("    ...") for line in exact)
    four = format_plan(plan, limit=4)  # 5 groups, 4 reasons: only the groups are cut
    assert [line for line in four if line.startswith("    ...")] == [
        "    ... 1 more groups (--json has all)"]


def test_the_text_lists_forty_groups_and_reasons_by_default(tmp_path: Path) -> None:
    m = _QDQ()
    x = m.qdq("input")
    for i in range(41):  # 41 software epochs, each its own group and reason
        x = m.op("Softmax", [x], f"sm{i}", axis=1)
    plan = predict_placement(open_graph(m.save(tmp_path / "s.onnx", x, [1, 8, 16, 16])),
                             "2.2.0", table=TABLE)
    lines = format_plan(plan)
    assert plan["counts"]["sw"] == 41
    assert lines.count("    SW      x1  Softmax  [not-mapped]") == 40
    assert "    ... 1 more groups (--json has all)" in lines
    assert lines[-1] == "    ... 1 more (--json has all)" and lines[-2].startswith("    SW      sm39 ")


def test_long_hardware_runs_are_cut_after_six(tmp_path: Path) -> None:
    for convs, shown in ((6, "Conv, Conv, Conv, Conv, Conv, Conv"),
                         (7, "Conv, Conv, Conv, Conv, Conv, Conv ... (+1)")):
        plan = predict_placement(open_graph(_model(tmp_path, convs)), "2.2.0", table=TABLE)
        assert format_plan(plan)[5] == f"    HW          {shown}"


def test_no_software_no_why_and_epoch_controller(tmp_path: Path) -> None:
    m = _QDQ()
    x = m.op("Conv", [m.qdq("input"), m.const("w", (8, 8, 1, 1))], "conv")
    model = open_graph(m.save(tmp_path / "c.onnx", x, [1, 8, 16, 16]))
    plain = predict_placement(model, "2.2.0", table=TABLE)
    assert format_plan(plain) == [
        "placement (2.2.0, table line 2.2): 0 SW epochs, 0 hybrid, 0 operator epochs unknown",
        "  plan:", "    HW          Conv"]
    for option in ("--enable-epoch-controller", "--eec"):
        ec = predict_placement(model, "2.2.0", options=["--Os", option], table=TABLE)
        assert ec["epochs"] == [{"kind": "EC", "ops": ["Conv"], "nodes": ["conv"]}]
    assert predict_placement(model, "2.2.0", options=["--Os"], table=TABLE)["epochs"][0]["kind"] == "HW"
    # the shipped table by default: 2.2 ran Conv on the NPU
    assert predict_placement(model, "2.2.0")["nodes"][-3]["rule"] == "mapped"


def test_a_run_stores_the_summary_once_per_model_and_version(tmp_path: Path) -> None:
    model = _model(tmp_path)
    first = placement_summary(model, "2.2.0")
    assert placement_summary(model, "2.2.0") is first
    assert set(first) == {"version_line", "counts", "software_ops", "hybrid_ops", "unknown_ops"}
    other = placement_summary(model, "4.0.1")
    assert other is not first and other["version_line"] == "4.0"


def test_semantic_rules_cite_the_runs_that_show_them(tmp_path: Path) -> None:
    """A Softmax left in float at the output: the DequantizeLinear feeding it converts to
    float and the Softmax computes in float, both on the Cortex-M55 whatever the table
    says; the rows of the same form are cited (the float Softmax has none of its own: the
    plain Softmax's software rows are)."""
    m = _QDQ()
    x = m.op("Conv", [m.qdq("input"), m.const("w", (8, 8, 1, 1))], "conv")
    m.nodes.append(helper.make_node("Softmax", [x], ["probs"], name="sm", axis=1))
    plan = predict_placement(open_graph(m.save(tmp_path / "f.onnx", "probs", [1, 8, 16, 16])),
                             "2.2.0", table=TABLE)
    placed = {n["node"]: n for n in plan["nodes"] if n["kind"] != "folded"}
    dq = placed["conv_qdq_DQ"]
    assert (dq["kind"], dq["rule"], dq["evidence"]) == ("SW", "float-conversion",
                                                        ["made-up/g.txt:7"])
    sm = placed["sm"]
    assert (sm["kind"], sm["rule"]) == ("SW", "float-tensor")
    assert sm["evidence"] == ["made-up/b.txt:9", "made-up/c.txt:1"]
    assert sm["reason"] == ("Softmax is not quantized (it reads or writes a float tensor): the "
                            "Cortex-M55 runs it in float")

"""What the epoch kinds mean, operator by operator, and how operators move between two
runs (parsers/epoch_kinds.py, verdict/placement.py): fast unit tests, figures read off
the real yolov8n 4.0.1 and blazeface 2.2.0 reports by hand (epoch ids and operators as
their tables print them) or computed by hand for the made-up tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.parsers.epoch_kinds import (
    HYBRID_TEXT,
    SOFTWARE_TEXT,
    UNNAMED,
    explain,
    format_moves,
    moves_between,
    op_counts,
    ops_by_kind,
    placement_moves,
    summary_lines,
)
from pytest_stedge.verdict.placement import (
    baseline_moves,
    counted_moves,
    format_by_operator,
    format_placement_changes,
    moves_by_operator,
    unnamed_note,
)

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases"
YOLO8 = REAL / "n6-yolo-micro-onnx" / "yolov8n_micro_224" / "4.0.1-aistudio" / "yolov8n_micro_224.txt"
BLAZEFACE_TXT = REAL / "n6-blazeface-2profiles" / "2.2.0-n6-allmems-O3-cubemx" / "network_generate_report.txt"
real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-cases is absent")


def _epochs(*entries: tuple[int, str, list[str]], **counts: int) -> dict[str, Any]:
    return {**counts, "list": [{"id": i, "kind": k, "ops": ops} for i, k, ops in entries]}


@real
def test_yolov8n_software_and_hybrid_operators_apart() -> None:
    from pytest_stedge.parsers import parse_runs

    # the AI Studio log holds the generate and the board's validate: the epochs are the build's
    epochs = next(r for r in parse_runs(YOLO8) if r["command"] == "generate")["epochs"]
    # yolov8n_micro_224.txt: SW epochs 115 Softmax, 118 DequantizeLinear, 119 Sub(float),
    # 120 and 121 QuantizeLinear; hybrid 52 and 62 DepthToSpace, 53 64 94 108 111 Concat,
    # 113 Transpose
    assert ops_by_kind(epochs) == {
        "sw": ["DequantizeLinear", "QuantizeLinear", "Softmax", "Sub"],
        "hybrid": ["Concat", "DepthToSpace", "Transpose"],
        "sw_epochs": [115, 118, 119, 120, 121],
        "hybrid_epochs": [52, 53, 62, 64, 94, 108, 111, 113],
    }
    assert explain(epochs) == [
        f"SW ops: DequantizeLinear, QuantizeLinear, Softmax, Sub ({SOFTWARE_TEXT})",
        ("hybrid ops: Concat, DepthToSpace, Transpose (epoch 52, 53, 62, 64, 94, 108, 111, "
        f"113): {HYBRID_TEXT}"),
    ]
    assert op_counts(epochs) == {
        "Concat": {"sw": 0, "hybrid": 5}, "DepthToSpace": {"sw": 0, "hybrid": 2},
        "Transpose": {"sw": 0, "hybrid": 1}, "Softmax": {"sw": 1, "hybrid": 0},
        "DequantizeLinear": {"sw": 1, "hybrid": 0}, "Sub": {"sw": 1, "hybrid": 0},
        "QuantizeLinear": {"sw": 2, "hybrid": 0}}


@real
def test_a_bare_question_mark_row_is_explained_without_an_operator() -> None:
    from pytest_stedge.parsers import parse_file

    epochs = dict(parse_file(BLAZEFACE_TXT))["epochs"]  # `epoch 76 ??`, no c_info beside it
    lines = explain(epochs)
    assert lines[1] == ("hybrid ops: operators not printed (2.x `??` rows name none; the run's "
                        f"c_info does) (epoch 76): {HYBRID_TEXT}")
    assert op_counts(epochs)[UNNAMED] == {"sw": 0, "hybrid": 1}


def test_explain_edges() -> None:
    assert explain(None) == [] and explain({}) == []
    assert explain(_epochs((1, "hw", ["Conv"]), hw=1)) == []
    # a software count without its list: the operators are not printed
    assert explain({"sw": 2, "list": []}) == [
        f"SW ops: operators not printed ({SOFTWARE_TEXT})"]
    # a hybrid epoch listed without the count: still explained, by id
    assert explain(_epochs((9, "hybrid", ["Concat"]))) == [
        f"hybrid ops: Concat (epoch 9): {HYBRID_TEXT}"]
    many = _epochs(*((i, "hybrid", ["Split"]) for i in range(1, 15)), hybrid=14)
    assert explain(many)[0] == (f"hybrid ops: Split (epoch 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "
                                f"12 ... (+2)): {HYBRID_TEXT}")
    # exactly 12 (yolov11n 4.0.1 has 12 hybrid epochs): all listed, no "(+0)"
    twelve = _epochs(*((i, "hybrid", ["Split"]) for i in range(1, 13)), hybrid=12)
    assert explain(twelve)[0] == (f"hybrid ops: Split (epoch 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "
                                  f"11, 12): {HYBRID_TEXT}")


def test_ops_by_kind_strips_the_printed_form_and_keeps_order_of_ids() -> None:
    epochs = _epochs((3, "sw", ["Sub(float)"]), (1, "sw", ["Sub", "Add (x)"]), (2, "ec", ["Conv"]),
                     (5, "hybrid", ["Concat"]), (6, "sw", []))
    split = ops_by_kind(epochs)
    assert split == {"sw": ["Add", "Sub"], "hybrid": ["Concat"], "sw_epochs": [3, 1, 6],
                     "hybrid_epochs": [5]}
    # only a trailing "(...)" is the printed form: other brackets stay part of the name
    odd = ops_by_kind(_epochs((1, "sw", ["Pad(x) y", "Op)"])))
    assert odd["sw"] == ["Op)", "Pad(x) y"]


def test_op_counts_count_epochs_not_mentions_and_name_the_gaps() -> None:
    assert op_counts(None) is None and op_counts({}) is None
    # an epoch naming Sub twice counts once; 3 SW epochs counted, 2 listed: 1 not named
    epochs = _epochs((1, "sw", ["Sub(float)", "Sub"]), (2, "sw", ["Sub"]), (3, "hw", ["Conv"]),
                     sw=3, hybrid=1)
    assert op_counts(epochs) == {"Sub": {"sw": 2, "hybrid": 0},
                                 UNNAMED: {"sw": 1, "hybrid": 1}}
    # a listed epoch without operators is not named either; more listed than counted is no gap
    assert op_counts(_epochs((1, "hybrid", []), (2, "hybrid", ["X"]), hybrid=1)) == {
        UNNAMED: {"sw": 0, "hybrid": 1}, "X": {"sw": 0, "hybrid": 1}}


def test_moves_between_classifies_each_operator() -> None:
    old = {"A": {"sw": 1, "hybrid": 0}, "B": {"sw": 2, "hybrid": 0}, "C": {"sw": 1, "hybrid": 1},
           "D": {"sw": 1, "hybrid": 0}}
    new = {"A": {"sw": 2, "hybrid": 0}, "B": {"sw": 1, "hybrid": 1}, "C": {"sw": 1, "hybrid": 0},
           "D": {"sw": 1, "hybrid": 0}, "E": {"sw": 0, "hybrid": 1}}
    moves = moves_between(old, new)
    assert [(m["op"], m["kind"]) for m in moves] == [
        ("A", "to software"), ("E", "to software"), ("B", "software <-> hybrid"),
        ("C", "to hardware")]
    assert moves[1]["base"] == {"sw": 0, "hybrid": 0}
    assert format_moves(moves) == [
        "to software: A (SW 1 -> 2, hybrid 0 -> 0)", "to software: E (SW 0 -> 0, hybrid 0 -> 1)",
        "software <-> hybrid: B (SW 2 -> 1, hybrid 0 -> 1)",
        "to hardware: C (SW 1 -> 1, hybrid 1 -> 0)"]
    assert moves_between(None, new) == [] and moves_between(old, None) == []
    assert moves_between({}, {}) == [] and moves_between(old, old) == []
    assert placement_moves(_epochs((1, "sw", ["A"])), _epochs((1, "hw", ["A"]), hw=1)) == [
        {"op": "A", "kind": "to hardware", "base": {"sw": 1, "hybrid": 0},
         "head": {"sw": 0, "hybrid": 0}}]


def test_summary_lines_put_prediction_and_validation_beside_the_epochs() -> None:
    result = {"epochs": _epochs((4, "sw", ["Softmax"]), (7, "hybrid", ["Concat"]), sw=1, hybrid=1),
              "oracle": {"placement": {"counts": {"sw": 1, "hybrid": 0}}},
              "validation": {"outputs": [{"cos": 0.99971}, {"cos": 0.9991}, {"snr": 3}],
                             "duration_ms": 12.5}}
    assert summary_lines([("case generate 4.0.1", result), ("idle", {"epochs": {"sw": 0}})]) == [
        "software and hybrid epochs (Cortex-M55):",
        ("  case generate 4.0.1: SW 1 (Softmax); hybrid ?? 1 (Concat; epoch 7); oracle predicted "
        "SW 1, hybrid 0; validation cos 0.9991, 12.5 ms"),
        f"  ??: {HYBRID_TEXT}"]
    only_sw = summary_lines([("c", {"epochs": {"sw": 2}, "validation": {"duration_ms": 3}})])
    assert only_sw == ["software and hybrid epochs (Cortex-M55):",
                       "  c: SW 2 (operators not printed); validation 3 ms"]
    assert summary_lines([("c", {})]) == []
    # an item with nothing off the NPU before one with: the later one is still listed
    assert summary_lines([("idle", {"epochs": {"hw": 3}}), ("c", {"epochs": {"sw": 1}})]) == [
        "software and hybrid epochs (Cortex-M55):", "  c: SW 1 (operators not printed)"]
    assert summary_lines([("c", {"epochs": {"hybrid": 1}})])[1] == "  c: hybrid ?? 1 (not named)"


def _change(case: str, comparable: bool = True, **kw: Any) -> dict[str, Any]:
    moves = moves_between({"Softmax": {"sw": 1, "hybrid": 0}, "Pad": {"sw": 1, "hybrid": 0}},
                          {"Softmax": {"sw": 2, "hybrid": 0}})
    return {"case_name": case, "stage": "generate", "comparable": comparable, "note": "",
            "moves": moves, **kw}


def test_moves_by_operator_groups_cases_comparable_first() -> None:
    groups = moves_by_operator([_change("b"), _change("a", False, note="options hash differs"),
                                _change("c")])
    assert [(g["kind"], g["op"], [c["case_name"] for c in g["cases"]]) for g in groups] == [
        ("to software", "Softmax", ["b", "c", "a"]), ("to hardware", "Pad", ["b", "c", "a"])]
    lines = format_by_operator(groups, limit=2)
    assert lines[0] == ("to software: Softmax: b generate (SW 1 -> 2, hybrid 0 -> 0); "
                        "c generate (SW 1 -> 2, hybrid 0 -> 0); ... (+1)")
    # exactly as many cases as the limit: all shown, no "(+0)"
    assert format_by_operator(groups, limit=3)[0].endswith("hash differs)")
    # the terminal's default: 8 cases an operator, then how many more
    nine = moves_by_operator([_change(f"c{i}") for i in range(9)])
    assert format_by_operator(nine)[0].endswith("c7 generate (SW 1 -> 2, hybrid 0 -> 0); ... (+1)")
    full = format_by_operator(groups)
    assert full[1].endswith("a generate (SW 1 -> 0, hybrid 0 -> 0, not comparable: options "
                            "hash differs)")
    assert format_by_operator(moves_by_operator([_change("u", unnamed="base: 1 SW/hybrid epoch "
                                                          "names no operator")]))[0].endswith(
        "(SW 1 -> 2, hybrid 0 -> 0, base: 1 SW/hybrid epoch names no operator)")


def test_diff_text_says_why_a_pair_is_not_comparable() -> None:
    assert format_placement_changes([], "2.2.0", "3.0.0") == []
    lines = format_placement_changes(
        [_change("a"), _change("b", False, note="model sha256 differs", unnamed="head: 2 "
                                                "SW/hybrid epochs name no operator")],
        "2.2.0", "3.0.0")
    assert lines == [
        "operators moved between the NPU and the Cortex-M55 (2.2.0 -> 3.0.0):",
        "  a generate",
        "    to software: Softmax (SW 1 -> 2, hybrid 0 -> 0)",
        "    to hardware: Pad (SW 1 -> 0, hybrid 0 -> 0)",
        ("  b generate  (not comparable: model sha256 differs)  (head: 2 SW/hybrid epochs name "
        "no operator)"),
        "    to software: Softmax (SW 1 -> 2, hybrid 0 -> 0)",
        "    to hardware: Pad (SW 1 -> 0, hybrid 0 -> 0)"]


def test_pair_comparability_is_the_gates() -> None:
    counts = {"counts": {"A": {"sw": 1, "hybrid": 0}}}
    moved = {"counts": {"A": {"sw": 2, "hybrid": 0}}}
    same = counted_moves("c", "s", {"model_sha256": "m", "options_hash": "o", **counts},
                         {"model_sha256": "m", "options_hash": "o", **moved})
    # the gate's words (verdict.identity): which hash differs, which side's options are unknown
    assert same is not None and same["comparable"] and same["note"] == "" and same["unnamed"] == ""
    other = counted_moves("c", "s", {"model_sha256": "m", "options_hash": "o", **counts},
                          {"model_sha256": "n", "options_hash": None, "version": "4.0.1", **moved})
    assert other is not None and not other["comparable"]
    assert other["note"].startswith("model differs: sha256 m")
    assert "4.0.1" in other["note"] and "options" in other["note"]
    assert counted_moves("c", "s", {**counts}, {**counts}) is None


def test_baseline_moves_and_unnamed_note() -> None:
    epochs = _epochs((1, "sw", ["A"]), (2, "hybrid", []), sw=1, hybrid=1)
    assert baseline_moves({"A": {"sw": 1, "hybrid": 0}, UNNAMED: {"sw": 0, "hybrid": 1}},
                          {"epochs": epochs}, True, "") is None
    moved = baseline_moves({"A": {"sw": 0, "hybrid": 0}}, {"epochs": epochs}, False, "why")
    assert moved == {"comparable": False, "note": "why",
                     "unnamed": "head: 1 SW/hybrid epoch names no operator",
                     "moves": moves_between({"A": {"sw": 0, "hybrid": 0}}, op_counts(epochs))}
    assert baseline_moves(None, {"epochs": epochs}, True, "") is None
    assert unnamed_note({UNNAMED: {"sw": 2, "hybrid": 1}}, {}) == (
        "base: 3 SW/hybrid epochs name no operator")
    assert unnamed_note(None, None) == ""


def test_store_pairs_without_a_result_on_either_side_are_skipped(tmp_path: Path) -> None:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.rows import ItemRow
    from pytest_stedge.verdict.placement import store_placement_changes

    epochs = {"a": _epochs((1, "sw", ["A"]), sw=1), "b": _epochs((1, "hw", ["A"]), hw=1)}
    with Store.open(tmp_path / "db.duckdb") as store:
        for version, results in (("1.0", {"kept": epochs["a"], "lost": epochs["a"]}),
                                 ("2.0", {"kept": epochs["b"], "lost": None})):
            run = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run, [ItemRow(
                nodeid=f"{case}[{version}]", case_name=case, stage="generate", version=version,
                outcome="failed" if e is None else "passed", model_sha256="m", options_hash="o",
                result=None if e is None else {"epochs": e}) for case, e in results.items()])
            store.finish_run(run, status="passed", exitstatus=0)
        changes = store_placement_changes(store, "1.0", "2.0", [
            ("kept", "generate"), ("lost", "generate"), ("absent", "generate")])
    assert [(c["case_name"], [m["kind"] for m in c["moves"]]) for c in changes] == [
        ("kept", ["to hardware"])]

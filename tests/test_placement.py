"""The N6 placement oracle against the real epoch tables of ../shared (issue 27).

Each rule is checked on the real runs that show it (file:line in ../shared); the
leave-one-model-out score is computed from the real runs; the committed table must be
the one the build script makes from them. Skips, saying why, where ../shared is absent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.model.files import open_graph
from pytest_stedge.oracle.placement.predict import predict_placement
from pytest_stedge.oracle.placement.runs import Run, load_runs
from pytest_stedge.oracle.placement.scoring import leave_one_model_out
from pytest_stedge.oracle.placement.table import build_table, dump_table, load_table, lookup

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REAL = SHARED / "real-cases"
BLAZEFACE = REAL / "n6-blazeface-2profiles" / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite"
MOBILENET_V1 = REAL / "n6-mobilenetv1-cubemx" / "mobilenetv1_a025_224_fft_int8.tflite"
MOBILENET_V2 = REAL / "n6-mobilenetv2-224-onnx-irv" / "rev-A-ir10" / "mobilenet_v2_224_int8.onnx"
YOLO8 = REAL / "n6-yolo-micro-onnx" / "yolov8n_micro_224" / "yolov8n_micro_224_int8.onnx"
YOLO11 = REAL / "n6-yolo-micro-onnx" / "yolov11n_micro_224" / "yolov11n_micro_224_int8.onnx"

pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason="../shared/real-cases is absent: the placement rules are checked "
    "on the real runs there")


@cache
def _runs() -> list[Run]:
    return load_runs(SHARED)


def _plan(model: Path, version: str, *, leave_out: bool = True, **kw: Any) -> dict[str, Any]:
    """The plan with the table rebuilt without the model's own runs (it never teaches itself)."""
    runs = _runs()
    md5 = next((r.model_md5 for r in runs if r.model_file and SHARED / r.model_file == model),
               None)
    table = build_table(runs, exclude_model=md5 if leave_out else None)
    return predict_placement(open_graph(model), version, table=table, **kw)


def _by_rule(plan: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    out: Counter[tuple[str, str, str]] = Counter()
    for node in plan["nodes"]:
        if node.get("kind") in ("SW", "hybrid", "unknown"):
            out[(node["tool_op"], node["kind"], node.get("rule", ""))] += node["epochs"]
    return out


def test_float_conversions_and_channel_pad_transposes_blazeface_2_2() -> None:
    # n6-blazeface-2profiles/2.2.0-profile-default-cli/analyze/network_analyze_report.txt:232
    # "85 of which 27 implemented in software": :236 QuantizeLinear, :242.. 22 Transpose,
    # 4 DequantizeLinear at the four float outputs.
    plan = _plan(BLAZEFACE, "2.2.0")
    rules = _by_rule(plan)
    assert rules[("QuantizeLinear", "SW", "float-conversion")] == 1
    assert rules[("DequantizeLinear", "SW", "float-conversion")] == 4
    # 11 channel Pads, each wrapped in two Transposes the front end inserts
    assert rules[("Transpose", "SW", "front-end-layout")] == 22
    assert plan["counts"] == {"sw": 27, "hybrid": 0, "unknown": plan["counts"]["unknown"]}
    transposes = [n for n in plan["nodes"] if n.get("tool_op") == "Transpose"]
    assert all(n["op_type"] == "Pad" and n["inserted"] == "around a channel Pad"
               for n in transposes)
    # with its own runs left out, the Transpose rule cites the YAMNet runs it learned from
    assert any("yamnet" in cite for cite in transposes[0]["evidence"])


def test_integer_requantization_stays_on_the_npu_mobilenet_v1() -> None:
    # n6-mobilenetv1-cubemx/2.2.0-cubemx/network_generate_report.txt: 33 epochs, 2 SW
    # (:177 Softmax, DequantizeLinear); the uint8 -> int8 input Quantize is not among them.
    plan = _plan(MOBILENET_V1, "2.2.0")
    rules = _by_rule(plan)
    assert rules[("Softmax", "SW", "not-mapped")] == 1
    assert rules[("DequantizeLinear", "SW", "float-conversion")] == 1
    quantize = next(n for n in plan["nodes"] if n["op_type"] == "Quantize")
    assert quantize["kind"] != "SW" and quantize["rule"] != "float-conversion"
    assert plan["counts"]["sw"] == 2


def test_reduce_mean_not_followed_by_quantize_is_a_float_island_mobilenet_v2() -> None:
    # n6-mobilenetv2-224-onnx-irv/rev-B-ir9/2.2.0-cubemx/mobilenet_v2_224.txt:111-113
    # epochs 54-56: DequantizeLinear, GlobalAveragePool, QuantizeLinear in software
    # (ReduceMean -> Reshape -> QuantizeLinear: no Q right after the mean).
    for version in ("2.2.0", "4.0.1"):
        plan = _plan(MOBILENET_V2, version)
        rules = _by_rule(plan)
        assert rules[("GlobalAveragePool", "SW", "float-tensor")] == 1
        assert rules[("DequantizeLinear", "SW", "float-conversion")] == 1
        assert rules[("QuantizeLinear", "SW", "float-conversion")] == 1
        assert plan["counts"]["sw"] == 3 and plan["counts"]["hybrid"] == 0


def test_activation_matmul_and_float_constant_yolo11_4_0_1() -> None:
    # n6-yolo-micro-onnx/yolov11n_micro_224/4.0.1-aistudio/yolov11n_micro_224.txt:152,153,161,162
    # four SW "Conv" epochs: the two attention MatMuls (2 heads each) of activations.
    plan = _plan(YOLO11, "4.0.1")
    rules = _by_rule(plan)
    assert rules[("Conv", "SW", "activation-operands")] == 4
    # the Sub of a float anchor grid: "Sub(float)" with its DQ before and 2 Q after
    assert rules[("Sub", "SW", "float-tensor")] == 1
    assert rules[("QuantizeLinear", "SW", "float-conversion")] == 2
    div = next(n for n in plan["nodes"] if n["op_type"] == "Div")
    assert div["kind"] != "SW"  # a scalar float divisor folds into the scale


def test_hybrid_depth_to_space_learned_from_the_other_yolo() -> None:
    # yolov8n_micro_224.txt:143,147 two Hybrid DepthToSpace (its two nearest Resize); with
    # yolov8n's runs left out, yolov11n_micro_224.txt:164,169 teaches the rule.
    plan = _plan(YOLO8, "4.0.1")
    d2s = [n for n in plan["nodes"] if n.get("tool_op") == "DepthToSpace"]
    assert [n["kind"] for n in d2s] == ["hybrid", "hybrid"]
    assert all(n["op_type"] == "Resize" for n in d2s)
    assert any("yolov11n" in c for c in d2s[0]["evidence"])
    assert "`??`" in d2s[0]["reason"]


def test_mixed_or_absent_evidence_is_unknown_never_a_guess() -> None:
    plan = _plan(YOLO8, "4.0.1")
    concat = [n for n in plan["nodes"] if n.get("tool_op") == "Concat"]
    # yolov11n ran 3 of its 21 Concats hybrid, the rest in hardware: the data does not decide
    assert concat and all(n["kind"] == "unknown" and "disagree" in n["reason"] for n in concat)
    later = predict_placement(open_graph(MOBILENET_V1), "9.9.0", table=load_table())
    conv = next(n for n in later["nodes"] if n["op_type"] == "Conv")
    assert conv["kind"] == "unknown" and "no real epoch table of 9.9" in conv["reason"]
    # the float conversion is software in every version: the NPU has no float unit
    assert later["counts"]["sw"] == 1


def test_epoch_controller_option_makes_hardware_epochs_ec() -> None:
    plan = _plan(MOBILENET_V1, "2.2.0", options=["--enable-epoch-controller"])
    kinds = {n["kind"] for n in plan["nodes"] if n["op_type"] == "Conv"}
    assert kinds == {"EC"}


def test_leave_one_model_out_meets_the_targets() -> None:
    score = leave_one_model_out(SHARED, _runs())
    summary = score.summary()
    # 41 runs with their model; 8 more (YAMNet, tiny YOLO, the OE-only MobileNetV2) teach only
    assert summary["runs"] >= 40
    assert summary["precision"] >= 0.9, summary
    assert summary["recall"] >= 0.9, summary
    assert summary["exact_counts"] >= 0.7, summary
    blazeface = [r for r in score.runs if "profile-default-cli" in r.folder]
    assert blazeface and all(r.exact and r.real_counts == (27, 0) for r in blazeface)


def test_committed_table_is_what_the_script_builds() -> None:
    committed = (Path(__file__).resolve().parents[1] / "pytest_stedge" / "oracle" / "placement" / "data"
                 / "n6_placement.json").read_text(encoding="utf-8")
    assert dump_table(build_table(_runs())) == committed, (
        "stale: rebuild with python tools/build_placement_table.py")
    table = load_table()
    # every SW/hybrid row carries its provenance, file and line in ../shared
    transpose = lookup(table, "2.2.0", "Transpose+inserted")
    assert transpose.kind == "sw" and transpose.counts["sw"] == 88  # 22 x 4 blazeface runs
    row = transpose.rows[0]
    line = (SHARED / row["file"]).read_text(encoding="utf-8").splitlines()[row["line"] - 1]
    assert "-SW-" in line and "Transpose" in line


def test_bad_table_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"schema": "other"}), encoding="utf-8")
    with pytest.raises(OracleError, match=r"t\.json: field 'schema'"):
        load_table(bad)


def test_cli_prints_plan_and_json_per_node() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "oracle",
                          str(MOBILENET_V2), "--version", "2.2.0", "--json"],
                         capture_output=True, text=True, check=True).stdout
    placement = json.loads(out)["placement"]
    gap = next(n for n in placement["nodes"] if n.get("tool_op") == "GlobalAveragePool")
    assert gap["kind"] == "SW" and gap["rule"] == "float-tensor" and gap["node"] == "node_mean"
    text = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "oracle",
                           str(BLAZEFACE), "--version", "2.2.0"],
                          capture_output=True, text=True, check=True).stdout
    assert "27 SW epochs, 0 hybrid" in text
    assert "software (Cortex-M55): DequantizeLinear, QuantizeLinear, Transpose" in text


def test_parse_explains_hybrid_epochs() -> None:
    sample = SHARED / "stedgeai-samples" / "n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs"
    # network_generate_report.txt:310 "epoch 76  ??"; its c_info names Dequantize_245 (SW part)
    text = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "parse",
                           str(sample)], capture_output=True, text=True, check=True).stdout
    assert ("hybrid ops  DequantizeLinear (epoch 76): hybrid epoch: the NPU and the Cortex-M55 "
            "share it; the tool prints it `??` in 2.x reports") in text
    assert "SW ops      DequantizeLinear, QuantizeLinear, Transpose" in text
    alone = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "parse",
                            str(sample / "network_generate_report.txt")],
                           capture_output=True, text=True, check=True).stdout
    assert "(epoch 76): hybrid epoch" in alone and "operators not printed" in alone
    yolo = REAL / "n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio/yolov8n_micro_224.txt"
    out = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "parse", str(yolo)],
                         capture_output=True, text=True, check=True).stdout
    assert "hybrid ops  Concat, DepthToSpace, Transpose (epoch 52, 53, 62, 64, 94, 108, 111, 113)" \
        in out
    assert "SW ops      DequantizeLinear, QuantizeLinear, Softmax, Sub (" in out


def test_a_run_stores_predicted_beside_real_placement(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from pytest_stedge.store.database import Store

    case = Path(__file__).resolve().parents[1] / "corpus" / "real" / "n6-blazeface-128"
    result = pytester.runpytest_subprocess(
        str(case), "--stedge-models", str(REAL), "--stedge-db", str(tmp_path / "db.duckdb"),
        "--stedge-report", "none", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    assert result.ret == 0, result.stdout.str()
    with Store.open(tmp_path / "db.duckdb", create=False) as store:
        run = store.get_run(1)
    items = [i for i in run["items"] if i["stage"] == "generate"]
    assert len(items) == 2  # the two profiles of the real runs
    for item in items:
        stored = item["result"]
        predicted = stored["oracle"]["placement"]
        # real: 27 SW (profile-default) or 26 SW + 1 hybrid (n6-allmems-O3); predicted 27 SW
        assert predicted["counts"]["sw"] == 27 and predicted["counts"]["hybrid"] == 0
        assert predicted["software_ops"] == ["DequantizeLinear", "QuantizeLinear", "Transpose"]
        assert stored["epochs"]["sw"] + stored["epochs"]["hybrid"] == 27


def test_placement_moves_between_two_real_runs() -> None:
    from pytest_stedge.parsers import parse_path
    from pytest_stedge.parsers.epoch_kinds import format_moves, placement_moves

    cases = REAL / "n6-blazeface-2profiles"
    default = parse_path(cases / "2.2.0-profile-default-cli" / "generate-2025-08-25")
    allmems = parse_path(cases / "2.2.0-n6-allmems-O3-cubemx")
    # profile-default: 4 SW DequantizeLinear; n6-allmems-O3: 3 SW + 1 hybrid (epoch 76)
    moves = placement_moves(default["epochs"], allmems["epochs"])
    assert format_moves(moves) == [
        "software <-> hybrid: DequantizeLinear (SW 4 -> 3, hybrid 0 -> 1)"]
    # the other way round, and an operator that leaves the NPU counts as moved to software
    assert placement_moves(allmems["epochs"], default["epochs"])[0]["kind"] == \
        "software <-> hybrid"
    no_sw = {"list": [{"id": 1, "kind": "hw", "ops": []}]}
    moved = placement_moves(no_sw, default["epochs"])
    assert [m["op"] for m in moved if m["kind"] == "to software"] == [
        "DequantizeLinear", "QuantizeLinear", "Transpose"]
    assert moved[-1]["head"] == {"sw": 22, "hybrid": 0}


def test_terminal_summary_lists_software_and_hybrid_epochs(pytester: pytest.Pytester) -> None:
    case = Path(__file__).resolve().parents[1] / "corpus" / "real" / "n6-yolov8n-micro-224"
    result = pytester.runpytest_subprocess(
        str(case), "--stedge-db", str(pytester.path / "db.duckdb"), "--stedge-report", "none",
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}")
    out = result.stdout.str()
    # yolov8n_micro_224.txt: 5 SW, 8 hybrid (epochs 52, 53, 62, 64, 94, 108 ...), on board
    assert "software and hybrid epochs (Cortex-M55):" in out
    line = next(x for x in out.splitlines() if "hybrid ?? 8" in x)
    assert "SW 5 (DequantizeLinear, QuantizeLinear, Softmax, Sub)" in line
    assert "(Concat, DepthToSpace, Transpose; epoch 52, 53, 62, 64, 94, 108 ... (+2))" in line
    assert "  ??: hybrid epoch: the NPU and the Cortex-M55 share it" in out
    # the board's own figures beside them (47.584 ms/inference in the console log)
    assert line.endswith("validation cos 0.9997, 47.584 ms")


def test_stedge_diff_lists_operators_moved_between_npu_and_cpu(tmp_path: Path) -> None:
    """No two versions in ../shared move an operator of one model (each model keeps its
    software operators across its versions), so the two real blazeface Results of one
    version under two profiles stand in for base and head: their DequantizeLinear moves
    from software into the hybrid epoch 76."""
    from pytest_stedge.parsers import parse_path
    from pytest_stedge.result import flat_metrics
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.rows import ItemRow

    cases = REAL / "n6-blazeface-2profiles"
    results = {"2.2.0": parse_path(cases / "2.2.0-profile-default-cli" / "generate-2025-08-25"),
               "2.2.1": parse_path(cases / "2.2.0-n6-allmems-O3-cubemx")}
    db = tmp_path / "db.duckdb"
    with Store.open(db) as store:
        for version, result in results.items():
            run = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run, [ItemRow(
                nodeid=f"corpus/blazeface::generate[{version}]", case_name="blazeface",
                stage="generate", version=version, outcome="passed", model_sha256="m1",
                options_hash="o1", metrics=flat_metrics(dict(result)), result=dict(result))])
            store.finish_run(run, status="passed", exitstatus=0)
    out = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "diff", "2.2.0",
                          "2.2.1", "--db", str(db)], capture_output=True, text=True,
                         check=False, cwd=tmp_path).stdout
    assert "operators moved between the NPU and the Cortex-M55 (2.2.0 -> 2.2.1):" in out
    assert "    software <-> hybrid: DequantizeLinear (SW 4 -> 3, hybrid 0 -> 1)" in out
    doc = json.loads(subprocess.run(
        [sys.executable, "-m", "pytest_stedge.cli.main", "diff", "2.2.0", "2.2.1", "--db",
         str(db), "--json"], capture_output=True, text=True, check=False, cwd=tmp_path).stdout)
    assert doc["placement_moves"][0]["moves"][0]["op"] == "DequantizeLinear"

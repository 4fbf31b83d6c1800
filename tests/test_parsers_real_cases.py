"""Every run folder of ../shared/real-cases parses, with the figures its report states.

Expected values are written by hand from the files (exec summary, "Memory usage information"
totals, "Epochs details", the X-cross row of "Evaluation report (summary)", the profiling
"nb sample(s)"/"duration"). Where a case has several versions, each version's own figures.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from conftest import built_run

from pytest_stedge.parsers import parse_path, parse_runs
from pytest_stedge.result import flat_metrics

CASES = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases"


@pytest.fixture(autouse=True)
def _need_cases(shared_dir: Path) -> None:
    if not CASES.is_dir():
        pytest.skip(f"real cases not available: {CASES} is absent")


def _run(
    version: str,
    weights: int | None,
    activations: int | None,
    macc: int | None,
    epochs: tuple[int, ...] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """epochs = (total, hw, ec, sw, hybrid); extra: rmse, snr, cos, samples, duration, ops."""
    return {
        "version": version,
        "weights": weights,
        "activations": activations,
        "macc": macc,
        "epochs": epochs,
        **extra,
    }


MICRO = "n6-micro-convs-4flows"
# Dev Cloud 2.2.0 consoles: the generate summary prints "macc : 0" (not computed on the NPU)
# and the only other MACC is the validate summary's, which describes the validation front end
# (TFLite-side tensor names): the Result has no MACC for them.
RUNS: dict[str, dict[str, Any]] = {
    # --- n6-micro-convs-4flows: 8 models x (2.2 CubeMX on board, 2.2 Dev Cloud, 4.0 AI Studio, 4.0 Dev Cloud)
    f"{MICRO}/conv2d_16f_3x3/2.2.0-cubemx-target": _run(
        "2.2.0",
        497,
        12_304,
        1_900_560,
        (2, 2, 0, 0, 0),
        rmse=0.000117739,
        samples=10,
        duration=0.079,
    ),
    f"{MICRO}/conv2d_16f_3x3/2.2.0-devcloud": _run(
        "2.2.0",
        497,
        12_304,
        None,
        (2, 2, 0, 0, 0),
        rmse=0.000166509,
        samples=1,
        duration=0.087,
    ),
    f"{MICRO}/conv2d_16f_3x3/4.0.0-aistudio": _run(
        "4.0.0",
        497,
        12_304,
        1_802_240,
        (1, 1, 0, 0, 0),
        rmse=0.000105309,
        snr=61.773553,
        samples=10,
        duration=0.122,
    ),
    f"{MICRO}/conv2d_16f_3x3/4.0.0-devcloud": _run(
        "4.0.0",
        497,
        12_304,
        1_802_240,
        (1, 1, 0, 0, 0),
        rmse=0.000166509,
        snr=57.896423,
        samples=1,
        duration=0.086,
    ),
    f"{MICRO}/conv2d_1x1/2.2.0-cubemx-target": _run(
        "2.2.0", 225, 12_320, 655_392, (2, 2, 0, 0, 0), rmse=0.000082811, samples=10, duration=0.146
    ),
    f"{MICRO}/conv2d_1x1/2.2.0-devcloud": _run(
        "2.2.0", 225, 12_320, None, (2, 2, 0, 0, 0), rmse=0.000098978, samples=1, duration=0.153
    ),
    f"{MICRO}/conv2d_1x1/4.0.0-aistudio": _run(
        "4.0.0",
        225,
        143_360,
        458_752,
        (2, 2, 0, 0, 0),
        rmse=0.000093899,
        snr=60.055332,
        samples=10,
        duration=0.373,
    ),
    f"{MICRO}/conv2d_1x1/4.0.0-devcloud": _run(
        "4.0.0",
        225,
        143_360,
        458_752,
        (2, 2, 0, 0, 0),
        rmse=0.000098978,
        snr=59.614825,
        samples=1,
        duration=0.288,
    ),
    f"{MICRO}/conv2d_32f_5x5/2.2.0-cubemx-target": _run(
        "2.2.0",
        2_529,
        12_320,
        10_092_576,
        (2, 2, 0, 0, 0),
        rmse=0.000054931,
        samples=10,
        duration=0.154,
    ),
    f"{MICRO}/conv2d_32f_5x5/2.2.0-devcloud": _run(
        "2.2.0", 2_529, 12_320, None, (2, 2, 0, 0, 0), rmse=0.0, samples=1, duration=0.161
    ),
    f"{MICRO}/conv2d_32f_5x5/4.0.0-aistudio": _run(
        "4.0.0",
        2_529,
        12_320,
        9_961_472,
        (1, 1, 0, 0, 0),
        rmse=0.000054931,
        snr=64.672508,
        samples=10,
        duration=0.219,
    ),
    f"{MICRO}/conv2d_32f_5x5/4.0.0-devcloud": _run(
        "4.0.0",
        2_529,
        12_320,
        9_961_472,
        (1, 1, 0, 0, 0),
        rmse=0.0,
        snr=math.inf,
        samples=1,
        duration=0.161,
    ),
    # the report's "1.262 MB" totals round 1,323,008 B (its section table) to 1,323,303 B
    f"{MICRO}/conv2d_32f_7x7/2.2.0-cubemx-target": _run(
        "2.2.0",
        4_833,
        1_323_008,
        19_529_760,
        (5, 5, 0, 0, 0),
        rmse=0.000074958,
        samples=10,
        duration=0.462,
    ),
    f"{MICRO}/conv2d_32f_7x7/2.2.0-devcloud": _run(
        "2.2.0",
        4_833,
        1_323_008,
        None,
        (5, 5, 0, 0, 0),
        rmse=0.000074958,
        samples=1,
        duration=0.473,
    ),
    # validate on the board timed out ("LOAD ERROR"): no metrics, one error diagnostic
    f"{MICRO}/conv2d_32f_7x7/4.0.0-aistudio": _run(
        "4.0.0", 4_833, 1_585_152, 19_660_800, (5, 5, 0, 0, 0), load_error=True
    ),
    f"{MICRO}/conv2d_32f_7x7/4.0.0-devcloud/conv2d_32f_7x7_report.txt": _run(
        "4.0.0", 4_833, 1_585_152, 19_660_800, (5, 5, 0, 0, 0)
    ),
    f"{MICRO}/conv2d_32f_7x7/4.0.0-devcloud/conv2d_32f_7x7_epochController_report.txt": _run(
        "4.0.0", 4_704, 1_585_152, 19_660_800, (5, 0, 5, 0, 0)
    ),
    f"{MICRO}/conv2d_3x3/2.2.0-cubemx-target": _run(
        "2.2.0",
        993,
        12_320,
        3_801_120,
        (2, 2, 0, 0, 0),
        rmse=0.000062930,
        samples=10,
        duration=0.147,
    ),
    f"{MICRO}/conv2d_3x3/2.2.0-devcloud": _run(
        "2.2.0", 993, 12_320, None, (2, 2, 0, 0, 0), rmse=0.0, samples=1, duration=0.155
    ),
    f"{MICRO}/conv2d_3x3/4.0.0-aistudio": _run(
        "4.0.0",
        993,
        12_320,
        3_604_480,
        (1, 1, 0, 0, 0),
        rmse=0.000067972,
        snr=62.844343,
        samples=10,
        duration=0.208,
    ),
    f"{MICRO}/conv2d_3x3/4.0.0-devcloud": _run(
        "4.0.0",
        993,
        12_320,
        3_604_480,
        (1, 1, 0, 0, 0),
        rmse=0.0,
        snr=math.inf,
        samples=1,
        duration=0.155,
    ),
    # "12.062 kB" in the totals; the section table states 12,352 B
    f"{MICRO}/conv2d_64f_3x3/2.2.0-cubemx-target": _run(
        "2.2.0",
        1_985,
        12_352,
        7_602_240,
        (2, 2, 0, 0, 0),
        rmse=0.000059275,
        samples=10,
        duration=0.284,
    ),
    f"{MICRO}/conv2d_64f_3x3/2.2.0-devcloud": _run(
        "2.2.0",
        1_985,
        12_352,
        None,
        (2, 2, 0, 0, 0),
        rmse=0.000060815,
        samples=1,
        duration=0.291,
    ),
    f"{MICRO}/conv2d_64f_3x3/4.0.0-aistudio": _run(
        "4.0.0",
        1_985,
        12_352,
        7_208_960,
        (1, 1, 0, 0, 0),
        rmse=0.000062317,
        snr=60.836911,
        samples=10,
        duration=0.383,
    ),
    f"{MICRO}/conv2d_64f_3x3/4.0.0-devcloud": _run(
        "4.0.0",
        1_985,
        12_352,
        7_208_960,
        (1, 1, 0, 0, 0),
        rmse=0.000060815,
        snr=61.000686,
        samples=1,
        duration=0.291,
    ),
    f"{MICRO}/conv2d_pool/2.2.0-cubemx-target": _run(
        "2.2.0", 497, 12_304, 1_916_944, (2, 2, 0, 0, 0), rmse=0.0, samples=10, duration=0.080
    ),
    f"{MICRO}/conv2d_pool/2.2.0-devcloud": _run(
        "2.2.0", 497, 12_304, None, (2, 2, 0, 0, 0), rmse=0.0, samples=1, duration=0.087
    ),
    f"{MICRO}/conv2d_pool/4.0.0-aistudio": _run(
        "4.0.0",
        497,
        12_304,
        1_802_240,
        (1, 1, 0, 0, 0),
        rmse=0.0,
        snr=math.inf,
        samples=10,
        duration=0.121,
    ),
    f"{MICRO}/conv2d_pool/4.0.0-devcloud": _run(
        "4.0.0",
        497,
        12_304,
        1_802_240,
        (1, 1, 0, 0, 0),
        rmse=0.0,
        snr=math.inf,
        samples=1,
        duration=0.088,
    ),
    f"{MICRO}/depthwise_3x3/2.2.0-cubemx-target": _run(
        "2.2.0", 65, 24_576, 135_171, (3, 3, 0, 0, 0), rmse=0.000138588, samples=10, duration=0.042
    ),
    f"{MICRO}/depthwise_3x3/2.2.0-devcloud": _run(
        "2.2.0", 65, 24_576, None, (3, 3, 0, 0, 0), rmse=0.0, samples=1, duration=0.050
    ),
    f"{MICRO}/depthwise_3x3/4.0.0-aistudio": _run(
        "4.0.0",
        65,
        12_291,
        116_736,
        (1, 1, 0, 0, 0),
        rmse=0.000195994,
        snr=59.156270,
        samples=10,
        duration=0.053,
    ),
    f"{MICRO}/depthwise_3x3/4.0.0-devcloud": _run(
        "4.0.0",
        129,
        12_291,
        337_920,
        (1, 1, 0, 0, 0),
        rmse=0.0,
        snr=math.inf,
        samples=1,
        duration=0.031,
    ),
    # --- BlazeFace, two profiles of 2.2.0
    "n6-blazeface-2profiles/2.2.0-n6-allmems-O3-cubemx": _run(
        "2.2.0",
        166_225,
        540_672,
        32_092_044,
        (95, 68, 0, 26, 1),
        ops=["DequantizeLinear", "QuantizeLinear", "Transpose"],
    ),
    "n6-blazeface-2profiles/2.2.0-profile-default-cli/analyze": _run(
        "2.2.0",
        166_225,
        540_672,
        32_092_044,
        (85, 58, 0, 27, 0),
        ops=["DequantizeLinear", "QuantizeLinear", "Transpose"],
    ),
    "n6-blazeface-2profiles/2.2.0-profile-default-cli/generate-2025-08-24": _run(
        "2.2.0", 166_225, 540_672, 32_092_044, (85, 58, 0, 27, 0)
    ),
    "n6-blazeface-2profiles/2.2.0-profile-default-cli/generate-2025-08-25": _run(
        "2.2.0", 166_225, 540_672, 32_092_044, (85, 58, 0, 27, 0)
    ),
    # the raw compiler c_info has no memory_footprint: its pools and buffers give the
    # figures the output folder's network_c_info.json states in its footprint
    "n6-blazeface-2profiles/2.2.0-profile-default-cli/generate-2025-08-25/st_ai_ws/neural_art__network": _run(
        "2.2.0", 166_225, 540_672, None, (85, 58, 0, 27, 0)
    ),
    # --- single-version and multi-version N6 cases
    "n6-mobilenetv1-cubemx/2.2.0-cubemx": _run(
        "2.2.0",
        329_537,
        602_112,
        42_378_954,
        (33, 31, 0, 2, 0),
        ops=["DequantizeLinear", "Softmax"],
    ),
    "n6-mobilenetv2-224-onnx-irv/rev-A-ir10/4.0.1-aistudio": _run(
        "4.0.1",
        3_669_793,
        2_107_392,
        312_031_800,
        (58, 0, 55, 3, 0),
        ops=["DequantizeLinear", "GlobalAveragePool", "QuantizeLinear"],
        rmse=0.144032702,
        snr=22.845850,
        cos=0.997453,
        samples=10,
        duration=49.338,
    ),
    # the generate summary prints "macc : 0" (not computed on the NPU); the 301,277,256 of
    # the validate summary is the validation front end's (ONNX-side names), not this graph's
    "n6-mobilenetv2-224-onnx-irv/rev-B-ir9/2.2.0-cubemx": _run(
        "2.2.0",
        4_137_361,
        2_107_392,
        None,
        (58, 55, 0, 3, 0),
        rmse=0.141914070,
        cos=0.997552,
        samples=10,
        duration=20.694,
    ),
    "n6-mobilenetv2-qdq-3versions/2.1.0": _run(
        "2.1.0", 367_233, 245_760, 22_464_344, (56, 55, 0, 1, 0), ops=["Softmax"]
    ),
    "n6-mobilenetv2-qdq-3versions/2.2.0": _run(
        "2.2.0", 367_201, 245_760, 22_464_344, (56, 55, 0, 1, 0), ops=["Softmax"]
    ),
    "n6-mobilenetv2-qdq-3versions/3.0.0": _run(
        "3.0.0", 212_609, 245_760, 22_464_344, (56, 55, 0, 1, 0), ops=["Softmax"]
    ),
    "n6-mobilenetv2-qdq-3versions/3.0.0/st_ai_ws/neural_art__network": _run(
        "3.0.0", 212_609, 245_760, None, (56, 55, 0, 1, 0)
    ),
    "n6-packetqc-tcn-qwen2/qwen2-qdq/4.0.0-host": _run("4.0.0", 1_383_956, 327_960, 241_438_339),
    "n6-packetqc-tcn-qwen2/tcn/4.0.0": _run("4.0.0", 492_504, 23_936, 15_657_686),
    "n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio": _run(
        "4.0.1",
        3_158_049,
        401_408,
        537_501_776,
        (108, 0, 95, 5, 8),
        ops=[
            "Concat",
            "DepthToSpace",
            "DequantizeLinear",
            "QuantizeLinear",
            "Softmax",
            "Sub",
            "Transpose",
        ],
        rmse=0.579068601,
        snr=32.534821,
        cos=0.999730,
        samples=10,
        duration=47.584,
    ),
    "n6-yolo-micro-onnx/yolov11n_micro_224/4.0.1-aistudio": _run(
        "4.0.1",
        2_621_233,
        457_856,
        399_666_001,
        (151, 0, 129, 10, 12),
        rmse=1.387147665,
        snr=24.906430,
        cos=0.998501,
        samples=10,
        duration=42.939,
    ),
    # --- MCU cases
    "stm32-mlp-validate-host/actor_joint_12d_c860k/2.2.0/analyze": _run(
        "2.2.0", 20_748, 512, 5_345
    ),
    "stm32-mlp-validate-host/actor_joint_12d_c860k/2.2.0/generate": _run(
        "2.2.0", 20_748, 512, 5_345
    ),
    "stm32-mlp-validate-host/actor_joint_12d_c860k/2.2.0/validate-host": _run(
        "2.2.0", 20_748, 512, 5_345, rmse=0.000000295, cos=1.0, samples=9, duration=0.020
    ),
    "stm32-mlp-validate-host/actor_joint_1p05M_shared3D/2.2.0/generate": _run(
        "2.2.0", 21_004, 512, 5_409
    ),
    "stm32-mlp-validate-host/actor_joint_1p05M_shared3D/2.2.0/validate-host": _run(
        "2.2.0", 21_004, 512, 5_409, rmse=0.000000073, cos=1.0, samples=10, duration=0.018
    ),
    "stm32-mnist-onnx-3runs/1.0.0-19894-devcloud-stm32f4": _run("1.0.0", 109_992, 3_760, 109_386),
    "stm32-mnist-onnx-3runs/1.0.0-19894-devcloud-stm32h7-split-weights": _run(
        "1.0.0", 109_992, 3_760, 109_386
    ),
    "stm32-mnist-onnx-3runs/1.0.0-19899-cubemx-analyze-stm32h7": _run(
        "1.0.0", 109_992, 3_760, 109_386
    ),
    "stm32f4-mobilenetv2-2builds/2.1.0-20182-devcloud": _run("2.1.0", 411_492, 339_796, 19_094_660),
    "stm32f4-mobilenetv2-2builds/2.1.0-20194-cubemx": _run(
        "2.1.0", 411_492, 266_292, 19_094_660, io=[49_152, 4]
    ),
    "stm32h7-policy-3regens/2.2.0/run-2026-06-19": _run("2.2.0", 161_444, 1_160, 44_937),
    "stm32h7-policy-3regens/2.2.0/run-2026-06-24": _run("2.2.0", 161_444, 1_160, 44_937),
    "stm32h7-policy-3regens/2.2.0/run-2026-07-18": _run("2.2.0", 161_444, 1_160, 44_937),
    "stm32u3-yamnet-hsp/4.0.0-hsp-run1": _run(
        "4.0.0", 137_876, 101_440, 23_927_578, target="stm32u3"
    ),
    "stm32u3-yamnet-hsp/4.0.0-hsp-run2": _run(
        "4.0.0", 137_876, 101_440, 23_927_578, target="stm32u3"
    ),
    "stm32u3-yamnet-hsp/4.0.0-no-hsp": _run(
        "4.0.0", 137_876, 158_720, 23_927_578, target="stm32u3"
    ),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_real_case_run_figures(run: str) -> None:
    expected = RUNS[run]
    runs = parse_runs(CASES / run)
    # A log or folder holding a generate and a validate is two runs, never one Result: the
    # build's figures are the generate's, the metrics the validate's.
    result = next((r for r in runs if r["command"] != "validate"), runs[0])
    validated = next((r for r in runs if r["command"] == "validate"), result)
    assert {r["tool"]["version"] for r in runs} == {expected["version"]}
    if validated is not result and result.get("neural_art"):
        assert "epochs" not in validated  # nothing of the build leaks into the validate
    memory = result.get("memory") or {}
    assert memory.get("weights_bytes") == expected["weights"]
    assert memory.get("activations_bytes") == expected["activations"]
    assert result.get("macc") == expected["macc"]
    if expected["epochs"] is None:
        assert "epochs" not in result
    else:
        epochs = result["epochs"]
        assert tuple(epochs[k] for k in ("total", "hw", "ec", "sw", "hybrid")) == expected["epochs"]
        assert result["neural_art"] is True
    if "ops" in expected:
        assert result["software_ops"] == expected["ops"]
    if "io" in expected:
        assert memory["io_bytes"] == expected["io"]
    if "target" in expected:
        assert result["target"] == expected["target"]
    result = validated
    metrics = flat_metrics(result)
    if "rmse" in expected:
        assert result["command"] == "validate"
        assert metrics["val_rmse"] == pytest.approx(expected["rmse"], rel=1e-3, abs=1e-9)
    if "snr" in expected:
        assert metrics["val_snr"] == pytest.approx(expected["snr"], rel=1e-6)
    if "cos" in expected:
        assert metrics["val_cos"] == pytest.approx(expected["cos"], abs=1e-6)
    if "samples" in expected:
        assert result["validation"]["samples"] == expected["samples"]
    if "duration" in expected:
        assert metrics["duration_ms"] == pytest.approx(expected["duration"])
    if expected.get("load_error"):
        assert "outputs" not in result.get("validation", {})
        assert [d["kind"] for d in result["diagnostics"]] == ["LoadError"]
        assert "read timeout" in result["diagnostics"][0]["message"]


def test_every_run_folder_of_the_real_cases_is_covered() -> None:
    """Each folder that holds a stedgeai report or c_info is asserted above."""
    folders = set()
    for path in CASES.rglob("*"):
        if (
            path.is_file()
            and (
                path.name.endswith(("_report.txt", "c_info.json"))
                or path.parent.name.endswith(("aistudio", "devcloud"))
            )
            and path.suffix in (".txt", ".json")
        ):
            folders.add(str(path.parent.relative_to(CASES)))
    covered = {run if not run.endswith(".txt") else str(Path(run).parent) for run in RUNS}
    assert folders - covered == set()


def test_the_same_model_across_versions_moves_the_figures_the_reports_state() -> None:
    """mobilenet_v2 128 QDQ: weights shrink in 3.0 (212,609 B vs 367,233 B in 2.1)."""
    by_version = {
        v: flat_metrics(parse_path(CASES / "n6-mobilenetv2-qdq-3versions" / v))
        for v in ("2.1.0", "2.2.0", "3.0.0")
    }
    assert [by_version[v]["weights_bytes"] for v in ("2.1.0", "2.2.0", "3.0.0")] == [
        367_233,
        367_201,
        212_609,
    ]
    assert {by_version[v]["epochs_sw"] for v in by_version} == {1.0}


def test_4x_boxed_table_with_epoch_controller_ranges_and_hybrids() -> None:
    result = built_run(CASES / "n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio")
    listing = result["epochs"]["list"]
    assert listing[0] == {"id": 1, "to": 51, "kind": "ec", "ops": []}
    assert {"id": 52, "kind": "hybrid", "ops": ["DepthToSpace"]} in listing
    assert {"id": 119, "kind": "sw", "ops": ["Sub(float)"]} in listing


def test_a_folder_with_two_different_runs_is_refused() -> None:
    """conv2d 7x7 on Dev Cloud 4.0: with and without epoch controller, side by side."""
    from pytest_stedge.errors import ReportParseError

    folder = CASES / f"{MICRO}/conv2d_32f_7x7/4.0.0-devcloud"
    with pytest.raises(ReportParseError, match="2 different generate runs") as info:
        parse_path(folder)
    assert info.value.path == folder


def test_ai_studio_target_name_is_the_target_option() -> None:
    # the console prints "target/series : stm32n6npu" for "--target stm32n6"
    assert (
        built_run(CASES / "n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio")["target"]
        == "stm32n6"
    )

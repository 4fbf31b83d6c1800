"""The oracle on every real (model, run) pair of ../shared/real-cases.

A pair is a public model file and the ST Edge AI Core outputs made from it, verified
by the MD5 the tool recorded. The floor must never exceed the tool's figure (a tool
that beats a floor means the floor's rules are wrong); tests/test_oracle_cinfo.py
measures every pair's c_info against its floor.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_stedge.oracle import analyze_model, explain_c_info
from pytest_stedge.oracle.memory.real_pairs import (
    RealPair,
    deployment_options,
    pair_row,
    real_pairs,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REAL = SHARED / "real-cases"
PAIRS: list[RealPair] = real_pairs(REAL) if REAL.is_dir() else []
needs_shared = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent (real pairs)")


def _id(pair: RealPair) -> str:
    return pair.label


@needs_shared
def test_every_case_with_a_public_model_gives_pairs() -> None:
    assert len(PAIRS) >= 55  # INDEX.md: about 55 runs of verified models
    cases = {p.case for p in PAIRS}
    # every case but the one whose source model was never committed
    assert len(cases) == 11 and "n6-mobilenetv2-qdq-3versions" not in cases
    assert not any("_OE_" in p.model.name for p in PAIRS)
    families = {pair_row(p)["family"] for p in PAIRS if p.case.startswith(("n6-packetqc", "n6-yolo", "stm32u3"))}
    assert families == {"n6-npu", "n6-sw", "mcu"}


@needs_shared
@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_floor_never_exceeds_the_tool(pair: RealPair) -> None:
    assert hashlib.md5(pair.model.read_bytes()).hexdigest() == pair.md5  # the verified model
    row = pair_row(pair)
    assert row["floor"] is not None and row["floor"] > 0
    assert row["floor"] <= pair.activations + pair.tolerance, row["report"]["peak"]
    assert row["expected"] >= row["floor"]


def _pair(label_start: str) -> RealPair:
    found = [p for p in PAIRS if p.label.startswith(label_start)]
    if not found:
        pytest.skip(f"{label_start}: not among the real pairs ({REAL} absent?)")
    return found[0]


@needs_shared
def test_micro_conv_floor_is_input_plus_output() -> None:
    # hand computation: the NPU streams CONV_2D (+ReLU) into MEAN, so only the 64x64x3
    # int8 input and the 16-byte output are stored: 12,288 + 16, the tool's own figure
    pair = _pair("n6-micro-convs-4flows/baseline_conv2d_16f_3x3_int8.tflite@conv2d_16f_3x3/4.0.0")
    row = pair_row(pair)
    assert row["floor"] == 64 * 64 * 3 + 16 == pair.activations == 12_304
    assert row["report"]["streamed_tensors"]  # the 65,536 B conv output is never stored


@needs_shared
def test_yolov8n_silu_is_fused_below_the_tool() -> None:
    pair = _pair("n6-yolo-micro-onnx/yolov8n_micro_224_int8.onnx")
    row = pair_row(pair)
    # input 3x224x224 int8 + model.0's fused Conv+SiLU output 16x112x112 int8
    assert row["floor"] == 3 * 224 * 224 + 16 * 112 * 112 == 351_232
    assert row["floor"] <= pair.activations == 401_408


@needs_shared
def test_yamnet_hsp_liveness_of_the_tool_buffers() -> None:
    pair = _pair("stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite@4.0.0-hsp-run1")
    result = explain_c_info(pair.model, pair.c_infos[0])
    pool = result["pools"][0]
    # plain liveness of the tool's buffers: conv2d_1 out 49,152 + conv2d_2 out 98,304
    assert pool["liveness_bytes"] == 49_152 + 98_304 == 147_456
    assert result["reported_bytes"] == 101_440


@needs_shared
def test_io_outside_the_activations_leave_the_floor() -> None:
    pair = _pair("stm32f4-mobilenetv2-2builds/mobilenet_v2_0.35_128_fft_int8.tflite@2.1.0-20194")
    assert "--no-inputs-allocation" in pair.options
    inside = analyze_model(pair.model, target="stm32f4")
    outside = analyze_model(pair.model, target="stm32f4", options=deployment_options(pair.options))
    assert outside["io_outside_activations"] and not inside["io_outside_activations"]
    assert outside["naive_bytes"] == inside["naive_bytes"] - 49_152 - 4  # uint8 input, f32 output


@needs_shared
def test_every_rule_cites_real_pairs() -> None:
    from pytest_stedge.oracle.memory import rules_mcu, rules_n6_npu, rules_n6_sw

    public = SHARED / "public-runs"
    labels = {p.label for p in PAIRS} | {p.label for p in real_pairs(public)}
    # the n6 rules cite some runs by their model file (OE model, run folder) without
    # the case's sub-folder: a citation must name a case and a model held there
    for module in (rules_mcu, rules_n6_npu, rules_n6_sw):
        for rule_id, text, evidence in module.RULES + getattr(module, "FLOOR", []):
            assert text, rule_id
            for label in evidence:
                case, rest = label.split("/", 1)
                model = rest.split("@", 1)[0]
                held = label in labels or any(
                    (root / case).is_dir() and any((root / case).rglob(model))
                    for root in (REAL, public)
                )
                assert held, f"{rule_id} cites {label}, which ../shared does not hold"


@needs_shared
def test_the_oracle_page_is_up_to_date() -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "real_pairs_table.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    import re

    below, total = map(int, re.search(r"floor <= the tool: (\d+) of (\d+)", done.stdout).groups())
    assert below == total == len(PAIRS) + len(real_pairs(SHARED / "public-runs"))


@needs_shared
def test_expected_ends_where_the_last_buffer_ends() -> None:
    # 4.0.0 allocates 12,291 B for the depthwise micro model: the 12,288 B input at 0 and
    # the 3 B output at the next 8-byte boundary; the pool is not rounded up to 12,296 B
    pair = _pair("n6-micro-convs-4flows/baseline_depthwise_3x3_int8.tflite@depthwise_3x3/4.0.0-aistudio")
    row = pair_row(pair)
    assert row["expected"] == row["floor"] == pair.activations == 12_291

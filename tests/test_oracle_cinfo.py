"""The tool's c_info buffers explained against the oracle: parts add up to the reported figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle import analyze_model, explain_c_info

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
KINDS = [
    "model",
    "tool_tensors",
    "cut_16bit",
    "copies",
    "float_conversions",
    "pad_layers",
    "scratch",
    "pool_split",
    "external_ram",
    "overlay",
    "alignment",
    "reuse_lost",
]


def _with_buffers() -> list[Path]:
    if not SHARED.is_dir():
        return []
    found = []
    for folder in ("real-cases", "stedgeai-samples"):
        for path in sorted((SHARED / folder).rglob("*c_info*.json")):
            data = json.loads(path.read_text())
            if data.get("buffers") and data.get("memory_pools"):
                found.append(path)
    return found


C_INFOS = _with_buffers()


def _id(path: Path) -> str:
    return str(path.relative_to(SHARED))


def test_the_samples_are_there() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent")
    assert len(C_INFOS) >= 40
    assert any("n6" in str(p) for p in C_INFOS)


@pytest.mark.parametrize("path", C_INFOS, ids=_id)
def test_explanation_sums_to_the_reported_figure(path: Path) -> None:
    data = json.loads(path.read_text())
    result = explain_c_info(None, path)
    reported = (data.get("memory_footprint") or {}).get("activations")
    if reported is not None:
        assert result["reported_bytes"] == reported
    assert sum(p["bytes"] for p in result["parts"]) == result["reported_bytes"]
    assert [p["kind"] for p in result["parts"]] == KINDS[1:]
    # Only overlay may be negative: the address union of live buffers never exceeds
    # their liveness, and the pools' high-water marks never fall below the union.
    assert result["tool_bound_bytes"] > 0
    for part in result["parts"]:
        if part["kind"] != "overlay":
            assert part["bytes"] >= 0, part
        assert part["words"]
    for pool in result["pools"]:
        assert pool["union_bytes"] <= pool["liveness_bytes"]
        assert pool["union_bytes"] <= pool["used_bytes"] or not pool["buffers"]


def _case(*parts: str) -> Path:
    path = SHARED.joinpath("real-cases", *parts)
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


PAIRS = {
    "tcn-4.0.0": (
        "n6-packetqc-tcn-qwen2/tcn/model_npu_int8.onnx",
        "n6-packetqc-tcn-qwen2/tcn/4.0.0/network_c_info.json",
    ),
    "policy-2.2.0": (
        "stm32h7-policy-3regens/policy.onnx",
        "stm32h7-policy-3regens/2.2.0/run-2026-06-19/network_policy.onnx_c_info.json",
    ),
    "mobilenetv2-OE-3.0.0": (
        "n6-mobilenetv2-qdq-3versions/3.0.0/mobilenet_v2_128_0.5_QDQ_quant_OE_3_3_1.onnx",
        "n6-mobilenetv2-qdq-3versions/3.0.0/network_c_info.json",
    ),
    "blazeface-OE-2.2.0": (
        (
            "n6-blazeface-2profiles/2.2.0-profile-default-cli/generate-2025-08-25/"
            "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0.onnx"
        ),
        "n6-blazeface-2profiles/2.2.0-profile-default-cli/generate-2025-08-25/network_c_info.json",
    ),
    "mnist-1.0.0": (
        "stm32-mnist-onnx-3runs/mnist_model-2_PerChannel_quant_random_1.onnx",
        "stm32-mnist-onnx-3runs/1.0.0-19894-devcloud-stm32h7-split-weights/network_c_info.json",
    ),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_model_and_its_c_info_side_by_side(pair: str) -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS[pair])
    report = analyze_model(model)
    result = explain_c_info(report, c_info)
    assert result["pairing"]["status"] == "signature"  # the c_info records the model's MD5
    assert result["parts"][0] == {
        "kind": "model",
        "bytes": report["lower_bound_bytes"],
        "words": result["parts"][0]["words"],
    }
    assert sum(p["bytes"] for p in result["parts"]) == result["reported_bytes"]
    assert result["gap_bytes"] == result["reported_bytes"] - report["lower_bound_bytes"]


def test_float_policy_has_no_gap() -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["policy-2.2.0"])
    result = explain_c_info(model, c_info)  # analysed as the c_info's own run: stm32h7
    assert result["gap_bytes"] == 0 and result["tool_bound_bytes"] == 1160


def test_scratch_and_external_ram_are_named() -> None:
    mnist = explain_c_info(
        None,
        _case(
            "stm32-mnist-onnx-3runs",
            "1.0.0-19894-devcloud-stm32h7-split-weights",
            "network_c_info.json",
        ),
    )
    parts = {p["kind"]: p["bytes"] for p in mnist["parts"]}
    assert parts["scratch"] == 2848  # the Dense layer's int16 scratch buffer
    f4 = explain_c_info(
        None, _case("stm32f4-mobilenetv2-2builds", "2.1.0-20182-devcloud", "network_c_info.json")
    )
    parts = {p["kind"]: p["bytes"] for p in f4["parts"]}
    assert f4["external_bytes"] == 202_800  # POOL_EXTERNAL_SDRAM's used bytes
    assert parts["external_ram"] > 0
    assert "POOL_EXTERNAL_SDRAM" in next(
        p["words"] for p in f4["parts"] if p["kind"] == "external_ram"
    )
    # the 65x65x48 pad output (202,800 B) laid over its 64x64x48 input: overlay
    assert parts["pad_layers"] > 0 and parts["overlay"] < 0
    assert parts["reuse_lost"] > 0


def test_c_info_from_another_model_is_refused() -> None:
    model = _case("n6-packetqc-tcn-qwen2", "tcn", "model_npu_int8.onnx")
    other = _case(
        "stm32h7-policy-3regens", "2.2.0", "run-2026-06-19", "network_policy.onnx_c_info.json"
    )
    with pytest.raises(OracleError, match="another model"):
        explain_c_info(model, other)


def test_c_info_without_buffers_and_bad_files(tmp_path: Path) -> None:
    target = (
        SHARED
        / "real-cases/n6-micro-convs-4flows/conv2d_1x1/2.2.0-cubemx-target/network_c_info.json"
    )
    if target.is_file():
        with pytest.raises(OracleError, match="no buffers"):
            explain_c_info(None, target)
    bad = tmp_path / "network_c_info.json"
    bad.write_text("{not json")
    with pytest.raises(OracleError, match="not a JSON c_info"):
        explain_c_info(None, bad)
    bad.write_text('{"foo": 1}')
    with pytest.raises(OracleError, match="json_schema_version"):
        explain_c_info(None, bad)


def test_oracle_command_with_c_info(capsys: pytest.CaptureFixture[str]) -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["tcn-4.0.0"])
    assert main(["oracle", str(model), "--c-info", str(c_info)]) == 0
    out = capsys.readouterr().out
    assert "floor (lower bound):    11,968 B" in out
    assert "reported activations 23,936 B" in out
    assert main(["oracle", str(model), "--c-info", str(c_info), "--tensors"]) == 0
    out = capsys.readouterr().out
    assert "tool buffers (pool @ offset, bytes, epochs):" in out
    assert "heap_overlay_pool @" in out and "scratch" in out
    assert main(["oracle", str(model), "--c-info", str(c_info), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["c_info"]["reported_bytes"] == 23_936
    other = _case(
        "stm32h7-policy-3regens", "2.2.0", "run-2026-06-19", "network_policy.onnx_c_info.json"
    )
    assert main(["oracle", str(model), "--c-info", str(other)]) == 2
    assert "another model" in capsys.readouterr().err


def test_mnist_gap_is_exactly_the_scratch_buffers() -> None:
    # QDQ MNIST: the float input only reaches a QuantizeLinear (through a Reshape), so
    # it is int8 on the target, like stedgeai makes it; the rest of the tool's figure is scratch.
    model, c_info = (_case(*p.split("/")) for p in PAIRS["mnist-1.0.0"])
    result = explain_c_info(model, c_info)
    parts = {p["kind"]: p["bytes"] for p in result["parts"]}
    assert parts["model"] == 912
    assert parts["tool_tensors"] == 0
    assert parts["scratch"] == 2848
    assert result["reported_bytes"] == 3760 and result["gap_bytes"] == 2848

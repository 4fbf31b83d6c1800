"""The tool's c_info buffers measured against the oracle: named parts, one unexplained figure.

Every part is a sum over named buffers of the c_info (or tensors of the model), none the
difference of two figures of a chain; the floor enters once, as the ``model`` part, and
what the parts do not account for is ``unexplained_bytes``. On every real c_info in
../shared nothing is left unexplained and only overlay is negative; a wrong floor shows
as a non-zero unexplained.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.errors import OracleError
from pytest_stedge.oracle import analyze_model, explain_c_info
from pytest_stedge.oracle.memory import explain_parts as cinfo_measure
from pytest_stedge.oracle.memory.real_pairs import deployment_options, real_pairs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def _with_buffers() -> list[Path]:
    if not SHARED.is_dir():
        return []
    found = []
    for folder in ("real-cases", "stedgeai-samples", "public-runs"):
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


def _kinds(result: dict[str, Any]) -> dict[str, int]:
    return {p["kind"]: p["bytes"] for p in result["parts"]}


@pytest.mark.parametrize("path", C_INFOS, ids=_id)
def test_the_tool_figure_is_measured_without_remainder(path: Path) -> None:
    data = json.loads(path.read_text())
    result = explain_c_info(None, path)
    reported = (data.get("memory_footprint") or {}).get("activations")
    if reported is not None:
        assert result["reported_bytes"] == reported
    assert result["unexplained_bytes"] == 0 and result["clean"]
    assert sum(p["bytes"] for p in result["parts"]) == result["reported_bytes"]
    assert result["tool_bound_bytes"] > 0
    for part in result["parts"]:
        assert part["bytes"] >= 0 or part["kind"] == "overlay", part
        assert part["words"]
        if part["bytes"]:
            assert part["buffers"], part  # every figure names what is behind it
    for pool in result["pools"]:
        assert pool["union_bytes"] <= pool["used_bytes"] or not pool["buffers"]


PAIRED = (
    [(p, c) for root in ("real-cases", "public-runs") for p in real_pairs(SHARED / root) for c in p.c_infos]
    if SHARED.is_dir()
    else []
)


@pytest.mark.parametrize("pair_c_info", PAIRED, ids=lambda pc: f"{pc[0].label}:{pc[1].name}")
def test_every_real_pair_is_explained_from_the_floor(pair_c_info: Any) -> None:
    pair, c_info = pair_c_info
    report = analyze_model(
        pair.model, target=pair.target, options=deployment_options(pair.options, pair.folder)
    )
    result = explain_c_info(report, c_info)
    assert result["pairing"]["status"] == "signature"
    kinds = _kinds(result)
    assert kinds["model"] == report["lower_bound_bytes"]
    assert result["unexplained_bytes"] == 0, result["floor_tensors_missing"]
    assert result["clean"] and result["floor_tensors_missing"] == []
    assert sum(kinds.values()) == result["reported_bytes"] == pair.activations


@pytest.mark.parametrize("wrong", [0.0, 0.5, 2.0, 10.0])
def test_a_wrong_floor_is_unexplained(wrong: float) -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["yamnet-hsp-4.0.0"])
    report = analyze_model(model, target="stm32u3")
    right = explain_c_info(report, c_info)
    assert right["unexplained_bytes"] == 0
    bad = dict(report, lower_bound_bytes=int(report["lower_bound_bytes"] * wrong))
    result = explain_c_info(bad, c_info)
    # the floor enters once, as the model part: the rest is measured the same way
    assert _kinds(result)["model"] == bad["lower_bound_bytes"]
    assert result["unexplained_bytes"] == report["lower_bound_bytes"] - bad["lower_bound_bytes"]
    assert not result["clean"]


def test_a_floor_tensor_the_tool_never_holds_is_unexplained() -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["yamnet-hsp-4.0.0"])
    report = analyze_model(model, target="stm32u3")
    ghost = dict(report["floor"], tensors=[*report["floor"]["tensors"], {"name": "ghost", "bytes": 123_456}])
    bad = dict(report, floor=ghost, lower_bound_bytes=report["lower_bound_bytes"] + 123_456)
    result = explain_c_info(bad, c_info)
    assert result["floor_tensors_missing"] == ["ghost"]
    assert result["unexplained_bytes"] == -123_456


def test_parts_do_not_depend_on_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["tcn-4.0.0"])
    report = analyze_model(model, target="stm32n6")
    first = _kinds(explain_c_info(report, c_info))
    # the kinds listed in reverse, the buffers and pools of the c_info shuffled
    monkeypatch.setattr(cinfo_measure, "ORDER", tuple(reversed(cinfo_measure.ORDER)))
    data = json.loads(c_info.read_text())
    random.Random(7).shuffle(data["buffers"])
    random.Random(8).shuffle(data["memory_pools"])
    shuffled = tmp_path / "network_c_info.json"
    shuffled.write_text(json.dumps(data))
    again = explain_c_info(report, shuffled)
    assert _kinds(again) == first
    assert next(p["kind"] for p in again["parts"]) != "model"  # the order did change


def _case(*parts: str) -> Path:
    path = SHARED.joinpath("real-cases", *parts)
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


PAIRS = {
    "yamnet-hsp-4.0.0": (
        "stm32u3-yamnet-hsp/yamnet_256_64x96_tl_int8_5_classes.tflite",
        "stm32u3-yamnet-hsp/4.0.0-hsp-run1/network_c_info.json",
    ),
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
    result = explain_c_info(model, c_info)  # analysed as the c_info's own run
    assert result["pairing"]["status"] == "signature"  # the c_info records the model's MD5
    assert result["parts"][0]["kind"] == "model"
    assert result["parts"][0]["bytes"] == result["oracle_lower_bound_bytes"]
    assert sum(p["bytes"] for p in result["parts"]) == result["reported_bytes"]
    assert result["unexplained_bytes"] == 0
    assert result["gap_bytes"] == result["reported_bytes"] - result["oracle_lower_bound_bytes"]


def test_float_policy_has_no_gap() -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["policy-2.2.0"])
    result = explain_c_info(model, c_info)  # analysed as the c_info's own run: stm32h7
    assert result["gap_bytes"] == 0 and result["tool_bound_bytes"] == 1160
    assert [p["kind"] for p in result["parts"] if p["bytes"]] == ["model"]


def test_overlay_is_the_bytes_the_tool_shares() -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["yamnet-hsp-4.0.0"])
    result = explain_c_info(model, c_info)
    kinds = _kinds(result)
    # independently: the two buffers' address ranges as the c_info gives them
    raw = {b["name"]: b for b in json.loads(c_info.read_text())["buffers"]}
    one, two = raw["conv2d_1_output_array"], raw["conv2d_2_output_array"]
    lo = max(one["offset_start"], two["offset_start"])
    hi = min(one["offset_start"] + one["size_bytes"], two["offset_start"] + two["size_bytes"])
    assert kinds["overlay"] == -(hi - lo) == -47_104
    overlay = next(p for p in result["parts"] if p["kind"] == "overlay")
    assert overlay["buffers"] == ["conv2d_1_output_array over conv2d_2_output_array"]
    # the floor writes conv2d_2's 98,304 B output over its dying 49,152 B input
    assert kinds["model"] == 98_304 and kinds["in_place_assumed"] == 49_152
    assert result["reported_bytes"] == 101_440 == 98_304 + 49_152 - 47_104 + kinds["reuse_lost"]


def test_scratch_and_pools_are_named() -> None:
    model, c_info = (_case(*p.split("/")) for p in PAIRS["mnist-1.0.0"])
    mnist = explain_c_info(model, c_info)
    scratch = next(p for p in mnist["parts"] if p["kind"] == "scratch")
    assert scratch["bytes"] == 2848  # the Dense layer's int16 scratch buffer
    raw = {b["name"]: b["size_bytes"] for b in json.loads(c_info.read_text())["buffers"]}
    assert sum(raw[n] for n in scratch["buffers"]) == 2848
    f4 = explain_c_info(
        None, _case("stm32f4-mobilenetv2-2builds", "2.1.0-20182-devcloud", "network_c_info.json")
    )
    kinds = _kinds(f4)
    assert f4["external_bytes"] == 202_800  # POOL_EXTERNAL_SDRAM's used bytes
    # SDRAM holds the 65x65x48 pad output at the epoch measured; the on-chip pool peaks
    # at another epoch, with the tensors named
    assert kinds["pad_layers"] == 202_800
    split = next(p for p in f4["parts"] if p["kind"] == "pool_split")
    assert split["bytes"] > 0 and "conv2d_1_output_array (epoch 6)" in split["buffers"]


def _virtualised(c_info: Path, tmp_path: Path) -> Path:
    """The same c_info with every activation buffer moved into the virtual pool whose
    members hold it (offsets rebased on the virtual pool's first address)."""
    data = json.loads(c_info.read_text())
    pools = {p["id"]: p for p in data["memory_pools"]}
    virtual = next(p for p in data["memory_pools"] if p.get("subpools"))
    base = int(virtual["address"])
    for buf in data["buffers"]:
        if buf.get("is_param") or buf.get("mpool_id") not in virtual["subpools"]:
            continue
        member = pools[buf["mpool_id"]]
        buf["offset_start"] = int(member["address"]) - base + buf["offset_start"]
        buf["mpool_id"] = virtual["id"]
    out = tmp_path / c_info.name
    out.write_text(json.dumps(data))
    return out


def test_virtual_pools_are_read_through_their_members(tmp_path: Path) -> None:
    c_info = _case(
        "n6-blazeface-2profiles", "2.2.0-profile-default-cli", "generate-2025-08-25",
        "network_c_info.json",
    )
    plain = explain_c_info(None, c_info)
    moved = explain_c_info(None, _virtualised(c_info, tmp_path))
    # the bytes land in the same member pools (npuRAM5 425,984 B, npuRAM4 114,688 B)
    assert _kinds(moved) == _kinds(plain)
    assert moved["tool_bound_bytes"] == plain["tool_bound_bytes"] > 0
    assert moved["unexplained_bytes"] == 0
    used = {p["name"]: p["buffers"] for p in moved["pools"] if p["buffers"]}
    assert set(used) == {"npuRAM5", "npuRAM4"}


def test_parameters_in_a_writable_pool_are_not_activations(tmp_path: Path) -> None:
    c_info = _case("stm32h7-policy-3regens", "2.2.0", "run-2026-06-19", "network_policy.onnx_c_info.json")
    data = json.loads(c_info.read_text())
    pool = next(p for p in data["memory_pools"] if p["rights"] == "ACC_WRITE")
    weights = {"name": "w_in_ram", "id": 9999, "is_param": True, "mpool_id": pool["id"],
               "offset_start": pool["used_size_bytes"], "size_bytes": 4096,
               "format": "STAI_FORMAT_FLOAT", "nbits": 32, "epochs": {"start": 0, "end": 1}}
    data["buffers"].append(weights)
    pool["used_size_bytes"] += 4096
    out = tmp_path / "network_c_info.json"
    # the footprint leaves them out: they are no activation and nothing is unexplained
    out.write_text(json.dumps(data))
    left_out = explain_c_info(None, out)
    assert left_out["reported_bytes"] == 1160 and left_out["unexplained_bytes"] == 0
    assert "weights_in_activation_pools" not in _kinds(left_out)
    assert _kinds(left_out)["tool_tensors"] == 1160
    # the footprint counts them: they are their own part, named
    data["memory_footprint"]["activations"] = 1160 + 4096
    out.write_text(json.dumps(data))
    counted = explain_c_info(None, out)
    part = next(p for p in counted["parts"] if p["kind"] == "weights_in_activation_pools")
    assert (part["bytes"], part["buffers"]) == (4096, ["w_in_ram"])
    assert counted["unexplained_bytes"] == 0 and _kinds(counted)["tool_tensors"] == 1160


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
    assert "+0 B  UNEXPLAINED" in out
    assert main(["oracle", str(model), "--c-info", str(c_info), "--tensors"]) == 0
    out = capsys.readouterr().out
    assert "tool buffers (pool @ offset, bytes, epochs):" in out
    assert "heap_overlay_pool @" in out and "scratch" in out
    assert main(["oracle", str(model), "--c-info", str(c_info), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["c_info"]["reported_bytes"] == 23_936
    assert report["c_info"]["unexplained_bytes"] == 0
    assert all(set(p) >= {"kind", "bytes", "buffers"} for p in report["c_info"]["parts"])
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
    parts = _kinds(result)
    assert parts["model"] == 912
    assert parts["tool_tensors"] == 0
    assert parts["scratch"] == 2848
    assert result["reported_bytes"] == 3760 and result["gap_bytes"] == 2848


def test_a_buffer_across_two_member_pools_counts_in_both(tmp_path: Path) -> None:
    def pool(pid: int, name: str, address: int, size: int, used: int, subpools: list[int]) -> dict[str, Any]:
        return {"id": pid, "name": name, "address": address, "size_bytes": size, "alignment": 1,
                "used_size_bytes": used, "rights": "ACC_WRITE", "subpools": subpools}

    def buffer(name: str, offset: int, size: int, start: int, end: int) -> dict[str, Any]:
        return {"name": name, "id": name, "mpool_id": 3, "offset_start": offset, "size_bytes": size,
                "epochs": {"start": start, "end": end}, "format": "STAI_FORMAT_S8", "nbits": 8}

    data = {
        "json_schema_version": "2.0",
        "memory_footprint": {"activations": 100 + 20},
        # members laid end to end by address: ramA [1000, 1100), ramB [1100, 1200)
        "memory_pools": [pool(1, "ramA", 1000, 100, 100, []), pool(2, "ramB", 1100, 100, 20, []),
                         pool(3, "ramA_ramB", 1000, 200, 120, [1, 2])],
        # x fills ramA's first 80 bytes, y spans 80..120 of the virtual pool: 20 B in each
        "buffers": [buffer("x", 0, 80, 0, 1), buffer("y", 80, 40, 1, 2)],
    }
    path = tmp_path / "network_c_info.json"
    path.write_text(json.dumps(data))
    result = explain_c_info(None, path)
    used = {p["name"]: (p["used_bytes"], p["buffers"]) for p in result["pools"]}
    assert used == {"ramA": (100, 2), "ramB": (20, 1)}
    pieces = {b["name"]: (b["pool"], b["offset"], b["bytes"]) for b in result["buffers"]}
    assert pieces["y [ramA part]"] == ("ramA", 80, 20) and pieces["y [ramB part]"] == ("ramB", 0, 20)
    assert result["reported_bytes"] == 120 and result["unexplained_bytes"] == 0
    assert result["tool_bound_bytes"] == 120  # x and y live together at epoch 1

"""``expected_bytes``: the typical deployment placed in the run's pools, with its I/O types.

The tool fills the pools in the order the profile lists them and spills what does not
fit to the next; tensors in different pools cannot share memory. ``--input-data-type``
and ``--output-data-type`` give the I/O buffers another width than the model's and add a
conversion. Figures are counted by hand beside each assertion, or read from the real
run's own c_info.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle import analyze_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))
from tflite_nets import micro_conv

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases"
F4 = SHARED / "stm32f4-mobilenetv2-2builds"


def _dense_chain(tmp_path: Path) -> Path:
    """X[1,8] -> A[1,16] -> B[1,16] -> Y[1,4], float MatMuls (32, 64, 64, 16 B)."""
    inits = [
        numpy_helper.from_array(np.ones((8, 16), np.float32), "w1"),
        numpy_helper.from_array(np.ones((16, 16), np.float32), "w2"),
        numpy_helper.from_array(np.ones((16, 4), np.float32), "w3"),
    ]
    nodes = [
        helper.make_node("MatMul", ["X", "w1"], ["A"], name="m1"),
        helper.make_node("MatMul", ["A", "w2"], ["B"], name="m2"),
        helper.make_node("MatMul", ["B", "w3"], ["Y"], name="m3"),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "chain.onnx"
    onnx.save(model, str(path))
    return path


def _pools(tmp_path: Path, name: str, sizes: list[int]) -> Path:
    pools: list[dict[str, Any]] = [
        {"name": f"POOL_{k}", "size": {"value": str(size), "magnitude": "BYTES"}}
        for k, size in enumerate(sizes)
    ]
    path = tmp_path / name
    path.write_text(json.dumps({"memory": {"mempools": pools}}), encoding="utf-8")
    return path


def test_two_mpools_two_figures(tmp_path: Path) -> None:
    model = _dense_chain(tmp_path)
    one = analyze_model(model, target="stm32h7")
    # m1 holds X + A = 96, m2 A + B = 128, m3 B + Y = 80 (dense layers keep their input)
    assert one["typical_bound_bytes"] == one["expected_bytes"] == 128
    roomy = analyze_model(model, target="stm32h7", mpool=_pools(tmp_path, "big.json", [200, 1000]))
    assert roomy["expected_bytes"] == 128  # everything fits the first pool
    tight = analyze_model(model, target="stm32h7", mpool=_pools(tmp_path, "small.json", [100, 1000]))
    # largest first: A (64) at 0 of POOL_0; B (64) lives with A and would end at 128 > 100:
    # POOL_1; X (32) beside A ends at 96; Y (16) at 0 once A is gone. 96 + 64
    assert tight["expected_bytes"] == 96 + 64 == 160
    assert [p["bytes"] for p in tight["expected_pools"]] == [96, 64]
    # the floor does not depend on the pools
    assert tight["lower_bound_bytes"] == roomy["lower_bound_bytes"] == one["lower_bound_bytes"]


def test_the_f4_board_pools_spill_the_big_tensors_to_sdram() -> None:
    model = F4 / "mobilenet_v2_0.35_128_fft_int8.tflite"
    pools = F4 / "2.1.0-20182-devcloud" / "mempools-board.json"
    if not pools.is_file():
        pytest.skip(f"{pools} is absent (../shared real cases)")
    r = analyze_model(model, target="stm32f4", mpool=pools)
    by_name = {p["name"]: p for p in r["expected_pools"]}
    # the tool's own c_info of that run: POOL_EXTERNAL_SDRAM used 202,800 B by 2 buffers
    # (the 202,800 B pad output over the 196,608 B tensor it reads); POOL_0_RAM holds
    # 151,889 B, too small for either
    sdram = by_name["POOL_EXTERNAL_SDRAM"]
    assert (sdram["bytes"], sdram["buffers"]) == (202_800, 2)
    assert r["expected_bytes"] > 202_800 == analyze_model(model, target="stm32f4")["expected_bytes"]
    assert abs(r["expected_bytes"] - 339_796) <= 0.25 * 339_796  # the tool's figure


def test_io_data_types_widen_the_io_buffers(tmp_path: Path) -> None:
    model = micro_conv(tmp_path / "micro.tflite")  # int8 64x64x3 in, conv 16, MEAN, int8 16 out
    plain = analyze_model(model, target="stm32h7")
    # the conv's 65,536 B output over its dying input, then the 16 B MEAN output
    assert plain["expected_bytes"] == 65_536 + 16
    wide = analyze_model(model, target="stm32h7", options=["--input-data-type", "float32"])
    # a float32 input (49,152 B) converted in place to the int8 input (12,288 B)
    assert wide["lower_bound_bytes"] == 64 * 64 * 3 * 4 == 49_152
    assert wide["steps"] == plain["steps"] + 1
    npu = analyze_model(
        model, target="stm32n6",
        options=["--st-neural-art", "--input-data-type", "float32", "--output-data-type", "float32"],
    )
    # the N6 stores the int8 copy beside the float input: 49,152 + 12,288; the output is
    # 16 floats, 64 B
    assert npu["expected_bytes"] == 49_152 + 12_288
    assert npu["lower_bound_bytes"] == 49_152
    assert npu["deployment"]["input_types"] == npu["deployment"]["output_types"] == ["float32"]
    plain_npu = analyze_model(model, target="stm32n6", options=["--st-neural-art"])
    assert npu["steps"] == plain_npu["steps"] + 2  # one conversion each side
    assert npu["naive_bytes"] == plain_npu["naive_bytes"] + 49_152 + 16 * 4


def test_unknown_io_type_is_refused(tmp_path: Path) -> None:
    model = micro_conv(tmp_path / "micro.tflite")
    with pytest.raises(OracleError, match=r"--input-data-type float64: unknown data type"):
        analyze_model(model, target="stm32h7", options=["--input-data-type", "float64"])

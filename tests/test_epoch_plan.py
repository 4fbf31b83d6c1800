"""The epoch plan of real N6 c_info files: epochs, kinds, buffers, addresses, layouts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.errors import OracleError
from pytest_stedge.oracle.accuracy.epoch_plan import Buffer, load_plan, record_epochs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
NPU_40 = SHARED / "stedgeai-samples/n6-v4.0.0-generate-npu-conv2d-default-profile/network_c_info.json"
VALIDATE = SHARED / "real-cases/n6-micro-convs-4flows/conv2d_3x3/2.2.0-cubemx-target/network_c_info.json"
MCU = SHARED / "stedgeai-samples/stm32h7-v2.2.0-generate-policy-onnx/network_policy.onnx_c_info.json"


def need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} is absent (the real tool outputs live in ../shared)")
    return path


def test_a_4x_c_info_gives_its_epochs_kinds_and_operators() -> None:
    plan = load_plan(need(NPU_40))
    assert plan.tool_version.startswith("4.0.0")
    assert len(plan.epochs) == 21  # epoch_0 .. epoch_20 in the file
    executed = plan.executed_epochs()
    assert [e.num for e in executed] == list(range(2, 20))  # NODE_NO_X: 0, 1 and 20
    assert {e.kind for e in executed} == {"HW"}
    epoch = plan.epochs[5]
    assert [op.name for op in epoch.operators] == ["Conv2D_16", "Conv2D_16_ca_pipe_1",
                                                   "Conv2D_16_off_bias_39"]
    assert epoch.describe().startswith("epoch_5 (HW: Conv2D_16 Conv")


def test_buffers_carry_pool_address_layout_and_quantization_of_the_file() -> None:
    plan = load_plan(need(NPU_40))
    buf = plan.by_name["Conv2D_16_off_bias_out_40"]
    # cpuRAM2 at 873463808, offset_start 40000; 32 channels stored in blocks of 16
    assert buf.address == 873463808 + 40000
    assert buf.layout == "NC/16HW16" and buf.shape == (1, 32, 10, 25)
    assert buf.scales == (0.318156064,) and buf.offsets == (-14,)
    assert plan.producing_epoch(buf).name == "epoch_5"
    assert plan.find("no-such-name", 873463808 + 40000, 8000) is buf
    # the edges: the Sub that wrote it streams from the bias Add, which streams from the Conv
    zero_off = plan.by_name["Conv2D_7_zero_off_out_16"]
    assert [op.name for op in plan.upstream_operators(zero_off)] == [
        "Conv2D_7_suboff_15", "Conv2D_3_off_bias_12", "Conv2D_3"]


def _buffer(shape: tuple[int, ...], batch: int, fmt: str = "STAI_FORMAT_S16", scales=(),
            offsets=()) -> Buffer:
    return Buffer(1, "b", shape, batch, fmt, 16 if fmt.endswith("16") else 8, True, scales,
                  offsets, 0, False, 1, 0, None, 0, 0, 0)


def test_blocked_layout_with_channel_padding_is_undone_as_computed_by_hand() -> None:
    # x[c, h, w] = 100c + 10h + w, 3 channels in blocks of 2: block 0 interleaves
    # channels 0 and 1 per pixel, block 1 holds channel 2 and one padding lane.
    raw = [0, 100, 1, 101, 10, 110, 11, 111, 200, 0, 201, 0, 210, 0, 211, 0]
    buf = _buffer((1, 3, 2, 2), 2)
    assert buf.stored_elements() == 16
    expected = [[[100 * c + 10 * h + w for w in range(2)] for h in range(2)] for c in range(3)]
    assert buf.to_real(np.array(raw, np.int16), where="t").tolist() == [expected]
    nhwc = _buffer((1, 3, 2, 2), 3)  # channel last: pixel by pixel, all channels
    pixels = [0, 100, 200, 1, 101, 201, 10, 110, 210, 11, 111, 211]
    assert nhwc.layout == "NHWC"
    assert nhwc.to_real(np.array(pixels, np.int16), where="t").tolist() == [expected]


def test_codes_are_dequantized_with_the_buffers_own_scale_and_zero_point() -> None:
    buf = _buffer((1, 4), 1, "STAI_FORMAT_U8", (0.5,), (3,))
    assert buf.to_real(np.array([3, 5, 0, 255], np.uint8), where="t").tolist() == [
        [0.0, 1.0, -1.5, 126.0]]


def test_a_record_that_fits_not_its_buffer_is_named() -> None:
    buf = _buffer((1, 3, 2, 2), 2)
    with pytest.raises(OracleError, match=r"dump.npz: 9 element\(s\) received for buffer 'b'"):
        buf.to_real(np.zeros(9, np.int16), where="dump.npz")


def test_a_validate_c_info_without_buffers_is_refused_by_name() -> None:
    with pytest.raises(OracleError, match=r"network_c_info.json: field 'buffers' is empty"):
        load_plan(need(VALIDATE))


def test_an_mcu_c_info_has_no_epochs_to_map() -> None:
    with pytest.raises(OracleError, match=r"no epoch_<n> node"):
        load_plan(need(MCU))


def test_record_ids_cover_the_epochs_of_a_block() -> None:
    # the real N6 log: an EC block with id 22 << 16 | 1 covers epochs 1 to 22
    assert record_epochs("epoch_1", 22 << 16 | 1) == (1, 22)
    assert record_epochs("epoch_7", None) == (7, 7)
    assert record_epochs("conv0", None) is None

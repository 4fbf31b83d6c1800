"""Wire encoding of the validation protocol against byte sequences worked out by hand.

Expected bytes follow ../shared/board-protocol.md §11; each is re-derived in a comment
from the field rules (tag = field << 3 | wire type; varints little-endian base 128).
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def test_sync_request_body_and_both_framings() -> None:
    # reqid=1 (08 01), cmd=0 (10 00), param=0 (18 00), name="" (22 00), opt=0 (28 00),
    # prefixed by its length 10 (0A). Zero fields are still sent: nanopb needs them.
    message = bp.request(1, bp.CMD_SYNC)
    assert message == h("0A 08 01 10 00 18 00 22 00 28 00")
    one = bp.host_packets(message, 32, header_bytes=1)
    assert one == [h("0B") + message + bytes(21)] and len(one[0]) == 33
    two = bp.host_packets(message, 32, header_bytes=2)
    assert two == [h("00 0B") + message + bytes(21)] and len(two[0]) == 34


def test_sync_answer_decodes_to_the_real_n6_values_and_reencodes_identically() -> None:
    raw = h("08 01 10 00 52 09 08 81 06 20 01 28 84 80 04")
    msg = bp.decode(bp.resp_schema(2), raw)
    assert msg["reqid"] == 1 and msg["state"] == bp.S_IDLE
    assert msg["sync"] == {"version": 769, "capability": 1, "rtid": 65540}
    assert bp.encode(bp.resp_schema(2), msg) == raw
    assert bp.target_packets(raw, 32, 1) == h("8F") + raw + bytes(17)
    assert bp.target_packets(raw, 32, 2) == h("80 0F") + raw + bytes(17)


def test_host_message_of_70_bytes_is_three_packets_32_32_6() -> None:
    message = bp.host_data(bytes(range(61)))
    # body: type 0 (08 00), size 61 (10 3D), addr 0 (18 00), datas (22 3D ...) = 69 bytes.
    assert message[:9] == h("45 08 00 10 3D 18 00 22 3D") and len(message) == 70
    p0, p1, p2 = bp.host_packets(message, 32, 1)
    assert p0 == h("20") + message[:32]
    assert p1[:3] == h("20 17 18") and p1[-1] == 0x36
    assert p2 == h("06 37 38 39 3A 3B 3C") + bytes(26)
    assert [p[:2] for p in bp.host_packets(message, 32, 2)] == [h("00 20"), h("00 20"),
                                                                 h("00 06")]


def test_output_tensor_answer_of_70_bytes_matches_the_spec_packets() -> None:
    desc = bt.tensor_desc_msg("out", np.dtype(np.int8), (1, 12),
                              bp.TENSOR_OUTPUT | bp.TENSOR_LAST, scale=0.5, zero_point=-54)
    msg = {"reqid": 4, "state": bp.S_DONE,
           "tensor": {"desc": desc, "data": {"type": 0, "size": 12, "addr": 0,
                                             "datas": bytes(range(0x80, 0x8C))}}}
    raw = bp.encode(bp.resp_schema(2), msg)
    # zeropoint -54 is a 10-byte varint: CA FF FF FF FF FF FF FF FF 01
    assert raw == h(
        "08 04 10 03 8A 01 3F 0A 27 0A 03 6F 75 74 10 C0 88 90 04 18 0C 20 02 28 01 28 0C"
        " 35 00 00 00 3F 38 CA FF FF FF FF FF FF FF FF 01 40 00 48 82 02 12 14 08 00 10 0C"
        " 18 00 22 0C 80 81 82 83 84 85 86 87 88 89 8A 8B")
    packets = bp.target_packets(raw, 32, 1)
    assert len(packets) == 99
    assert (packets[0], packets[33], packets[66]) == (0x20, 0x20, 0x86)
    assert packets[67:73] == h("86 87 88 89 8A 8B")
    two = bp.target_packets(raw, 32, 2)
    assert (two[0:2], two[34:36], two[68:70]) == (h("00 20"), h("00 20"), h("80 06"))
    back = bp.decode(bp.resp_schema(2), raw)["tensor"]
    td = bt.TensorDesc.from_msg(back["desc"])
    assert td.zero_point == -54 and td.scale == 0.5 and td.shape == (1, 12)
    assert td.array(back["data"]["datas"]).tolist() == [list(range(-128, -116))]


def test_answer_of_exactly_64_bytes_ends_with_an_empty_eom_packet() -> None:
    packets = bp.target_packets(bytes(range(64)), 32, 1)
    assert len(packets) == 99 and packets[66] == 0x80
    assert bp.target_packets(bytes(range(64)), 32, 2)[68:70] == h("80 00")


@pytest.mark.parametrize(("message", "expected"), [
    (bp.host_ack(), "04 08 00 10 00"),
    (bp.request(2, bp.CMD_SYS_INFO), "0A 08 02 10 01 18 00 22 00 28 00"),
    (bp.request(4, bp.CMD_NETWORK_INFO, param=1), "0A 08 04 10 0A 18 01 22 00 28 00"),
    (bp.request(5, bp.CMD_NETWORK_RUN, param=1, name="network", opt=1),
     "11 08 05 10 0B 18 01 22 07 6E 65 74 77 6F 72 6B 28 01"),
    (bp.host_data(bytes([1, 2, 0xFE, 0x7F])), "0C 08 00 10 04 18 00 22 04 01 02 FE 7F"),
])
def test_host_messages_of_a_minimal_io_only_trace(message: bytes, expected: str) -> None:
    assert message == h(expected)


def test_target_messages_of_a_minimal_io_only_trace() -> None:
    schema = bp.resp_schema(2)
    refused = bp.decode(schema, h("08 04 10 04 62 04 08 04 10 04"))
    assert refused == {"reqid": 4, "state": bp.S_ERROR,
                       "ack": {"param": 4, "error": bp.E_INVALID_PARAM}}
    op = {"name": "network", "type": 0, "id": 0, "duration": 0.25, "counter_type": 0,
          "counters": [120000, 0], "stack_used": -1, "heap_used": -1}
    assert bp.encode(schema, {"reqid": 5, "state": bp.S_PROCESSING, "op": op}) == h(
        "08 05 10 02 82 01 30 0A 07 6E 65 74 77 6F 72 6B 10 00 18 00 25 00 00 80 3E 28 00"
        " 30 C0 A9 07 30 00 38 FF FF FF FF FF FF FF FF FF 01 40 FF FF FF FF FF FF FF FF FF 01")


def test_st_ai_shape_with_batch_flag_and_int8_output_of_the_trace() -> None:
    raw = h("08 05 10 03 8A 01 41 0A 2F 0A 03 6F 75 74 10 C0 88 90 04 18 02 20 82 80 80 A0 04"
            " 28 01 28 02 35 00 00 80 3E 38 FF FF FF FF FF FF FF FF FF 01 40 84 80 80 80 02"
            " 48 82 02 12 0E 08 00 10 02 18 84 80 80 80 02 22 02 05 FB")
    msg = bp.decode(bp.resp_schema(2), raw)
    td = bt.TensorDesc.from_msg(msg["tensor"]["desc"])
    assert td.shape == (1, 2) and td.dtype == np.int8 and td.zero_point == -1
    assert td.array(msg["tensor"]["data"]["datas"]).tolist() == [[5, -5]]
    assert td.dequantize(np.array([5, -5], np.int8)).tolist() == [1.5, -1.0]
    assert bp.encode(bp.resp_schema(2), msg) == raw


def test_sysinfo_field_5_depends_on_the_firmware_generation() -> None:
    info = {"devid": 0x486, "sclock": 8, "hclock": 4, "cache": 1, "com_param": 382,
            "extra": [7, 9]}
    new = bp.encode(bp.SYSINFO_V2, info)
    assert bp.decode(bp.SYSINFO_V2, new)["com_param"] == 382
    old = bp.encode(bp.SYSINFO_V1, {**info, "com_param": None})
    assert bp.decode(bp.SYSINFO_V1, old)["extra"] == [7, 9]


def test_packed_repeated_scalars_are_accepted() -> None:
    # dims (field 5) packed: tag 2A, length 3, values 1, 49, 10
    assert bp.decode(bp.TENSOR_DESC, h("2A 03 01 31 0A"))["dims"] == [1, 49, 10]


def test_truncated_bytes_raise_a_wire_error() -> None:
    with pytest.raises(bp.WireError, match="announced"):
        bp.decode(bp.TENSOR_DESC, h("0A 10 61"))


@pytest.mark.parametrize(("dtype", "word"), [
    (np.float32, 0x00821040), (np.float16, 0x00820840), (np.uint8, 0x00040440),
    (np.int8, 0x00840440), (np.int16, 0x00840840), (np.uint32, 0x00041040),
    (np.int64, 0x00842040), (np.bool_, 0x00060440),
])
def test_format_words_match_st_values_and_map_back(dtype: type, word: int) -> None:
    assert bt.format_word(dtype) == word
    assert bt.format_dtype(word) == np.dtype(dtype)


def test_fixed_point_format_dequantizes_by_its_fractional_bits() -> None:
    q7 = 0x00840447  # int8 with 7 fractional bits
    desc = bt.TensorDesc("q", bt.format_dtype(q7), (2,), format=q7)
    assert desc.dequantize(np.array([64, -128], np.int8)).tolist() == [0.5, -1.0]


def test_unsupported_format_names_its_word() -> None:
    with pytest.raises(bp.WireError, match="0x00000040"):
        bt.format_dtype(0x40)


@pytest.mark.parametrize(("n_dims", "dims", "shape"), [
    (4, [1, 49, 10, 1], (1, 49, 10, 1)),                 # UND, N6 firmware: as is
    (0x44 << 24 | 2, [1, 12], (1, 12)),                  # ST_AI | HAS_BATCH, dims[0] == 1
    (0x04 << 24 | 2, [3, 12], (1, 3, 12)),               # ST_AI without batch: prepend 1
    (0x02 << 24 | 2, [1, 12], (1, 1, 1, 12)),            # BHWC rank 2
    (0x03 << 24 | 4, [1, 3, 8, 16], (1, 16, 3, 8)),      # BCHW rank 4
    (0x01 << 24 | 4, [1, 3, 8, 16], (1, 16, 8, 3)),      # legacy BCWH
])
def test_host_shape_follows_the_shape_format(n_dims: int, dims: list[int],
                                             shape: tuple[int, ...]) -> None:
    assert bt.host_shape(n_dims, dims) == shape


def test_wrong_payload_size_is_reported_with_both_sizes() -> None:
    desc = bt.TensorDesc("t", np.dtype(np.float32), (1, 4))
    with pytest.raises(bp.WireError, match="12 bytes received, 16 expected"):
        desc.array(bytes(12))


def test_counters_and_versions() -> None:
    assert bt.decode_counters(0, [5, 1, 7, 0]) == [(1 << 32) + 5, 7]
    assert bt.decode_counters(1 << 16, [8398, 105738, 2599]) == [8398, 105738, 2599]
    assert bp.version_known(0x0301) and bp.version_known(0x0302)
    assert not bp.version_known(0x0401) and not bp.version_known(0x0303)
    assert bp.version_text(0x0302) == "3.2"

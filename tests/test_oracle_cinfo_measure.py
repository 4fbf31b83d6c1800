"""The c_info measurement (``oracle/memory/explain_parts.py``) on small buffer layouts counted by hand.

Each layout is what a c_info's buffer table says (pool, offset, size, first and last
epoch, kind); the expected parts are worked out beside each test. The real c_infos of
../shared are measured in test_oracle_cinfo.py; these pin the rules one at a time.
"""

from __future__ import annotations

from typing import Any

from pytest_stedge.oracle.memory.explain_parts import FloorTensors, measure, merge_aliases
from pytest_stedge.oracle.memory.tool_buffers import ToolBuffer


def _buf(name: str, offset: int, size: int, start: int, end: int, *, pool: int = 0,
         kind: str = "core", nbits: int = 0) -> ToolBuffer:
    return ToolBuffer(name, pool, offset, size, start, end, scratch=kind == "scratch",
                      is_float=nbits == 32, kind=kind, nbits=nbits)


def _measure(bufs: list[ToolBuffer], used: int, floor: FloorTensors | None = None, *,
             reported: int | None = None, alignment: int = 1,
             params: list[ToolBuffer] | None = None) -> dict[str, Any]:
    pools = {0: {"name": "RAM", "alignment": alignment}}
    return measure(bufs, params or [], pools, {0: used}, set(),
                   used if reported is None else reported, floor)


def _parts(result: dict[str, Any]) -> dict[str, int]:
    return {p["kind"]: p["bytes"] for p in result["parts"]}


def _names(result: dict[str, Any], kind: str) -> list[str]:
    return next(p["buffers"] for p in result["parts"] if p["kind"] == kind)


def test_one_buffer_used_again_at_its_last_epoch_is_one_buffer() -> None:
    # a (epochs 0-1) and b (1-2) at the same address and size: at epoch 1 the tool hands
    # the bytes of a to b (a layer done in place), so they are one 64 B buffer alive
    # 0-2; c at the same address from epoch 3 is another one
    merged = merge_aliases([
        _buf("a", 0, 64, 0, 1), _buf("b", 0, 64, 1, 2, kind="pad_layers"),
        _buf("c", 0, 64, 3, 4),
    ])
    assert [(m.name, m.start, m.end, m.kind) for m in merged] == [
        ("a", 0, 2, "pad_layers"),  # a pad layer done in place names the buffer
        ("c", 3, 4, "core"),
    ]
    # the liveness of the tool's buffers counts the 64 B once
    assert _measure([_buf("a", 0, 64, 0, 1), _buf("b", 0, 64, 1, 2)], 64)["tool_bound"] == 64


def test_the_first_kind_that_names_a_shared_buffer_stays() -> None:
    # a pad layer's buffer, then a copy in the same bytes: it stays a pad-layer buffer
    merged = merge_aliases([
        _buf("p", 0, 64, 0, 1, kind="pad_layers"), _buf("k", 0, 64, 1, 2, kind="copies"),
    ])
    assert [(m.name, m.kind) for m in merged] == [("p", "pad_layers")]


def test_a_tensor_stored_at_its_own_size_is_matched_before_a_16_bit_copy() -> None:
    # the floor holds t (100 B). Live at epoch 0: "same" (100 B) and "wide" (200 B, a
    # 16-bit copy of a 100 B tensor). t is the model tensor "same"; "wide" is the tool's
    # own: the tool tensors part holds 200 B, nothing is cut_16bit.
    bufs = [_buf("same", 0, 100, 0, 0), _buf("wide", 100, 200, 0, 0, nbits=16)]
    r = _measure(bufs, 300, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == [] and r["unexplained_bytes"] == 0
    assert _parts(r)["tool_tensors"] == 200 and _names(r, "tool_tensors") == ["wide"]
    assert "cut_16bit" not in _parts(r)


def test_padding_up_to_16_bytes_or_one_percent_is_the_same_tensor() -> None:
    # a 100 B tensor in a 116 B buffer: the same tensor, 16 B of alignment; a 117 B
    # buffer is another tensor (the tool's own, 117 B), and the floor's 100 B are held
    # nowhere: unexplained 117 - (100 + 117) = -100
    r = _measure([_buf("b", 0, 116, 0, 0)], 116, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == [] and _parts(r)["alignment"] == 16
    assert r["unexplained_bytes"] == 0
    r = _measure([_buf("b", 0, 117, 0, 0)], 117, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]
    assert _parts(r)["tool_tensors"] == 117 and r["unexplained_bytes"] == 117 - 100 - 117
    # 10,100 B: 1% is 101 B of slack; 102 B larger is another tensor
    r = _measure([_buf("b", 0, 10_201, 0, 0)], 10_201, FloorTensors(10_100, [("t", 10_100)]))
    assert r["floor_tensors_missing"] == [] and _parts(r)["alignment"] == 101
    r = _measure([_buf("b", 0, 10_202, 0, 0)], 10_202, FloorTensors(10_100, [("t", 10_100)]))
    assert r["floor_tensors_missing"] == ["t"]


def test_buffer_ends_rounded_to_a_2_byte_alignment() -> None:
    # one 3 B buffer in a pool aligned to 2: its end rounds to 4, the extra byte is the
    # alignment part (the pool's high-water mark is 4)
    r = _measure([_buf("b", 0, 3, 0, 0)], 4, alignment=2)
    assert _parts(r)["alignment"] == 1 and r["unexplained_bytes"] == 0


def test_a_tensor_stored_in_16_bits_is_the_models_tensor_cut_wider() -> None:
    # t (100 B, int8) in a 16-bit buffer of 200 B, up to 16 B apart: 216 B holds it
    # (116 B of it are the 16-bit cut), 217 B does not
    r = _measure([_buf("w", 0, 216, 0, 0, nbits=16)], 216, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == []
    assert _parts(r)["cut_16bit"] == 116 and r["unexplained_bytes"] == 0
    r = _measure([_buf("w", 0, 217, 0, 0, nbits=16)], 217, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]
    # twice the size but 8 bits wide: another tensor
    r = _measure([_buf("b", 0, 200, 0, 0, nbits=8)], 200, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]


def test_a_tensor_stored_in_32_bits_is_a_float_conversion() -> None:
    # t (100 B) in a 32-bit buffer of 400 B: 300 B are the float conversion; 417 B is
    # another tensor
    r = _measure([_buf("f", 0, 400, 0, 0, nbits=32)], 400, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == []
    assert _parts(r)["float_conversions"] == 300 and r["unexplained_bytes"] == 0
    r = _measure([_buf("f", 0, 416, 0, 0, nbits=32)], 416, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == [] and _parts(r)["float_conversions"] == 316
    r = _measure([_buf("f", 0, 417, 0, 0, nbits=32)], 417, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]
    # a 16-bit buffer of 4 x 100 B is not t stored wider (16 bits is twice, not 4 times)
    r = _measure([_buf("w", 0, 400, 0, 0, nbits=16)], 400, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]


def test_a_padded_tensor_is_up_to_half_again_its_size() -> None:
    # t (100 B) in a pad layer's 150 B buffer: 50 B of padding; 151 B is too much, and a
    # 150 B buffer of another kind is another tensor
    r = _measure([_buf("p", 0, 150, 0, 0, kind="pad_layers")], 150, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == []
    assert _parts(r)["pad_layers"] == 50 and r["unexplained_bytes"] == 0
    r = _measure([_buf("p", 0, 151, 0, 0, kind="pad_layers")], 151, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]
    r = _measure([_buf("c", 0, 150, 0, 0)], 150, FloorTensors(100, [("t", 100)]))
    assert r["floor_tensors_missing"] == ["t"]


def test_the_parts_are_measured_where_the_floors_tensors_are_live() -> None:
    # a (64 B, epoch 0) at 0; b (64 B, epochs 1-2) at 0; c (32 B, epoch 2) at 64. The
    # floor holds b and c (96 B): they are live together at epoch 2 only. Used 96 B:
    # the model part is all of it.
    bufs = [_buf("a", 0, 64, 0, 0), _buf("b", 0, 64, 1, 2), _buf("c", 64, 32, 2, 2)]
    r = _measure(bufs, 96, FloorTensors(96, [("b", 64), ("c", 32)]))
    assert r["epoch"] == 2
    assert r["unexplained_bytes"] == 0 and r["clean"]
    assert _parts(r) == {"model": 96, "tool_tensors": 0}


def test_a_pool_that_peaks_elsewhere_is_named_with_the_buffers_there() -> None:
    # the floor's t (40 B) is a [0, 40), live at epoch 0; d [40, 64) lives at epochs 0-1;
    # at epoch 1 b [64, 128) and c [128, 192) join d (neither is 40 B up to padding).
    # Union: epoch 0 64 B, epoch 1 152 B; the pool's high-water mark 192 B.
    # At epoch 0: model 40, d 24 (the tool's), the pool peaking at epoch 1: 152 - 64 =
    # 88 B (b and c, d is already counted), and 192 - 152 = 40 B never reused.
    bufs = [_buf("a", 0, 40, 0, 0), _buf("d", 40, 24, 0, 1),
            _buf("b", 64, 64, 1, 1), _buf("c", 128, 64, 1, 1)]
    r = _measure(bufs, 192, FloorTensors(40, [("t", 40)]))
    assert r["epoch"] == 0
    parts = _parts(r)
    assert (parts["tool_tensors"], parts["peak_elsewhere"], parts["reuse_lost"]) == (24, 88, 40)
    assert sorted(_names(r, "peak_elsewhere")) == ["b (epoch 1)", "c (epoch 1)"]
    assert r["unexplained_bytes"] == 0
    # the same pool seen the other way: the peak (b, c, d) first, then d and a
    bufs = [_buf("b", 0, 64, 0, 0), _buf("c", 64, 64, 0, 0), _buf("d", 128, 24, 0, 1),
            _buf("a", 0, 40, 1, 1)]
    r = _measure(bufs, 152, FloorTensors(40, [("t", 40)]))
    assert r["epoch"] == 1
    assert _parts(r)["peak_elsewhere"] == 152 - 64 == 88
    assert sorted(_names(r, "peak_elsewhere")) == ["b (epoch 0)", "c (epoch 0)"]
    assert r["unexplained_bytes"] == 0


def test_overlaid_buffers_and_memory_never_reused() -> None:
    # a [0, 64) and b [32, 96) live together (b written over the end of a): 128 B of
    # buffers in 96 B of addresses, overlay -32. The pool reports 100 B used: 4 B above
    # every live range, never reused.
    bufs = [_buf("a", 0, 64, 0, 0), _buf("b", 32, 64, 0, 0)]
    r = _measure(bufs, 100)
    parts = _parts(r)
    assert "model" not in parts  # no floor given: no model part
    assert parts["tool_tensors"] == 128 and parts["overlay"] == -32 and parts["reuse_lost"] == 4
    assert _names(r, "overlay") == ["b over a"]
    assert r["unexplained_bytes"] == 0 and r["clean"]  # overlay may be negative
    assert r["tool_bound"] == 128  # the liveness of the buffers: both at epoch 0


def test_the_overlay_names_the_shared_pairs_most_bytes_first() -> None:
    # a [0, 100); c [10, 20) inside it (10 B shared); b [50, 100) (50 B shared); c and b
    # do not meet. Listed: b over a, then c over a. Overlay: 100 B of addresses for
    # 160 B of buffers, -60.
    bufs = [_buf("a", 0, 100, 0, 0), _buf("c", 10, 10, 0, 0), _buf("b", 50, 50, 0, 0)]
    r = _measure(bufs, 100)
    assert _parts(r)["overlay"] == -60 and r["unexplained_bytes"] == 0
    assert _names(r, "overlay") == ["b over a", "c over a"]
    # a [0, 64), b [64, 128) side by side, c [32, 96) over both (32 B each): two pairs,
    # a and b share nothing
    bufs = [_buf("a", 0, 64, 0, 0), _buf("b", 64, 64, 0, 0), _buf("c", 32, 64, 0, 0)]
    r = _measure(bufs, 128)
    assert _parts(r)["overlay"] == 128 - 192
    assert sorted(_names(r, "overlay")) == ["b over c", "c over a"]
    # a [0, 100) sharing 40 B with b [60, 140), b 8 B with d [132, 172): b over a first
    bufs = [_buf("a", 0, 100, 0, 0), _buf("b", 60, 80, 0, 0), _buf("d", 132, 40, 0, 0)]
    r = _measure(bufs, 172)
    assert _names(r, "overlay") == ["b over a", "d over b"]


def test_the_floors_in_place_writes_are_their_own_part() -> None:
    # the floor (64 B) writes y over x and saves 32 B: its tensors x (32 B) and y (64 B)
    # sum to 96; the tool holds both in 96 B. Parts: model 64 + in_place_assumed 32 = 96.
    bufs = [_buf("x", 0, 32, 0, 0), _buf("y", 32, 64, 0, 0)]
    floor = FloorTensors(64, [("x", 32), ("y", 64)], saved=32, in_place=("x",))
    r = _measure(bufs, 96, floor)
    assert _parts(r)["model"] == 64 and _parts(r)["in_place_assumed"] == 32
    assert _names(r, "in_place_assumed") == ["x"]
    assert r["unexplained_bytes"] == 0


def test_every_floor_tensor_finds_a_buffer_when_one_assignment_exists() -> None:
    # the floor holds u (90 B) and v (100 B); the tool holds 100 B and 110 B buffers at
    # epoch 0. u fits 90-106 B, v 100-116 B: u in the 100 B buffer (10 B padding), v in
    # the 110 B one (10 B): both found, 20 B of alignment. (v first into the 100 B buffer
    # would leave u nowhere.)
    bufs = [_buf("b100", 0, 100, 0, 0), _buf("b110", 100, 110, 0, 0)]
    r = _measure(bufs, 210, FloorTensors(190, [("v", 100), ("u", 90)]))
    assert r["floor_tensors_missing"] == []
    assert _parts(r)["alignment"] == 20 and r["unexplained_bytes"] == 0


def test_a_c_info_without_buffers_is_measured_at_epoch_0() -> None:
    assert _measure([], 0)["epoch"] == 0


def test_an_epoch_holding_the_floor_tensor_at_its_own_size_is_preferred() -> None:
    # t (100 B) is held at epoch 0 as a 16-bit 200 B buffer w, at epoch 1 at its own
    # size in s (100 B, at the same address). Both hold t; epoch 1 holds it as the model
    # has it: the parts are measured there (model 100, and the 100 B more of w at epoch 0
    # is the pool peaking elsewhere).
    bufs = [_buf("w", 0, 200, 0, 0, nbits=16), _buf("s", 0, 100, 1, 1)]
    r = _measure(bufs, 200, FloorTensors(100, [("t", 100)]))
    assert r["epoch"] == 1
    assert _parts(r)["peak_elsewhere"] == 100 and "cut_16bit" not in _parts(r)
    assert r["unexplained_bytes"] == 0


def test_of_equal_epochs_the_first_is_named() -> None:
    # t (64 B) is a at epoch 0 and b at epoch 1 (same address, same size, but a ends
    # before b starts: two buffers): the same measurement at both, epoch 0 is named
    bufs = [_buf("a", 0, 64, 0, 0), _buf("b", 0, 64, 2, 2)]
    r = _measure(bufs, 64, FloorTensors(64, [("t", 64)]))
    assert r["epoch"] == 0 and r["unexplained_bytes"] == 0


def test_a_parts_buffers_are_listed_largest_first() -> None:
    # t (100 B) in b (110 B) in a pool aligned to 4: b is stored 10 B larger, and its end
    # (110) rounds up to 112: the alignment part is 12 B, b's 10 B listed before the
    # pool end's 2 B
    r = _measure([_buf("b", 0, 110, 0, 0)], 112, FloorTensors(100, [("t", 100)]), alignment=4)
    assert _parts(r)["alignment"] == 12 and r["unexplained_bytes"] == 0
    assert _names(r, "alignment") == ["b (stored 10 B larger)", "RAM ends"]


def test_a_second_pool_peaking_elsewhere_is_a_pool_split_or_external_ram() -> None:
    # pool 0 (RAM) holds a (40 B, the floor's t) at epoch 0; pool 1 holds e (100 B) at
    # epoch 1 only. Measured at epoch 0: model 40, and pool 1's 100 B held at another
    # epoch: memory two pools cannot share (pool_split) or, when pool 1 is external RAM,
    # external_ram. Reported 140 = 40 + 100.
    bufs = [_buf("a", 0, 40, 0, 0), _buf("e", 0, 100, 1, 1, pool=1)]
    pools: dict[int, dict[str, Any]] = {0: {"name": "RAM"}, 1: {"name": "OTHER"}}
    floor = FloorTensors(40, [("t", 40)])
    on_chip = measure(bufs, [], pools, {0: 40, 1: 100}, set(), 140, floor)
    assert _parts(on_chip)["pool_split"] == 100 and on_chip["unexplained_bytes"] == 0
    assert _names(on_chip, "pool_split") == ["e (epoch 1)"]
    assert [p["external"] for p in on_chip["pools"]] == [False, False]
    external = measure(bufs, [], pools, {0: 40, 1: 100}, {1}, 140, floor)
    assert _parts(external)["external_ram"] == 100 and "pool_split" not in _parts(external)
    assert [p["external"] for p in external["pools"]] == [False, True]
    assert [p["used_bytes"] for p in external["pools"]] == [40, 100]


def test_parameters_in_a_writable_pool_count_only_when_the_footprint_does() -> None:
    # activations a (100 B) at [0, 100), parameters w (50 B) at [100, 150) of the same
    # pool (used 150 B). A footprint of 150 B counts w (weights part 50 B); one of
    # 100 B leaves it out (no weights part). Both explained to the byte.
    bufs = [_buf("a", 0, 100, 0, 0)]
    params = [_buf("w", 100, 50, 0, 0, kind="weights")]
    counted = _measure(bufs, 150, reported=150, params=params)
    assert _parts(counted)["weights_in_activation_pools"] == 50
    assert counted["unexplained_bytes"] == 0
    apart = _measure(bufs, 150, reported=100, params=params)
    assert "weights_in_activation_pools" not in _parts(apart)
    assert apart["unexplained_bytes"] == 0


def test_the_pools_peak_is_its_largest_aligned_footprint_the_first_of_equals() -> None:
    # pool aligned to 16. Epoch 0: a (40 B, the floor's t) -> 48 B aligned. Epoch 1:
    # b (57 B) -> 64. Epoch 2: c (60 B) -> 64. Neither b nor c is t up to padding. The
    # pool peaks at 64 B aligned at epochs 1 and 2: epoch 1 is named (c holds more bytes
    # unaligned, but the pool's figure is aligned). At epoch 0: model 40, alignment 8,
    # peak elsewhere 64 - 48 = 16.
    bufs = [_buf("a", 0, 40, 0, 0), _buf("b", 0, 57, 1, 1), _buf("c", 0, 60, 2, 2)]
    r = _measure(bufs, 64, FloorTensors(40, [("t", 40)]), alignment=16)
    assert r["epoch"] == 0
    parts = _parts(r)
    assert (parts["model"], parts["alignment"], parts["peak_elsewhere"]) == (40, 8, 16)
    assert _names(r, "peak_elsewhere") == ["b (epoch 1)"]
    assert r["unexplained_bytes"] == 0


def test_of_epochs_holding_the_floor_alike_the_largest_aligned_footprint_is_measured() -> None:
    # pool aligned to 16. a (40 B, the floor's t) lives at epochs 0-1 at [0, 40); x1
    # (17 B) at epoch 0 and x2 (20 B) at epoch 1, both at 48. Both epochs hold t and
    # 80 B aligned (48 + 32): epoch 0, the first, is measured (x2's 3 more bytes are
    # rounded away by the alignment).
    bufs = [_buf("a", 0, 40, 0, 1), _buf("x1", 48, 17, 0, 0), _buf("x2", 48, 20, 1, 1)]
    r = _measure(bufs, 80, FloorTensors(40, [("t", 40)]), alignment=16)
    assert r["epoch"] == 0
    assert _names(r, "tool_tensors") == ["x1"]

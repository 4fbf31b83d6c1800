"""Weights and activations when a memory pool holds both kinds (issue 30, item 1).

No file in ../shared has such a pool; the layouts are minimal reproductions of what the
issue reports (2.1.0 N6 with weights in npuRAM5, a RAM-only Neural-ART profile, a virtual
pool spanning npuRAM3..6), built the way real c_info files are: ``memory_footprint``
counts each pool's used size under every kind it holds. The rule itself is checked on
every real c_info first: where no pool holds both, the split equals the footprint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.parsers import parse_path
from pytest_stedge.parsers.pool_split import split_pools

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"


def _real_c_infos() -> list[Path]:
    return sorted(
        p for p in SHARED.glob("**/*c_info*.json") if "memory_footprint" in p.read_text()
    )


def test_the_split_reproduces_the_footprint_of_every_real_c_info(shared_dir: Path) -> None:
    checked = 0
    for path in _real_c_infos():
        doc = json.loads(path.read_text(encoding="utf-8"))
        split = split_pools(doc)
        footprint = doc["memory_footprint"]
        if split is None or footprint.get("weights") is None:
            continue
        assert (split.weights_bytes, split.activations_bytes) == (
            footprint["weights"],
            footprint["activations"],
        ), path
        assert split.shared_pools == () and not split.footprint_counts_both, path
        checked += 1
    assert checked >= 70  # 77 files in ../shared when this was written


def _pool(pid: int, name: str, used: int, rights: str = "ACC_WRITE", **more: Any) -> dict[str, Any]:
    return {"id": pid, "name": name, "size_bytes": 458_752, "used_size_bytes": used,
            "rights": rights, "subpools": [], **more}  # fmt: skip


def _buffer(bid: int, pool: int, size: int, param: bool, offset: int = 0) -> dict[str, Any]:
    return {"id": bid, "name": f"buf_{bid}", "size_bytes": size, "mpool_id": pool,
            "offset_start": offset, "is_param": param}  # fmt: skip


def _c_info(pools: list[dict[str, Any]], buffers: list[dict[str, Any]],
            weights: int, activations: int) -> dict[str, Any]:  # fmt: skip
    args = "generate --target stm32n6 --st-neural-art ram-only@user_neuralart.json -m m.tflite"
    return {
        "json_schema_version": "2.0",
        "environment": {
            "tools": [
                {"name": "ST.EdgeAI.Core", "version": "2.1.0-20194 329b0e98d", "arguments": args},
                {"name": "ATONN Compiler", "version": "1.1.0-31"},
            ]
        },
        "memory_footprint": {"weights": weights, "activations": activations, "io": [0, 0]},
        "memory_pools": pools,
        "buffers": buffers,
        "graphs": [{"id": 0, "nodes": [
            {"id": 1, "name": "epoch_1", "mapping": "NODE_HW",
             "subgraph_nodes": [{"id": 10, "name": "Conv_1", "type": "Conv"}]},
        ]}],
    }  # fmt: skip


def _report(lines: list[str]) -> str:
    head = [
        "ST Edge AI Core v2.1.0-20194 329b0e98d",
        "Created date          : 2026-02-04 09:53:13",
        "Parameters            : generate --target stm32n6 --st-neural-art ram-only@x.json",
        "",
        "Memory usage information  (input/output buffers are included in activations)",
        "-" * 84,
    ]
    return "\n".join(head + [f"\t{line}" for line in lines] + ["=" * 84, ""])


def _usage(name: str, used: str, weights: str, activations: str) -> str:
    return (
        f"{name:<10} [0x342E0000 - 0x34350000]: {used:>12} /    448.000 kB  ( 7.31 % used) -- "
        f"weights: {weights:>12} ( 7.14 % used)  activations: {activations:>12} ( 0.17 % used)"
    )


# 2.1.0 N6: the weights copied to npuRAM5, beside the input (512 B) and output (256 B).
NPURAM5 = _c_info(
    [_pool(1, "npuRAM5", 33_536), _pool(2, "octoFlash", 0, "ACC_READ")],
    [_buffer(1, 1, 32_768, True), _buffer(2, 1, 512, False, 32_768),
     _buffer(3, 1, 256, False, 33_280)],
    weights=33_536, activations=33_536,
)  # fmt: skip
NPURAM5_LINES = [_usage("npuRAM5", "32.750 kB", "32.000 kB", "768  B"),
                 ("octoFlash  [0x71000000 - 0x78000000]: 0  B / 112.000 MB (0.00 % used) -- "
                 "weights: 0  B (0.00 % used)  activations: 0  B (0.00 % used)")]  # fmt: skip


def _write(folder: Path, doc: dict[str, Any], report: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "network_c_info.json").write_text(json.dumps(doc))
    if report is not None:
        (folder / "network_generate_report.txt").write_text(report)
    return folder


def test_a_pool_holding_weights_and_io_splits_as_the_report_prints(tmp_path: Path) -> None:
    # The c_info alone: its footprint says 33,536 / 33,536; the buffers 32,768 / 768.
    alone = parse_path(_write(tmp_path / "c_info", NPURAM5, None) / "network_c_info.json")
    assert (alone["memory"]["weights_bytes"], alone["memory"]["activations_bytes"]) == (
        32_768,
        768,
    )
    assert alone["memory"]["shared_pools"] == ["npuRAM5"]
    # With the report: its per-pool lines state the same split, nothing to say.
    both = parse_path(_write(tmp_path / "both", NPURAM5, _report(NPURAM5_LINES)))
    assert (both["memory"]["weights_bytes"], both["memory"]["activations_bytes"]) == (32_768, 768)
    assert not [d for d in both.get("diagnostics", []) if d["code"] == "pool-split-differs"]


def test_the_report_alone_gives_the_per_pool_split(tmp_path: Path) -> None:
    path = tmp_path / "network_generate_report.txt"
    path.write_text(_report(NPURAM5_LINES))
    memory = parse_path(path)["memory"]
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (32_768, 768)


def test_a_ram_only_profile_counts_weights_in_ram_once(tmp_path: Path) -> None:
    # npuRAM4 holds only weights (16 B of alignment padding after them), npuRAM5 only
    # activations: the footprint counts npuRAM4 in both kinds.
    doc = _c_info(
        [_pool(1, "npuRAM4", 100_016), _pool(2, "npuRAM5", 2_048)],
        [_buffer(1, 1, 60_000, True), _buffer(2, 1, 40_000, True, 60_016),
         _buffer(3, 2, 2_048, False), _buffer(4, 2, 1_024, False)],
        weights=100_016, activations=102_064,
    )  # fmt: skip
    memory = parse_path(_write(tmp_path, doc, None))["memory"]
    assert memory["weights_bytes"] == 100_000  # the parameters themselves
    assert memory["activations_bytes"] == 2_048 + 16  # npuRAM5, and npuRAM4's padding
    assert "shared_pools" not in memory  # no single pool holds both kinds


def test_a_virtual_pool_over_npuram3_to_6_is_split_through_its_members(tmp_path: Path) -> None:
    # Buffers placed in the virtual pool (id 9); its members' used sizes add up to 135,712
    # (what the footprint states as activations); 133,664 of it are parameters.
    members = [_pool(i, f"npuRAM{i + 2}", used) for i, used in
               ((1, 114_688), (2, 21_024), (3, 0), (4, 0))]  # fmt: skip
    virtual = _pool(9, "npuRAM3_npuRAM4_npuRAM5_npuRAM6", 135_712, subpools=[1, 2, 3, 4])
    virtual["size_bytes"] = 4 * 458_752
    doc = _c_info(
        [*members, virtual, _pool(10, "octoFlash", 0, "ACC_READ")],
        [_buffer(1, 9, 133_664, True), _buffer(2, 9, 2_048, False, 133_664),
         _buffer(3, 9, 1_024, False, 133_664)],
        weights=135_712, activations=135_712,
    )  # fmt: skip
    memory = parse_path(_write(tmp_path, doc, None))["memory"]
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (133_664, 2_048)
    assert memory["shared_pools"] == ["npuRAM3_npuRAM4_npuRAM5_npuRAM6"]


@pytest.mark.parametrize(
    ("activations_line", "kept", "says"),
    [
        ("512  B", 512, "the report's exact figure is kept"),  # printed in bytes: exact
        ("1.062 kB", 768, "the c_info figure is kept"),  # 1,087.5 B, rounded to 1 B
    ],
)
def test_when_the_report_and_the_buffers_disagree_the_result_says_so(
    tmp_path: Path, activations_line: str, kept: int, says: str
) -> None:
    lines = [_usage("npuRAM5", "33.000 kB", "32.000 kB", activations_line)]
    result = parse_path(_write(tmp_path, NPURAM5, _report(lines)))
    assert result["memory"]["activations_bytes"] == kept
    assert result["memory"]["weights_bytes"] == 32_768  # both agree there
    found = [d for d in result["diagnostics"] if d["code"] == "pool-split-differs"]
    assert len(found) == 1 and found[0]["level"] == "warning"
    message = found[0]["message"]
    assert "activations" in message and "768 B" in message and "npuRAM5" in message
    assert says in message


def test_an_n6_run_without_the_npu_is_neural_art_false(shared_dir: Path) -> None:
    # 4.0.0 generate --target stm32n6 without --st-neural-art: "target/series : stm32n6",
    # no epoch table; and the c_info lists layer nodes.
    folder = SHARED / "stedgeai-samples" / "n6-v4.0.0-generate-sw-st-ai-tcn"
    for path in (folder, folder / "network_c_info.json", folder / "network_generate_report.txt"):
        assert parse_path(path)["neural_art"] is False, path
    # an NPU run stays true; a 2.0.0 validate of an NPU run (host-side graph) stays unknown
    npu = SHARED / "stedgeai-samples" / "n6-v3.0.0-mobilenetv2-cli"
    assert parse_path(npu)["neural_art"] is True
    validate = SHARED / "stedgeai-samples" / "n6-v2.0.0-xcubeai10.0-validate-target-tinyyolo"
    assert "neural_art" not in parse_path(validate / "network_null_c_info.json")


def test_pool_entries_and_what_the_split_leaves_out(tmp_path: Path) -> None:
    # Listed first on purpose: a virtual pool, a user I/O pool, a buffer that is no table,
    # one naming no pool, one of 0 bytes, a parameter flag that is not the JSON true.
    virtual = _pool(9, "npuRAM4_npuRAM5", 40_000, subpools=[2, 1])
    user_io = _pool(8, "input_pool", 512, user_allocated=True)
    pools = [virtual, user_io, _pool(1, "npuRAM5", 33_536), _pool(2, "npuRAM4", 1_000),
             _pool(3, "octoFlash", 4_096, "ACC_READ"), _pool(4, "npuRAM6", 2)]  # fmt: skip
    pools[4]["size_bytes"] = -1  # unbounded: no size in the Result
    buffers = ["not a buffer", _buffer(1, 99, 4_000, True), _buffer(2, 4, 0, False),
               _buffer(8, 4, 2, True),
               {**_buffer(3, 2, 1_000, True), "is_param": "true"},
               _buffer(4, 1, 32_768, True), _buffer(5, 1, 768, False),
               _buffer(6, 2, 1, True), _buffer(7, 3, 4_000, True)]  # fmt: skip
    doc = _c_info(pools, buffers, weights=37_633, activations=35_048)
    memory = parse_path(_write(tmp_path, doc, None) / "network_c_info.json")["memory"]
    entries = {p["name"]: p for p in memory["pools"]}
    assert "npuRAM4_npuRAM5" not in entries  # counted through its members
    assert entries["input_pool"]["user_allocated"] is True
    assert (entries["npuRAM5"]["weights_bytes"], entries["npuRAM5"]["activations_bytes"]) == (
        32_768, 768)  # fmt: skip
    # npuRAM4: 1 B of parameters (the "true" string is no flag: 1,000 B of activations)
    assert (entries["npuRAM4"]["weights_bytes"], entries["npuRAM4"]["activations_bytes"]) == (
        1, 999)  # fmt: skip
    assert entries["octoFlash"]["weights_bytes"] == 4_096 and "size_bytes" not in entries["octoFlash"]
    assert entries["npuRAM5"]["size_bytes"] == 458_752
    # totals: read-only 4,096 + writable parameters 32,771; writable 34,538 less those
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (36_867, 1_767)
    # npuRAM6 holds 2 B of parameters and a buffer of 0 bytes: weights only
    assert memory["shared_pools"] == ["npuRAM5", "npuRAM4"]


def test_a_single_byte_of_weights_in_ram_is_enough_to_split(tmp_path: Path) -> None:
    doc = _c_info([_pool(1, "npuRAM5", 2_049), _pool(2, "octoFlash", 100, "ACC_READ")],
                  [_buffer(1, 1, 1, True), _buffer(2, 1, 2_048, False), _buffer(3, 2, 100, True)],
                  weights=2_149, activations=2_049)  # fmt: skip
    memory = parse_path(_write(tmp_path, doc, None) / "network_c_info.json")["memory"]
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (101, 2_048)


def test_without_buffers_the_footprint_stands(tmp_path: Path) -> None:
    doc = _c_info([_pool(1, "npuRAM5", 33_536)], [], weights=33_536, activations=33_536)
    del doc["buffers"]
    memory = parse_path(_write(tmp_path, doc, None) / "network_c_info.json")["memory"]
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (33_536, 33_536)
    assert "split_from_buffers" not in memory


def test_parameters_larger_than_the_pool_give_no_negative_activations(tmp_path: Path) -> None:
    doc = _c_info([_pool(1, "npuRAM5", 1_000)], [_buffer(1, 1, 4_000, True)],
                  weights=1_000, activations=1_000)  # fmt: skip
    memory = parse_path(_write(tmp_path, doc, None) / "network_c_info.json")["memory"]
    assert memory["activations_bytes"] == 0


def test_report_pools_of_one_kind_and_exact_ones() -> None:
    from pytest_stedge.parsers.pool_split import compare_with_report, report_split

    # a kind no pool states is absent; the other one is still read
    assert report_split([{"activations_bytes": 5}]) == {"activations_bytes": (5, 0)}
    # a pool printed in bytes only carries no precision: exact, so the report's is kept
    memory: dict[str, Any] = {"activations_bytes": 768, "shared_pools": ["npuRAM5"]}
    found = compare_with_report(memory, [{"weights_bytes": 1, "activations_bytes": 700}], "r.txt")
    assert memory["activations_bytes"] == 700
    assert len(found) == 1 and "700 B;" in found[0]["message"] and "±" not in found[0]["message"]
    rounded = compare_with_report(
        {"weights_bytes": 10, "activations_bytes": 768},
        [{"weights_bytes": 10, "activations_bytes": 2_000, "precision_bytes": 1,
          "precision": {"weights_bytes": 0, "activations_bytes": 1}}], "r.txt")  # fmt: skip
    assert len(rounded) == 1 and "2,000 B (±1 B)" in rounded[0]["message"]


def test_pool_entries_of_pools_without_parameters_size_or_id(tmp_path: Path) -> None:
    # a pool that is no table (listed first), a pool of 0 bytes (cpuRAM1 of the real 2.1.0
    # mpools), one without an id, a writable pool without parameters, and a parameter
    # buffer without a size; the read-only pool's parameters come first in the buffers.
    no_id = _pool(0, "flexMEM", 16)
    del no_id["id"]
    pools = ["not a pool", _pool(1, "npuRAM5", 2_048), _pool(2, "octoFlash", 100, "ACC_READ"),
             {**_pool(3, "cpuRAM1", 0), "size_bytes": 0}, no_id]  # fmt: skip
    buffers = [_buffer(1, 2, 100, True), _buffer(2, 1, 1, True), _buffer(3, 1, 2_047, False),
               {"id": 4, "name": "unsized", "mpool_id": 1, "is_param": True}]  # fmt: skip
    doc = _c_info(pools, buffers, weights=2_148, activations=2_064)
    memory = parse_path(_write(tmp_path, doc, None) / "network_c_info.json")["memory"]
    entries = {p["name"]: p for p in memory["pools"]}
    assert entries["cpuRAM1"]["size_bytes"] == 0
    assert (entries["cpuRAM1"]["weights_bytes"], entries["cpuRAM1"]["activations_bytes"]) == (0, 0)
    assert (entries["flexMEM"]["weights_bytes"], entries["flexMEM"]["activations_bytes"]) == (0, 16)
    assert (entries["npuRAM5"]["weights_bytes"], entries["npuRAM5"]["activations_bytes"]) == (
        1, 2_047)  # fmt: skip
    # read-only 100 + 1 B in RAM; writable 2,048 + 16 less that byte
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (101, 2_063)

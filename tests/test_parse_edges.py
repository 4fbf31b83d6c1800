"""Edges of the N6 epoch tables, pools and c_info rows that the complete real reports never
reach: truncated tables, counts lines alone, mixed HW and EC rows, odd cells.

Each minimal section is written from the real layouts (2.x list, 3.x/4.x boxed table with
its summary lines, "Memory usage information" pool lines); the expected figures follow from
the lines by hand. A mistake in a branch that the full real tables make redundant (their
counts line and their rows agree) shows here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.parsers import parse_path
from pytest_stedge.parsers.c_info import metric_row, validation_from_metrics
from pytest_stedge.parsers.report_n6 import parse_epochs, parse_memory_usage, software_ops

V3_COUNTS = """Total number of epochs                             {total}
>> pure software (SW) epochs                         {sw}
>> hybrid epochs (using both software and hardware)  {hybrid}
>> pure hardware (HW or EC) epochs                 {hw_ec}  (implemented in {blobs} epoch controller blobs/meta epochs)
"""


def _counts(epochs: dict[str, Any] | None) -> tuple[Any, ...]:
    assert epochs is not None
    return tuple(epochs.get(k) for k in ("total", "hw", "ec", "sw", "hybrid"))


def _v3(rows: list[str], **counts: int) -> list[str]:
    lines = V3_COUNTS.format(**counts).splitlines() if counts else []
    return lines + ["+----+----+----+", "| epoch ID | Type | Details |"] + rows


# ------------------------------------------------------------------ 2.x list and counts


def test_2x_counts_line_alone_gives_total_and_sw_but_not_the_split() -> None:
    epochs = parse_epochs(["Total number of epochs: 95 of which 26 implemented in software"])
    assert _counts(epochs) == (95, None, None, 26, 0)


def test_2x_list_without_its_counts_line_counts_its_lines() -> None:
    epochs = parse_epochs(
        ["epoch 1       HW    ", "epoch 2      -SW-   (   QuantizeLinear   )", "epoch 3       EC    "]
    )
    assert _counts(epochs) == (3, 1, 1, 1, 0)
    assert epochs is not None and epochs["list"][0] == {"id": 1, "kind": "hw", "ops": []}
    assert epochs["list"][1]["ops"] == ["QuantizeLinear"]  # the padding of the cell dropped


def test_2x_partial_list_the_rest_is_hardware_of_the_kind_listed() -> None:
    # 10 epochs, 1 in software, only two lines listed: the other 9 are EC like the listed one
    epochs = parse_epochs(
        [
            "Total number of epochs: 10 of which 1 implemented in software",
            "epoch 1       EC    ",
            "epoch 7      -SW-   (  Softmax  )",
        ]
    )
    assert _counts(epochs) == (10, 0, 9, 1, 0)
    epochs = parse_epochs(
        [
            "Total number of epochs: 10 of which 1 implemented in software",
            "epoch 1       HW    ",
            "epoch 5       ??    ",
            "epoch 7      -SW-   (  Softmax  )",
        ]
    )
    assert _counts(epochs) == (10, 8, 0, 1, 1)  # 10 - 1 SW - 1 hybrid


@pytest.mark.parametrize(
    "listed",
    [
        ["epoch 7      -SW-   (  Softmax  )"],  # no hardware line: of which kind the rest is?
        ["epoch 1       HW    ", "epoch 2       EC    "],  # both kinds: the split is unknown
    ],
)
def test_2x_partial_list_that_does_not_say_the_kind_of_the_rest(listed: list[str]) -> None:
    epochs = parse_epochs(["Total number of epochs: 10 of which 1 implemented in software", *listed])
    assert epochs is not None and (epochs["total"], epochs["sw"]) == (10, 1)
    assert "hw" not in epochs and "ec" not in epochs


def test_2x_hybrid_and_software_ops() -> None:
    epochs = parse_epochs(
        [
            "Total number of epochs: 3 of which 1 implemented in software",
            "epoch 1       ??    ",
            "epoch 2      -SW-   (  Softmax  )",
            "epoch 3       HW    ",
        ]
    )
    assert _counts(epochs) == (3, 1, 0, 1, 1)
    assert epochs is not None and software_ops(epochs) == ["Softmax"]


# ------------------------------------------------------- 3.x/4.x summary lines and table


def test_3x_summary_lines_alone() -> None:
    no_ec = parse_epochs(_v3([], total=56, sw=1, hybrid=0, hw_ec=55, blobs=0))
    assert _counts(no_ec) == (56, 55, 0, 1, 0)
    # one blob and no EC row left in the table (cut): all HW/EC epochs are EC
    ec = parse_epochs(_v3([], total=5, sw=0, hybrid=0, hw_ec=5, blobs=1))
    assert _counts(ec) == (5, 0, 5, 0, 0) and ec is not None and ec["ec_blobs"] == 1


def test_3x_mixed_hw_and_ec_rows() -> None:
    rows = [
        "| epoch_1          |  HW  |         |",
        "| epochs    2 -> 6 |  EC  |         |",
        "| epoch_7          |  HW  |         |",
        "| epoch_8          |  SW  | Softmax |",
    ]
    epochs = parse_epochs(_v3(rows, total=8, sw=1, hybrid=0, hw_ec=7, blobs=1))
    assert _counts(epochs) == (8, 2, 5, 1, 0)


def test_3x_blob_whose_ec_rows_were_cut_leaves_the_listed_hw_rows_hw() -> None:
    rows = ["| epoch_1 |  HW  |  |", "| epoch_2 |  HW  |  |"]
    epochs = parse_epochs(_v3(rows, total=9, sw=0, hybrid=0, hw_ec=9, blobs=1))
    assert _counts(epochs) == (9, 2, 7, 0, 0)


def test_3x_summary_without_sw_and_hybrid_lines_counts_the_rows() -> None:
    lines = [
        "Total number of epochs                             4",
        ">> pure hardware (HW or EC) epochs                 2",  # no blob count printed
        "| epoch ID | Type | Details |",
        "| epoch_1  |  HW  |         |",
        "| epochs 2 -> 2 | EC |      |",
        "| epoch_3  |  SW  | Softmax |",
        "| epoch_4  | Hybrid | Concat |",
    ]
    epochs = parse_epochs(lines)
    assert _counts(epochs) == (4, 1, 1, 1, 1)


def test_3x_counts_win_over_a_cut_table() -> None:
    # the table lost rows; the summary lines still count 2 SW and 1 hybrid, no EC blob
    rows = ["| epoch_1 |  HW  |  |", "| epoch_2 |  SW  | Softmax |"]
    epochs = parse_epochs(_v3(rows, total=10, sw=2, hybrid=1, hw_ec=7, blobs=0))
    assert _counts(epochs) == (10, 7, 0, 2, 1)


def test_3x_table_without_summary_lines() -> None:
    singles = parse_epochs(_v3(["| epoch_1 | HW | |", "| epoch_2 | Hybrid | Concat |"]))
    assert _counts(singles) == (2, 1, 0, 0, 1)  # every epoch listed, none of them EC
    # a blob row: its ids are not all executed epochs, so the total is unknown
    ranged = parse_epochs(_v3(["| epochs 1 -> 51 | EC | |", "| epoch_52 | SW | Sub(float) |"]))
    assert ranged is not None and "total" not in ranged
    assert ranged["list"][0] == {"id": 1, "to": 51, "kind": "ec", "ops": []}


def test_no_epoch_section_is_none() -> None:
    assert parse_epochs(["", "---", "nothing here"]) is None


@pytest.mark.parametrize(
    ("details", "op"),
    [
        ("Sub(float)", "Sub"),
        ("Sub (float)", "Sub"),
        ("Concat", "Concat"),
        ("Pad(a)(b)", "Pad"),
        ("Conv(x) y", "Conv(x) y"),  # not a trailing type annotation: kept
    ],
)
def test_software_op_types_drop_a_trailing_annotation(details: str, op: str) -> None:
    epochs = parse_epochs(_v3([f"| epoch_1 | SW | {details} |"]))
    assert epochs is not None and software_ops(epochs) == [op]


# ------------------------------------------------------------------------ pools


def test_a_pool_with_an_unreadable_size_keeps_its_other_figures() -> None:
    usage = parse_memory_usage(
        [
            (
                "\tnpuRAM5    [0x342E0000 - 0x34350000]:    268.000 kB /    n.a.  ( 59.82 % used)"
                " -- weights:          0  B (  0.00 % used)  activations:    268.000 kB ( 59.82 % used)"
            ),
            (
                "\tcpuRAM1    [0x34064000 - 0x34064000]:          0  B /          0  B  (  0.00 % used)"
                " -- weights:          0  B (  0.00 % used)  activations:          0  B (  0.00 % used)"
            ),
        ]
    )
    ram5, ram1 = usage["pools"]
    assert ram5 == {
        "name": "npuRAM5",
        "used_bytes": 274_432,
        "weights_bytes": 0,
        "activations_bytes": 274_432,
        "precision_bytes": 1,
        "precision": {"weights_bytes": 0, "activations_bytes": 1},  # "0  B" is exact
    }
    assert "precision_bytes" not in ram1  # whole bytes: exact
    assert usage["pool_sums"]["activations_bytes"] == (274_432, pytest.approx(0.512))
    assert usage["total"] == {}


def test_weights_in_kb_pools_beat_an_mb_total(tmp_path: Path) -> None:
    pool = (
        "\t{name:<10} [0x71000000 - 0x78000000]:    {kb} kB /    112.000 MB  (  0.00 % used)"
        " -- weights:    {kb} kB (  0.00 % used)  activations:          0  B (  0.00 % used)"
    )
    lines = [
        pool.format(name="octoFlash", kb="1000.000"),
        pool.format(name="hyperFlash", kb="1000.000"),
        "Total:   1.953 MB   -- weights:      1.953 MB      activations:          0  B",
    ]
    usage = parse_memory_usage(lines)
    assert usage["pool_sums"]["weights_bytes"] == (2_048_000, pytest.approx(1.024))
    assert usage["total"]["weights_bytes"] == (2_047_869, pytest.approx(524.288))
    report = tmp_path / "network_generate_report.txt"
    report.write_text(
        "\n".join(["ST Edge AI Core v2.2.0-20266 2adc00962", "Memory usage information", *lines])
    )
    memory = parse_path(report)["memory"]
    assert memory["weights_bytes"] == 2_048_000 and memory["precision"]["weights_bytes"] == 2
    assert memory["activations_bytes"] == 0 and "activations_bytes" not in memory["precision"]


def test_the_total_line_gives_both_figures_with_their_rounding() -> None:
    usage = parse_memory_usage(
        ["Total:   10.887 MB   -- weights:     10.552 MB      activations:    343.000 kB   "]
    )
    weights, activations = usage["total"]["weights_bytes"], usage["total"]["activations_bytes"]
    assert weights == (11_064_574, pytest.approx(524.288))
    assert activations == (351_232, pytest.approx(0.512))
    assert "pools" not in usage


# ---------------------------------------------------------------- c_info metric rows


def test_metric_row_reads_numbers_percent_strings_and_skips_the_rest() -> None:
    row = {"acc": "n.a.", "rmse": "0.000117739", "cos": 0.999, "snr": True, "l2r": "98.5%"}
    assert metric_row(row) == {"rmse": 0.000117739, "cos": 0.999, "l2r": 98.5}


def test_output_names_come_from_the_tensor_then_the_row_number() -> None:
    validation = validation_from_metrics(
        [
            {"desc": "HOST c-model #1", "rmse": 1.0},
            {"desc": "X-cross #1", "rmse": 0.5, "ts_name": "action"},
            {"desc": "X-cross #2", "rmse": 0.25},
            {"desc": "X-cross", "rmse": 0.125},
            "not a row",
        ]
    )
    assert [o["name"] for o in validation["outputs"]] == ["action", "output_2", "X-cross"]
    assert [o["rmse"] for o in validation["outputs"]] == [0.5, 0.25, 0.125]
    # without reference rows, the c-model rows are the outputs
    alone = validation_from_metrics([{"desc": "HOST c-model #1", "cos": 1.0}])
    assert alone["outputs"] == [{"cos": 1.0, "name": "output_1"}]


def test_a_valid_c_info_named_by_ai_studio_is_a_validate_result(
    shared_dir: Path, tmp_path: Path
) -> None:
    source = shared_dir / "stedgeai-samples/stm32-v2.2.0-generate-mlp/network_c_info.json"
    doc = json.loads(source.read_text())
    doc["environment"]["tools"][0]["arguments"] = ""
    for name, command in (
        ("network_c_info_valid.json", "validate"),
        ("network_mlp_c_info_generate.json", "generate"),
        ("network_mlp_c_info_analyze.json", "analyze"),
    ):
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        assert parse_path(path)["command"] == command, name

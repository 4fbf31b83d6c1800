"""Exact figures win over rounded ones; a figure only known rounded says so, and neither the
diff nor the gate calls a change inside its rounding a regression.

Expected values are the exact byte counts the files state (section tables, c_info), checked
by hand; the rounded ones are the reports' "Memory usage information" lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import built_run

from pytest_stedge.case.model import Case
from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers import parse_path
from pytest_stedge.parsers.figures import parse_size_precise
from pytest_stedge.result import flat_metrics
from pytest_stedge.verdict.bands import parse_band
from pytest_stedge.verdict.compare import ChangeKind, compare_results, within_rounding
from pytest_stedge.verdict.gate import Baseline, judge

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SAMPLES = SHARED / "stedgeai-samples"
CASES = SHARED / "real-cases"
MICRO = CASES / "n6-micro-convs-4flows"


@pytest.mark.parametrize(
    ("text", "size", "error"),
    [
        ("1.262 MB", 1_323_303, 524.288),  # 0.0005 MB
        ("240.000 kB", 245_760, 0.512),
        ("4,833 B", 4_833, 0.0),
        ("497  B", 497, 0.0),
        ("12.00 KBytes", 12_288, 5.12),
        ("147.00 KBytes", 150_528, 5.12),
    ],
)
def test_a_printed_size_and_how_far_it_may_be_from_the_bytes(
    text: str, size: int, error: float
) -> None:
    assert parse_size_precise(text) == (size, pytest.approx(error))


# (text report alone, weights, activations): the section table's exact rows, where the
# memory-usage totals print "4.720 kB" / "1.262 MB" (1,323,303 B) and "12.062 kB" (12,351 B)
EXACT_FROM_SECTION_TABLE = [
    (MICRO / "conv2d_32f_7x7/2.2.0-cubemx-target/network_generate_report.txt", 4_833, 1_323_008),
    (MICRO / "conv2d_64f_3x3/2.2.0-cubemx-target/network_generate_report.txt", 1_985, 12_352),
    # 2.0.0: "10.552 MB" of weights is 11,064,574 B rounded; the table says 11,064,337
    (
        SAMPLES / "n6-v2.0.0-xcubeai10.0-generate-tinyyolo-EC/network_generate_report.txt",
        11_064_337,
        351_232,
    ),
    (
        CASES / "n6-mobilenetv2-224-onnx-irv/rev-A-ir10/4.0.1-aistudio/mobilenet_v2_224.txt",
        3_669_793,
        2_107_392,
    ),
]


@pytest.mark.parametrize(
    ("path", "weights", "activations"),
    EXACT_FROM_SECTION_TABLE,
    ids=[str(p.relative_to(SHARED)) for p, _, _ in EXACT_FROM_SECTION_TABLE],
)
def test_the_section_table_beats_the_rounded_totals(
    shared_dir: Path, path: Path, weights: int, activations: int
) -> None:
    memory = built_run(path)["memory"]
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (weights, activations)
    assert "precision" not in memory  # exact: nothing is approximate


def test_a_report_folder_gives_the_exact_figure_of_its_section_table(shared_dir: Path) -> None:
    # the folder's c_info comes from validate and has no memory_footprint
    result = built_run(MICRO / "conv2d_32f_7x7/2.2.0-cubemx-target")
    assert result["memory"]["activations_bytes"] == 1_323_008
    assert flat_metrics(result)["activations_bytes"] == 1_323_008


def _text_and_c_info_pairs() -> list[tuple[Path, Path]]:
    pairs = []
    if not SHARED.is_dir():
        return pairs
    for c_info in sorted(SHARED.rglob("*c_info.json")):
        for text in sorted(c_info.parent.glob("*_report.txt")):
            pairs.append((text, c_info))
    return pairs


def test_every_n6_text_figure_is_within_its_stated_precision_of_the_c_info(
    shared_dir: Path,
) -> None:
    """c_info memory_footprint is exact and independent of the text: the text's figure must
    be equal to it when exact, and no further than its ``memory.precision`` when rounded."""
    checked = rounded = 0
    for text, c_info in _text_and_c_info_pairs():
        exact = parse_path(c_info).get("memory") or {}
        if "weights_bytes" not in exact:
            continue
        try:
            parsed = parse_path(text)
        except ReportParseError:
            continue
        if not parsed.get("neural_art"):
            continue
        memory = parsed["memory"]
        precision = memory.get("precision") or {}
        for key in ("weights_bytes", "activations_bytes"):
            assert abs(memory[key] - exact[key]) <= precision.get(key, 0), (text, key)
            rounded += key in precision
        checked += 1
    assert checked >= 15  # N6 folders in ../shared with a c_info beside their report
    assert rounded >= 10  # 2.1/2.2 CubeMX and 3.0/4.0 reports without a section table


def test_a_3x_report_without_section_table_marks_its_figures_approximate(
    shared_dir: Path,
) -> None:
    result = parse_path(SAMPLES / "n6-v3.0.0-mobilenetv2-cli/network_generate_report.txt")
    memory = result["memory"]
    # "207.626 kB" and the pools' "240.000 kB": known to half a thousandth of a kB
    assert memory["weights_bytes"] == 212_609 and memory["precision"]["weights_bytes"] == 1
    assert memory["activations_bytes"] == 245_760
    assert memory["precision"]["activations_bytes"] == 1
    metrics = flat_metrics(result)
    assert metrics["precision:weights_bytes"] == 1


MB_ONLY = """ST Edge AI Core v2.2.0-20266 2adc00962
Parameters            : generate --target stm32n6 --name network -m model.tflite
Memory usage information  (input/output buffers are included in activations)
------------------------------------------------------------------------------------
---
Total:                                             1.266 MB                                  -- weights:      4.720 kB                  activations:      1.262 MB
====================================================================================
"""

POOLS_IN_KB = """ST Edge AI Core v2.2.0-20266 2adc00962
Memory usage information  (input/output buffers are included in activations)
------------------------------------------------------------------------------------
\tcpuRAM2    [0x34100000 - 0x34200000]:    256.000 kB /      1.000 MB  ( 25.00 % used) -- weights:          0  B (  0.00 % used)  activations:    256.000 kB ( 25.00 % used)
\tnpuRAM5    [0x342E0000 - 0x34350000]:    268.000 kB /    448.000 kB  ( 59.82 % used) -- weights:          0  B (  0.00 % used)  activations:    268.000 kB ( 59.82 % used)
\toctoFlash  [0x71000000 - 0x78000000]:      4.720 kB /    112.000 MB  (  0.00 % used) -- weights:      4.720 kB (  0.00 % used)  activations:          0  B (  0.00 % used)
---
Total:                                             0.516 MB                                  -- weights:      4.720 kB                  activations:      0.512 MB
====================================================================================
"""


def test_only_an_mb_total_is_approximate_to_half_a_thousandth_of_an_mb(tmp_path: Path) -> None:
    path = tmp_path / "network_generate_report.txt"
    path.write_text(MB_ONLY)
    memory = built_run(path)["memory"]
    assert memory["activations_bytes"] == 1_323_303  # round(1.262 * 1024 * 1024)
    assert memory["precision"] == {"weights_bytes": 1, "activations_bytes": 525}


def test_pools_printed_in_kb_beat_a_total_printed_in_mb(tmp_path: Path) -> None:
    path = tmp_path / "network_generate_report.txt"
    path.write_text(POOLS_IN_KB)
    memory = built_run(path)["memory"]
    # 256 kB + 268 kB = 536,576 B to within 2 x 0.512 B; "0.512 MB" is 536,871 B +-524
    assert memory["activations_bytes"] == 536_576
    assert memory["precision"]["activations_bytes"] == 2
    assert {p["name"]: p.get("precision_bytes") for p in memory["pools"]} == {
        "cpuRAM2": 1,
        "npuRAM5": 1,
        "octoFlash": 1,
    }


def _metrics(tmp_path: Path, text: str, name: str) -> dict[str, float]:
    path = tmp_path / name
    path.write_text(text)
    return flat_metrics(parse_path(path))


def test_the_diff_never_calls_a_change_inside_the_rounding_a_regression(tmp_path: Path) -> None:
    base = _metrics(tmp_path, MB_ONLY, "base_generate_report.txt")  # 1,323,303 +- 525
    exact = dict(base, activations_bytes=1_323_008.0)
    for key in [k for k in exact if k.startswith("precision:")]:
        del exact[key]
    inside = dict(exact, activations_bytes=1_323_800.0)  # +497 B: inside the 525
    beyond = dict(exact, activations_bytes=1_323_900.0)  # +597 B: beyond it
    band = "0"

    def kind(head: dict[str, float]) -> ChangeKind:
        (change,) = [
            c
            for c in compare_results(
                "c", "generate", base, head, comparable=True, bands={}, default_band=band
            )
            if c.metric == "activations_bytes"
        ]
        return change.kind

    assert kind(exact) is ChangeKind.UNCHANGED  # -295 B: not an improvement either
    assert kind(inside) is ChangeKind.UNCHANGED
    assert kind(beyond) is ChangeKind.REGRESSED
    # exact on both sides: any worsening counts (band 0)
    exact_base = {k: v for k, v in exact.items()}
    worse = dict(exact, activations_bytes=1_323_009.0)
    (change,) = [
        c
        for c in compare_results(
            "c", "generate", exact_base, worse, comparable=True, bands={}, default_band=band
        )
        if c.metric == "activations_bytes"
    ]
    assert change.kind is ChangeKind.REGRESSED


def test_within_rounding_adds_both_sides_precision() -> None:
    base = {"activations_bytes": 1000.0, "precision:activations_bytes": 100.0}
    head = {"activations_bytes": 1250.0, "precision:activations_bytes": 200.0}
    kind = ChangeKind.REGRESSED
    assert within_rounding(kind, "activations_bytes", 1000.0, 1250.0, base, head) is (
        ChangeKind.UNCHANGED
    )
    assert within_rounding(kind, "activations_bytes", 1000.0, 1301.0, base, head) is kind
    # other kinds are never softened
    for other in (ChangeKind.NEWLY_FAILING, ChangeKind.NOT_COMPARABLE, ChangeKind.FIXED):
        assert within_rounding(other, "activations_bytes", 1000.0, 1001.0, base, head) is other


def test_the_gate_does_not_fail_an_item_on_a_change_inside_the_rounding(tmp_path: Path) -> None:
    case = Case(
        name="conv7x7",
        path=tmp_path / "case.toml",
        corpus_root=tmp_path,
        model=tmp_path / "model.tflite",
        target="stm32n6",
    )
    base = _metrics(tmp_path, MB_ONLY, "base_generate_report.txt")
    baseline = Baseline(
        version="2.2.0", metrics=base, model_sha256="m", options_hash=case.options_hash()
    )

    def failing(activations: float) -> list[str]:
        head = {"weights_bytes": 4_833.0, "activations_bytes": activations}
        verdict = judge(
            case=case,
            stage="generate",
            version="4.0.0",
            result={},
            metrics=head,
            model_sha256="m",
            baseline=baseline,
            default_band="0",
            strict_baseline=True,  # improvements fail too: the rounding must not
            registry=None,
        )
        return [c.metric for c in verdict.failing_changes]

    assert failing(1_323_008.0) == []  # the exact figure of the same run
    assert failing(1_330_000.0) == ["activations_bytes"]
    assert parse_band("0").value == 0

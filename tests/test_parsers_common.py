"""Version banners, diagnostics, encodings and bad input of the parsers."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers import extract_diagnostics, parse_path, parse_version_banner
from pytest_stedge.parsers.common import parse_size
from pytest_stedge.parsers.val_files import st_metrics

SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "stedgeai-samples"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ST Edge AI Core v4.0.1-20581 7ed50de05\n   ISPU 2.0.1-RC2\n   STM32CubeAI 12.0.1-RC2\n",
            {
                "version": "4.0.1",
                "build": "20581",
                "revision": "7ed50de05",
                "family": "stedgeai",
                "cubeai": "12.0.1-RC2",
            },
        ),
        (
            "ST Edge AI Core v2.0.0-20049\n   STM32CubeAI 10.0.0\n",
            {"version": "2.0.0", "build": "20049", "family": "stedgeai", "cubeai": "10.0.0"},
        ),
        ("ST Edge AI Core v1.0.0-A1\n", {"version": "1.0.0", "build": "A1", "family": "stedgeai"}),
        (
            "STEdgeAI Core v9.0.0-19802\nCreated date : x\n",
            {"version": "9.0.0", "build": "19802", "family": "stedgeai"},
        ),
        (
            "\x1b[32mST Edge AI Core v2.2.0-20266 2adc00962\x1b[0m\n",
            {"version": "2.2.0", "build": "20266", "revision": "2adc00962", "family": "stedgeai"},
        ),
        (
            "stm32ai - Neural Network Tools for STM32 v1.4.0 (AI tools v5.2.0)\n",
            {"version": "5.2.0", "family": "stm32ai"},
        ),
        (
            "Neural Network Tools for STM32AI v1.6.0 (STM.ai v7.2.0-RC5)",
            {"version": "7.2.0", "build": "RC5", "family": "stm32ai"},
        ),
        (
            "Neural Network Tools for STM32 family v1.7.0 (stm.ai v8.1.0-19520)",
            {"version": "8.1.0", "build": "19520", "family": "stm32ai"},
        ),
        ("usage: something else\n", None),
        ("", None),
    ],
)
def test_version_banner(text: str, expected: dict[str, str] | None) -> None:
    assert parse_version_banner(text) == expected


def test_diagnostics_codes_internal_tool_and_ignored_warnings() -> None:
    lines = [
        "ST Edge AI Core v4.0.0-20500 359356bb0",
        "E: _Einsum_1_output_0_reshape_1_to_chlast layer - number of I/O tensor is not coherent: 0/1",
        "E102(CliArgumentError): --address/--copy-weights-at arguments are not supported with the 'st-ai' c-api.",
        "INTERNAL ERROR: Transpose on batch not supported in layer _df_gru_gru_Transpose_output_0",
        "error              : TOOL ERROR: Weights are incompatible with model: 93180 loaded, 89864 found",
        "\x1b[31mE010(InvalidModelError): Non-numerical or not-string elements in x\x1b[0m",
        "E102(CliArgumentError): --address/--copy-weights-at arguments are not supported with the 'st-ai' c-api.",
    ]
    console = "\n".join(lines)
    assert extract_diagnostics(console) == [
        {
            "level": "error",
            "code": "E102",
            "kind": "CliArgumentError",
            "message": "--address/--copy-weights-at arguments are not supported with the 'st-ai' c-api.",
        },
        {
            "level": "error",
            "kind": "InternalError",
            "message": "Transpose on batch not supported in layer _df_gru_gru_Transpose_output_0",
        },
        {
            "level": "error",
            "kind": "ToolError",
            "message": "Weights are incompatible with model: 93180 loaded, 89864 found",
        },
        {
            "level": "error",
            "code": "E010",
            "kind": "InvalidModelError",
            "message": "Non-numerical or not-string elements in x",
        },
    ]


def test_no_diagnostics_in_a_clean_run() -> None:
    assert (
        extract_diagnostics("ST Edge AI Core v2.2.0-20266\nelapsed time (generate): 3.2s\n") == []
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("240.000 kB", 245_760),
        ("207.626 kB", 212_609),
        ("52 Bytes", 52),
        ("1.12 KBytes", 1147),
        ("0  B", 0),
        ("112.000 MB", 117_440_512),
        ("20.51 KiB", 21_002),
        ("nothing", None),
    ],
)
def test_sizes(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


REPORT = """ST Edge AI Core v2.2.0-20266 2adc00962
Created date          : 2026-05-14 22:14:18
Parameters            : generate --model m.onnx --target stm32h7

Exec/report summary (generate)
----------------------------------------------------------
model file         :   /tmp/m.onnx
type               :   onnx
target/series      :   stm32h7
model_name         :   m
model_hash         :   0x0123456789abcdef0123456789abcdef
params #           :   5,251 items (20.51 KiB)
----------------------------------------------------------
macc               :   5,409
weights (ro)       :   21,004 B (20.51 KiB) (1 segment)
activations (rw)   :   512 B (512 B) (1 segment) *
ram (total)        :   512 B (512 B) = 512 + 0 + 0
----------------------------------------------------------
"""


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def test_minimal_report(tmp_path: Path) -> None:
    result = parse_path(_write(tmp_path, "network_generate_report.txt", REPORT))
    assert result["tool"] == {"version": "2.2.0", "build": "20266", "revision": "2adc00962"}
    assert result["command"] == "generate" and result["target"] == "stm32h7"
    assert result["memory"] == {
        "weights_bytes": 21_004,
        "activations_bytes": 512,
        "io_bytes": [0, 0],
    }
    assert result["macc"] == 5_409
    assert result["model"] == {
        "file": "m.onnx",
        "type": "onnx",
        "name": "m",
        "hash": "0x0123456789abcdef0123456789abcdef",
        "params": 5_251,
    }


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
def test_reports_saved_in_other_encodings(tmp_path: Path, encoding: str) -> None:
    path = _write(tmp_path, "r_generate_report.txt", REPORT.replace("\n", "\r\n").encode(encoding))
    assert parse_path(path)["memory"]["weights_bytes"] == 21_004


def test_utf8_read_as_utf16_is_recovered(tmp_path: Path) -> None:
    garbled = REPORT.encode("utf-8")
    if len(garbled) % 2:
        garbled += b" "
    path = _write(tmp_path, "mis_generate_report.txt", garbled.decode("utf-16-le").encode("utf-8"))
    assert parse_path(path)["macc"] == 5_409


def test_console_with_ansi_tqdm_and_nbsp(tmp_path: Path) -> None:
    console = (
        "\x1b[1mST Edge AI Core v4.0.0-20500 359356bb0\x1b[0m\n"
        "PASS:  92%|█████████▏| 158/171 [00:02<00:00, 42.36it/s]\n"
        + REPORT.split("\n", 3)[3].replace("weights (ro)", "weights\xa0(ro)")
    )
    result = parse_path(_write(tmp_path, "console.log", console))
    assert result["tool"]["version"] == "4.0.0"
    assert result["memory"]["weights_bytes"] == 21_004


def test_unknown_future_version_is_parsed_with_a_warning(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "n_generate_report.txt",
        REPORT.replace("v2.2.0-20266 2adc00962", "v7.3.0-30000 abcdef012"),
    )
    result = parse_path(path)
    assert result["memory"]["weights_bytes"] == 21_004
    (warning,) = result["diagnostics"]
    assert warning["level"] == "warning" and "7.3.0" in warning["message"]


def test_unknown_version_in_c_info(tmp_path: Path) -> None:
    doc = {
        "json_schema_version": "2.0",
        "environment": {"tools": [{"name": "ST.EdgeAI.Core", "version": "5.1.0-1"}]},
        "memory_footprint": {"weights": 10, "activations": 20, "io": [0, 0]},
    }
    result = parse_path(_write(tmp_path, "network_c_info.json", json.dumps(doc)))
    assert result["memory"]["weights_bytes"] == 10
    assert "5.1.0" in result["diagnostics"][0]["message"]


def test_truncated_c_info_names_file_and_line(shared_dir: Path, tmp_path: Path) -> None:
    text = (SAMPLES / "n6-v3.0.0-mobilenetv2-cli/network_c_info.json").read_text()
    path = _write(tmp_path, "network_c_info.json", text[: len(text) // 2])
    with pytest.raises(ReportParseError) as info:
        parse_path(path)
    assert info.value.path == path and info.value.line is not None and info.value.line > 1
    assert str(path) in str(info.value) and "invalid JSON" in str(info.value)


def test_truncated_c_info_in_a_folder_fails_the_folder(shared_dir: Path, tmp_path: Path) -> None:
    src = SAMPLES / "n6-v3.0.0-mobilenetv2-cli"
    shutil.copy(src / "network_generate_report.txt", tmp_path)
    (tmp_path / "network_c_info.json").write_text((src / "network_c_info.json").read_text()[:5000])
    with pytest.raises(ReportParseError, match="network_c_info.json"):
        parse_path(tmp_path)


def test_binary_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "network.bin", bytes(range(256)) * 8)
    with pytest.raises(ReportParseError, match="binary file"):
        parse_path(path)


def test_folder_without_tool_output(tmp_path: Path) -> None:
    _write(tmp_path, "notes.txt", "nothing to see\n")
    _write(tmp_path, "user_neuralart.json", '{"Profiles": {}}')
    with pytest.raises(ReportParseError, match="no stedgeai output") as info:
        parse_path(tmp_path)
    assert info.value.path == tmp_path


@pytest.mark.parametrize("content", ["", "   \n", "hello world\n", '{"foo": 1}', "[1, 2]"])
def test_files_that_are_not_tool_output(tmp_path: Path, content: str) -> None:
    with pytest.raises(ReportParseError):
        parse_path(
            _write(
                tmp_path, "x.json" if content.strip().startswith(("{", "[")) else "x.txt", content
            )
        )


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ReportParseError, match="no such file"):
        parse_path(tmp_path / "absent")


def test_npz_and_csv_from_a_float_validate_run(tmp_path: Path) -> None:
    import numpy as np

    ref = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], dtype=np.float32)
    out = ref + np.float32(0.01)
    np.savez(tmp_path / "network_val_io.npz", m_outputs_1=ref, c_outputs_1=out)
    result = parse_path(tmp_path / "network_val_io.npz")
    (metrics,) = result["validation"]["outputs"]
    assert result["validation"]["samples"] == 3
    assert metrics["rmse"] == pytest.approx(0.01, rel=1e-4)
    assert metrics["mean"] == pytest.approx(-0.01, rel=1e-4)  # reference minus prediction
    header = "# dtype=float32\n# c-model features - 3/3\n"
    (tmp_path / "network_val_c_outputs_1.csv").write_text(
        header + "\n".join(",".join(map(str, r)) for r in out)
    )
    (tmp_path / "network_val_m_outputs_1.csv").write_text(
        header + "\n".join(",".join(map(str, r)) for r in ref)
    )
    folder = parse_path(tmp_path)
    assert folder["validation"]["outputs"][0]["rmse"] == pytest.approx(0.01, rel=1e-4)


def test_st_metrics_formulas() -> None:
    metrics = st_metrics([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    assert (
        metrics["rmse"] == 0 and metrics["cos"] == pytest.approx(1.0) and math.isinf(metrics["snr"])
    )
    metrics = st_metrics([1.0, 0.0], [0.0, 1.0])
    assert metrics["cos"] == 0.0 and metrics["l2r"] == pytest.approx(math.sqrt(2))


def test_npz_that_is_not_a_validate_dump(tmp_path: Path) -> None:
    import numpy as np

    np.savez(tmp_path / "other.npz", input_ids=np.zeros(3))
    with pytest.raises(ReportParseError, match="m_outputs"):
        parse_path(tmp_path / "other.npz")


def test_corrupt_npz(tmp_path: Path) -> None:
    path = _write(tmp_path, "network_val_io.npz", b"PK\x03\x04garbage")
    with pytest.raises(ReportParseError, match="npz"):
        parse_path(path)


def test_unreadable_c_info_valid_does_not_fail_the_folder(tmp_path: Path) -> None:
    _write(tmp_path, "network_generate_report.txt", REPORT)
    _write(tmp_path, "network_c_info_valid.json", '{"something": "else"}')
    assert parse_path(tmp_path)["macc"] == 5_409
    (tmp_path / "network_generate_report.txt").unlink()
    with pytest.raises(ReportParseError, match="no stedgeai output"):
        parse_path(tmp_path)


def test_runner_output_folder_with_generated_sources(shared_dir: Path, tmp_path: Path) -> None:
    """What the toolchain runner hands over: st_ai_output/ with C files, blobs and LICENSE."""
    src = SAMPLES / "n6-v3.0.0-mobilenetv2-cli"
    for name in ("network_generate_report.txt", "network_c_info.json"):
        shutil.copy(src / name, tmp_path)
    _write(tmp_path, "network.c", "/* generated */\n")
    _write(tmp_path, "network_atonbuf.xSPI2.raw", bytes(range(256)) * 64)
    _write(tmp_path, "LICENSE.txt", "Copyright (c) 2025 STMicroelectronics.\n")
    _write(tmp_path, "mobilenet_OE_3_3_1_Q.json", '{"quant": []}')
    result = parse_path(tmp_path)
    assert result["command"] == "generate"
    assert (result["memory"]["weights_bytes"], result["epochs"]["sw"], result["macc"]) == (
        212_609,
        1,
        22_464_344,
    )
    assert sorted(Path(s).name for s in result["sources"]) == [
        "network_c_info.json",
        "network_generate_report.txt",
    ]

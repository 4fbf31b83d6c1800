"""Parsers that cannot be slowed or crashed: linear diagnostics, regexes that do not
backtrack, figures no float can hold, NaN in JSON output, huge files, capped tool output."""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.errors import ReportParseError, ToolchainError
from pytest_stedge.parsers import extract_diagnostics, parse_path
from pytest_stedge.parsers.common import MAX_MB_ENV, is_progress_bar
from pytest_stedge.result import flat_metrics
from pytest_stedge.tool.discovery import OUTPUT_TAIL_BYTES, run_tool

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SAMPLES = SHARED / "stedgeai-samples"

# ------------------------------------------------------------------------ diagnostics


def _reference(text: str) -> list[tuple[Any, str, str]]:
    """What extract_diagnostics keeps, by the definition (quadratic, fine for small inputs):
    a message is dropped when one kept before, of the same code and kind, starts it or is
    started by it."""
    import re

    kept: list[tuple[Any, str, str]] = []
    for line in text.splitlines():
        match = re.search(r"\b(E\d{3})\((\w+)\):\s*(.*)", line)
        if match:
            diag = (match.group(1), match.group(2), match.group(3).strip())
        else:
            plain = re.search(r"\b(INTERNAL ERROR|TOOL ERROR|LOAD ERROR):\s*(.*)", line)
            if not plain:
                continue
            diag = (None, plain.group(1).title().replace(" ", ""), plain.group(2).strip())
        if not any(
            (k[0], k[1]) == diag[:2] and (diag[2].startswith(k[2]) or k[2].startswith(diag[2]))
            for k in kept
        ):
            kept.append(diag)
    return kept


def test_diagnostics_keep_each_error_once_as_the_definition_says() -> None:
    rng = random.Random(7)
    words = ["layer", "Conv", "Conv_1", "not", "supported", "x", "x."]
    lines = []
    for _ in range(400):
        kind = rng.choice(["E103(InvalidModelError)", "E102(CliArgumentError)", "LOAD ERROR"])
        message = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        prefix = rng.choice(["", "Run failed: ", "\x1b[31m", "PASS: 50%\r"])
        lines.append(f"{prefix}{kind}: {message}")
    text = "\n".join(lines)
    got = [(d.get("code"), d["kind"], d["message"]) for d in extract_diagnostics(text)]
    # ANSI codes are removed first and "\r" ends a line, as splitlines() cuts it
    cleaned = text.replace("\x1b[31m", "")
    assert got == _reference(cleaned)


def test_twenty_thousand_distinct_errors_are_all_kept() -> None:
    text = "\n".join(f"E103(InvalidModelError): layer conv_{i} is not supported" for i in range(20_000))
    diags = extract_diagnostics(text)
    assert len(diags) == 20_000
    assert diags[-1]["message"] == "layer conv_19999 is not supported"


def test_a_wrapper_repeating_an_error_with_a_tail_is_one_error() -> None:
    text = (
        "LOAD ERROR: STM32 - read timeout 21.6s/20s\n"
        "Run failed: ... LOAD ERROR: STM32 - read timeout 21.6s/20s. Please check the board\n"
    )
    assert [d["message"] for d in extract_diagnostics(text)] == [
        "STM32 - read timeout 21.6s/20s"
    ]


# ---------------------------------------------------------------- no super-linear regex


@pytest.mark.parametrize(
    ("line", "bar"),
    [
        ("PASS:  92%|#########1| 91/99 [00:05<00:00, 20.99it/s]", True),
        ("  STM.IO:  10%|#         | 1/10 [00:01<00:09]", True),
        (" 100%|##########| 171/171", True),
        ("1234%|", True),  # a label may end in digits: "1" + "234%|"
        ("a label longer than twenty chars: 5%|", False),
        ("weights: 5 %|", False),
        (" " * 55, False),
        ("tab\t: 5%|", False),
        ("ta\tb 5%|", False),
        ("%|", False),
    ],
)
def test_progress_bar_lines(line: str, bar: bool) -> None:
    import re

    regex = re.compile(r"^\s*[\w.\- ]{0,20}:?\s*\d{1,3}%\|")  # the filter's definition
    assert is_progress_bar(line) is bar
    assert bool(regex.match(line)) is bar


# Lines that almost match a pattern of the text parsers (each stops short of its end).
NEAR_MISSES = [
    " weights (ro)" + " " * 55,
    " activations (rw)   :" + " " * 55 + "x",
    "model: macc=1 " + "x" * 55,
    "model/c-model: macc=1/2 weights=3/4" + " " * 55,
    "\tnpuRAM5    [0x342E0000 - 0x34350000]: " + " " * 55 + "/",
    "Total:" + " " * 55 + "--",
    "epoch 1       HW    (" + " " * 55,
    "| epoch_1 |" + " " * 55 + "|",
    "| epochs 1 -> " + " " * 55,
    "  device.desc" + " " * 55,
    "  duration       :   " + " " * 55 + "ms",
    "E103(" + "x" * 55,
    "\x1b]" + " " * 55,
    " " * 55 + "9%",
    "X-cross #" + " " * 55,
    "2026-06-16 21:38:16,979 [INFO]" + " " * 55,
    "Requested memory size by section" + " " * 55,
    "  " * 27 + ":",
]
SECTIONS = [
    " Exec/report summary (generate)",
    "Memory usage information",
    "Epochs details",
    ' Requested memory size by section - "stm32n6npu" target',
    "Evaluation report (summary)",
    " Output       acc    rmse   mae   l2r   mean  std   nse   cos    tensor",
]


def _report(lines_per_section: int, width: int = 55) -> str:
    out = ["ST Edge AI Core v4.0.0-20500 359356bb0"]
    for title in SECTIONS:
        out.append(title)
        for i in range(lines_per_section):
            if i % 2:
                out.append(" " * width)
            else:
                line = NEAR_MISSES[(i // 2) % len(NEAR_MISSES)]
                out.append(line.replace(" " * 55, " " * width))
    return "\n".join(out) + "\n"


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best CPU time of ``repeat`` runs (wall time on a shared machine measures waiting)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def _parse_time(tmp_path: Path, text: str, name: str) -> float:
    path = tmp_path / name
    path.write_text(text)
    return _best(lambda: parse_path(path))


def test_blank_and_near_miss_lines_cost_linear_time(tmp_path: Path) -> None:
    """10,000 blank lines of spaces and 10,000 near-miss lines in every section against
    1,000 of each: a linear parser takes about 10 times as long, one that backtracks over
    lines about 100 times. Measured as a ratio in one run (the machine is shared)."""
    small = _parse_time(tmp_path, _report(2_000), "small_generate_report.txt")
    large = _parse_time(tmp_path, _report(20_000), "large_generate_report.txt")
    assert large / small < 30, f"{large:.3f} s vs {small:.3f} s"


def test_long_runs_of_spaces_cost_linear_time(tmp_path: Path) -> None:
    """The same lines 10 times wider: a regex backtracking over a run of spaces (the old
    progress-bar filter took ~1 ms per 55-space line) costs 100 times more, not 10."""
    narrow = _parse_time(tmp_path, _report(400, width=55), "narrow_generate_report.txt")
    wide = _parse_time(tmp_path, _report(400, width=550), "wide_generate_report.txt")
    assert wide / narrow < 30, f"{wide:.3f} s vs {narrow:.3f} s"


# --------------------------------------------------- figures no float can hold (text/JSON)

MLP = SAMPLES / "stm32-v2.2.0-generate-mlp"


@pytest.mark.parametrize(
    ("figure", "why"),
    [("9" * 5000, "more than 4300 digits"), ("9" * 400, "overflows a float")],
)
def test_a_text_figure_no_float_holds_names_file_and_line(
    shared_dir: Path, tmp_path: Path, figure: str, why: str
) -> None:
    lines = (MLP / "network_generate_report.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("weights (ro)"))
    lines[at] = lines[at].replace("21,004 B", f"{figure} B")
    path = tmp_path / "network_generate_report.txt"
    path.write_text("\n".join(lines))
    with pytest.raises(ReportParseError, match=why) as info:
        parse_path(path)
    assert info.value.path == path and info.value.line == at + 1


@pytest.mark.parametrize(
    ("literal", "why"),
    [
        ("9" * 5000, "more than 4300 digits"),
        ("9" * 400, "overflows a float"),
        ("1e999", "overflows a float"),
    ],
)
def test_a_c_info_figure_no_float_holds_names_file_and_line(
    shared_dir: Path, tmp_path: Path, literal: str, why: str
) -> None:
    text = (MLP / "network_c_info.json").read_text()
    assert text.count('"weights": 21004') == 1
    text = text.replace('"weights": 21004', f'"weights": {literal}')
    line = text[: text.index(f'"weights": {literal}')].count("\n") + 1
    path = tmp_path / "network_c_info.json"
    path.write_text(text)
    with pytest.raises(ReportParseError, match=why) as info:
        parse_path(path)
    assert info.value.path == path and info.value.line == line


def test_a_report_json_figure_no_float_holds_is_refused(shared_dir: Path, tmp_path: Path) -> None:
    source = SAMPLES / "stm32l4-v2.0.0-generate-har-h5-with-report-json/network_model.h5_report.json"
    doc = json.loads(source.read_text())
    doc["rom_size"] = 10**400
    path = tmp_path / "network_report.json"
    path.write_text(json.dumps(doc, indent=1))
    with pytest.raises(ReportParseError, match="overflows a float") as info:
        parse_path(path)
    assert info.value.line is not None and "rom_size" in path.read_text().splitlines()[
        info.value.line - 1
    ]


def test_a_result_holding_such_a_figure_is_refused_naming_its_source() -> None:
    result = {"schema": "stedge.result/1", "memory": {"weights_bytes": 10**400}, "sources": ["x.txt"]}
    with pytest.raises(ReportParseError, match="overflows a float") as info:
        flat_metrics(result)
    assert info.value.path == Path("x.txt")


def test_the_cli_says_error_and_exits_2_on_such_a_figure(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (MLP / "network_c_info.json").read_text().replace('"weights": 21004', '"weights": 1e999')
    path = tmp_path / "network_c_info.json"
    path.write_text(text)
    assert _cli(["parse", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert str(path) in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


# ------------------------------------------------------------------- JSON output, NaN


def _cli(argv: list[str]) -> int:
    from pytest_stedge.cli.main import main

    return main(argv)  # as a user runs it: errors become one line, exit 2


def test_parse_json_prints_null_for_an_infinite_snr(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # identical outputs on the board: the report prints "snr ... inf" (4.0.0 Dev Cloud)
    path = SHARED / "real-cases/n6-micro-convs-4flows/conv2d_3x3/4.0.0-devcloud/conv2d_3x3_report.txt"
    assert _cli(["parse", str(path), "--json", "--run", "2"]) == 0  # its validate run
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out
    result = json.loads(out)  # strict JSON
    (output,) = result["validation"]["outputs"]
    assert output["snr"] is None
    warnings = [d for d in result["diagnostics"] if d.get("code") == "non-finite"]
    assert [w["message"].split(";")[0] for w in warnings] == [
        "validation.outputs[0].snr is inf",
        "validation.rows[0].snr is inf",
    ]


# ------------------------------------------------------------------------ huge files


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "network_generate_report.txt"
    with path.open("wb") as handle:  # a sparse 200 MB file: no disk, no memory
        handle.truncate(200 * 1024 * 1024)
    with pytest.raises(ReportParseError, match=r"200\.0 MiB is over the 64 MiB limit") as info:
        parse_path(path)
    assert MAX_MB_ENV in str(info.value)
    monkeypatch.setenv(MAX_MB_ENV, "300")
    with pytest.raises(ReportParseError, match="binary file|no stedgeai"):
        parse_path(path)  # read now, and refused for what it holds


# ---------------------------------------------------------------- capped tool output


def test_the_tool_output_is_read_from_its_tail(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\n"
        "for i in range(60000):\n"
        "    print(f'E103(InvalidModelError): layer conv_{i} is not supported')\n"
        "sys.exit(2)\n"
    )
    run = run_tool([sys.executable, str(script)], cwd=tmp_path / "run", timeout=120)
    assert run.returncode == 2
    assert run.log.stat().st_size > 2 * OUTPUT_TAIL_BYTES  # the log keeps everything
    assert len(run.output.encode()) <= OUTPUT_TAIL_BYTES + 200
    assert run.output.startswith("[... first ")
    messages = [d["message"] for d in extract_diagnostics(run.output)]
    assert messages[-1] == "layer conv_59999 is not supported"
    assert "layer conv_0 is not supported" not in messages


def test_a_tool_that_prints_and_hangs_times_out_with_the_tail(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import sys, time\n"
        "for i in range(20000):\n"
        "    print(f'E103(InvalidModelError): layer conv_{i} is not supported')\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(ToolchainError) as info:
        run_tool([sys.executable, str(script)], cwd=tmp_path / "run", timeout=3)
    assert info.value.timed_out == 3
    assert "layer conv_19999 is not supported" in info.value.output_tail


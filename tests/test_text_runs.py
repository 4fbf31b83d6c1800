"""Where a console capture's runs start (parsers/text_runs.py), on hand-written captures."""

from __future__ import annotations

from pytest_stedge.parsers.text_runs import echoed_command, split_runs

GENERATE = ["Copying template folder", " Exec/report summary (generate)", " macc : 10"]


def test_an_echoed_command_line_starts_the_next_run() -> None:
    lines = [*GENERATE, ">>> stedgeai validate --model m.tflite --target stm32n6",
             "Setting validation data...", " Exec/report summary (validate)"]  # fmt: skip
    runs = split_runs(lines)
    assert [len(r) for r in runs] == [3, 3]
    assert runs[1][0].startswith(">>> stedgeai validate") and echoed_command(runs[1]) == "validate"


def test_a_banner_after_its_echo_starts_one_run_not_two() -> None:
    lines = [*GENERATE, "C:\\ST\\stedgeai.exe validate --mode target",
             "ST Edge AI Core v4.0.0-20500 359356bb0", " Exec/report summary (validate)"]  # fmt: skip
    assert [len(r) for r in split_runs(lines)] == [3, 3]


def test_a_banner_alone_starts_a_run_in_every_family() -> None:
    for banner in ("ST Edge AI Core v2.2.0-20266 2adc00962",
                   "Neural Network Tools for STM32AI v1.7.0 (STM.ai v8.0.0-19389)"):  # fmt: skip
        runs = split_runs([*GENERATE, banner, " Exec/report summary (analyze)"])
        assert [len(r) for r in runs] == [3, 2], banner


def test_a_quoted_banner_and_a_preamble_start_nothing() -> None:
    # AI Studio echoes a failed run's own output after "Output:"; a log's preamble (before
    # any report section) stays with the first run.
    lines = [">>> stedgeai generate --model m.tflite", "ST Edge AI Core v4.0.0-20500",
             *GENERATE, "Run failed: Error. Output: ST Edge AI Core v4.0.0-20500 359356bb0",
             " Exec/report summary (generate)"]  # fmt: skip
    assert split_runs(lines) == [lines]
    assert echoed_command(["no command here"]) is None

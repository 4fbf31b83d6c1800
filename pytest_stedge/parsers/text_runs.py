"""Where one run of the tool ends and the next begins in a console capture.

An AI Studio ``logs.txt`` or a Developer Cloud console holds a generate AND a validate of
one model, one after the other; each is one run and gives one Result (never a merge: the
validate of an NPU model prints the figures of its host-side front end, another MACC and
other sizes).

A run starts where the tool is started: the echoed command line (``>>> ...stedgeai.exe
validate ...``, ``C:\\ST\\...\\stedgeai.exe ... validate --batch-size``) or, without one, the
version banner at the start of a line. A banner quoted inside a line (AI Studio's ``Run
failed: ... Output: ST Edge AI Core v4.0.0``, which echoes the failed run's own output
after it) starts nothing. A start only splits once the text before it holds a report
section of its own: the preamble of a log (copying templates, flashing) stays with the
first run.
"""

from __future__ import annotations

import re

# "...stedgeai.exe generate --model", ">>> stedgeai validate", "stm32ai analyze -m"; the
# Developer Cloud echoes the executable twice before the command.
_COMMAND_ECHO = re.compile(
    r"^\s*(?:>>>\s*)?(?:\S*[\\/])?(?:stedgeai|stm32ai)(?:\.exe)?\s+"
    r"(?:\S*(?:stedgeai|stm32ai)(?:\.exe)?\s+)?(analyze|generate|validate)\b",
    re.IGNORECASE,
)
_BANNER = re.compile(
    r"^[\s>]*(?:ST\s?Edge\s?AI Core v\d|STEdgeAI Core v\d|Neural Network Tools for STM32|"
    r"stm32ai - Neural Network Tools)"
)
# What only a run of the tool prints: a section of its report.
_SECTIONS = (
    "Exec/report summary (",
    "Evaluation report (summary)",
    "Epochs details",
    "Memory usage information",
    "Requested memory size by section",
    "Generated C-graph summary",
)


def _has_section(lines: list[str]) -> bool:
    return any(line.lstrip().startswith(_SECTIONS) for line in lines)


def split_runs(lines: list[str]) -> list[list[str]]:
    """The lines of each run in ``lines`` (a single run: one list, the lines unchanged)."""
    runs: list[list[str]] = []
    start = 0
    index = 0
    count = len(lines)
    while index < count:
        line = lines[index]
        index += 1
        if not ("stedgeai" in line or "stm32ai" in line or "Core v" in line
                or "Neural Network Tools" in line):
            continue  # most lines: no regular expression run
        starts = bool(_COMMAND_ECHO.match(line))
        at = index - 1
        if not starts and _BANNER.match(line):
            previous = lines[at - 1] if at else ""
            starts = not _COMMAND_ECHO.match(previous)  # else the echo already started it
        if starts and at > start and _has_section(lines[start:at]):
            runs.append(lines[start:at])
            start = at
    runs.append(lines[start:])
    return runs


def echoed_command(lines: list[str]) -> str | None:
    """The command of the first echoed command line (a run that failed before its report)."""
    for line in lines:
        if "stedgeai" in line or "stm32ai" in line:
            match = _COMMAND_ECHO.match(line)
            if match:
                return match.group(1).lower()
    return None

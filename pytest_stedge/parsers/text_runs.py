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
from bisect import bisect_left

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


def split_runs(lines: list[str]) -> list[list[str]]:
    """The lines of each run in ``lines`` (a single run: one list, the lines unchanged).

    A banner right after its echoed command line starts nothing more: the run the echo
    started holds no report section yet.
    """
    runs: list[list[str]] = []
    # where report sections are, found once: a start splits when one lies since the last
    sections = [i for i, line in enumerate(lines) if line.lstrip().startswith(_SECTIONS)]
    start = 0
    for at, line in enumerate(lines):
        if not ("stedgeai" in line or "stm32ai" in line or "Core v" in line
                or "Neural Network Tools" in line):
            continue  # most lines: no regular expression run
        starts = _COMMAND_ECHO.match(line) or _BANNER.match(line)
        if starts and bisect_left(sections, start) < bisect_left(sections, at):
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

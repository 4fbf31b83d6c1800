"""Tool errors printed in a console or a report, turned into diagnostics in linear time."""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]|\x1b\][^\x07\x1b\n]{0,512}\x07")
_DIAG_CODE = re.compile(r"\b(E\d{3})\((\w{1,80})\):[ \t]*(.*)")
_DIAG_PLAIN = re.compile(r"\b(INTERNAL ERROR|TOOL ERROR|LOAD ERROR):[ \t]*(.*)")
# Found in the whole text at once (a pattern the engine scans for fast): only the lines
# holding one are read with the patterns above.
_CANDIDATE = re.compile(r"E\d{3}\(|ERROR:")
# Line ends of str.splitlines() other than "\n" (tqdm redraws with "\r").
_OTHER_LINE_ENDS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_TO_NEWLINE = str.maketrans(dict.fromkeys(_OTHER_LINE_ENDS, "\n"))


def strip_ansi(text: str) -> str:
    """``text`` without ANSI colour and title sequences."""
    return _ANSI.sub("", text) if "\x1b" in text else text


class _Seen:
    """Messages kept per (code, kind), sorted: a new message is a repeat when it extends a
    kept one or a kept one extends it.

    The kept messages never extend each other, so only the neighbours of the new message in
    sorted order can: a check costs a bisection, not a scan of every message kept so far.
    """

    def __init__(self) -> None:
        self._by_key: dict[tuple[Any, str], list[str]] = {}

    def add(self, key: tuple[Any, str], message: str) -> bool:
        """Keep ``message`` unless it repeats one kept; True when kept."""
        kept = self._by_key.setdefault(key, [])
        at = bisect_left(kept, message)
        if at < len(kept) and kept[at].startswith(message):
            return False  # equal to, or the start of, a kept message
        if at and message.startswith(kept[at - 1]):
            return False  # a kept message with a tail (AI Studio wrappers)
        insort(kept, message, lo=at, hi=at)
        return True


def _candidate_lines(text: str) -> list[str]:
    """The lines (as ``str.splitlines`` cuts them) that hold an error marker, in order."""
    if any(ch in text for ch in _OTHER_LINE_ENDS):
        text = text.translate(_TO_NEWLINE)
    lines: list[str] = []
    after = 0  # end of the last line taken: later markers on it are the same line
    for match in _CANDIDATE.finditer(text):
        at = match.start()
        if at < after:
            continue
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        after = end
    return lines


def extract_diagnostics(text: str) -> list[dict[str, Any]]:
    """Collect tool errors from console output or a report.

    ``E<nnn>(Kind): message``, ``INTERNAL ERROR: ...``, ``TOOL ERROR: ...`` and the AI runner's
    ``LOAD ERROR: ...`` (board did not answer) become error diagnostics (each once, in order).
    ``E: ...`` lines are warnings the tool prints while succeeding and are ignored.
    Wrappers (AI Studio's "Run failed: ... LOAD ERROR: <msg>. Please check ...") repeat a
    message with a tail: the same error is kept once. Cost is linear in the text
    (plus a logarithm per distinct error).
    """
    out: list[dict[str, Any]] = []
    seen = _Seen()
    for line in _candidate_lines(strip_ansi(text)):
        match = _DIAG_CODE.search(line) if "(" in line else None
        if match:
            diag = {
                "level": "error",
                "code": match.group(1),
                "kind": match.group(2),
                "message": match.group(3).strip(),
            }
        else:
            plain = _DIAG_PLAIN.search(line)
            if not plain:
                continue
            kind = plain.group(1).title().replace(" ", "")
            diag = {"level": "error", "kind": kind, "message": plain.group(2).strip()}
        if seen.add((diag.get("code"), diag["kind"]), diag["message"]):
            out.append(diag)
    return out

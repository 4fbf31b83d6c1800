"""The bug-signature grammar's tokenizer: a signature's text -> tokens, each with its column."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pytest_stedge.errors import StedgeError

KEYWORDS = ("and", "or", "not", "in", "true", "false")
COMPARISONS = ("<=", ">=", "==", "!=", "<", ">")
MAX_LENGTH = 2000  # a signature is one line of reasoning, not a program


class SignatureError(StedgeError):
    """A signature does not parse or names something unknown.

    :ivar column: 1-based column of the offending token in the signature text.
    :ivar expected: what would have been accepted there.
    """

    def __init__(self, text: str, column: int, message: str, expected: str = "") -> None:
        self.text = text
        self.column = column
        self.expected = expected
        self.message = message
        detail = f"column {column}: {message}"
        if expected:
            detail += f"; expected {expected}"
        super().__init__(f"signature {_clip(text)!r}, {detail}")


def _clip(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


# -- tokens ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """One lexical token: kind is NUMBER, STRING, NAME, OP or END."""

    kind: str
    value: Any
    column: int  # 1-based


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an END token.

    :raises SignatureError: on a character that starts no token, or an unclosed string.
    """
    if not isinstance(text, str):
        raise SignatureError(str(text), 1, f"a signature is a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise SignatureError(text, MAX_LENGTH + 1, f"longer than {MAX_LENGTH} characters")
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
            continue
        start = i
        if ch.isascii() and (ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit())):
            i = _scan_number(text, i)
            literal = text[start:i]
            try:
                value = float(literal)
            except ValueError:
                raise SignatureError(text, start + 1, f"malformed number {literal!r}") from None
            if not math.isfinite(value):
                raise SignatureError(text, start + 1, f"number {literal!r} is out of range")
            tokens.append(Token("NUMBER", value, start + 1))
        elif ch in "\"'":
            end = text.find(ch, i + 1)
            if end < 0:
                raise SignatureError(
                    text, start + 1, "unterminated string", f"a closing {ch} on the same line"
                )
            body = text[i + 1 : end]
            if "\n" in body or "\\" in body:
                raise SignatureError(
                    text, start + 1, "strings may not hold backslashes or newlines"
                )
            tokens.append(Token("STRING", body, start + 1))
            i = end + 1
        elif ch.isascii() and (ch.isalpha() or ch == "_"):
            while i < n and text[i].isascii() and (text[i].isalnum() or text[i] == "_"):
                i += 1
            tokens.append(Token("NAME", text[start:i], start + 1))
        else:
            two = text[i : i + 2]
            if two in COMPARISONS:
                tokens.append(Token("OP", two, start + 1))
                i += 2
            elif ch in "<>+-*/()":
                tokens.append(Token("OP", ch, start + 1))
                i += 1
            else:
                hint = " (use 'and', 'or', 'not')" if ch in "&|!" else ""
                hint = " (use '==' to compare)" if ch == "=" else hint
                raise SignatureError(
                    text,
                    start + 1,
                    f"unexpected character {ch!r}{hint}",
                    "a metric name, a number, a quoted string, an operator or a parenthesis",
                )
    tokens.append(Token("END", None, n + 1))
    return tokens


def _scan_number(text: str, i: int) -> int:
    n = len(text)
    while i < n and (text[i].isascii() and text[i].isdigit() or text[i] in "._"):
        i += 1
    if i < n and text[i] in "eE":
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j < n and text[j].isascii() and text[j].isdigit():
            i = j
            while i < n and text[i].isascii() and text[i].isdigit():
                i += 1
        elif not (j < n and (text[j].isalnum() or text[j] == "_")):
            i = j  # '1e', '1e+': an exponent without digits, reported as a malformed number
    return i

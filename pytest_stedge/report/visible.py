"""Untrusted names shown as what they are.

Case, variant, model, node and bug names come from files anyone can write. Escaping keeps
them from becoming markup, but a name can still *look* like another: a right-to-left
override (U+202E) reverses what follows it, zero-width characters hide inside a word, a
terminal escape (ESC) repaints the screen. :func:`visible` writes every such character as
a Python-style escape (``\\u202e``), so what a reader sees is what the name holds. The
terminal summary, failure tables and every HTML page (a Jinja ``finalize`` hook) use it.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Letters and marks that draw nothing, though Unicode does not class them as format
# characters: Hangul fillers, Khmer inherent vowels, Mongolian vowel separator, braille
# blank, combining grapheme joiner.
_BLANK = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x034F}
# Control, format (bidi controls, zero-width ...), surrogate, private use, unassigned,
# line and paragraph separators.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _hidden(ch: str) -> bool:
    code = ord(ch)
    if code in _BLANK or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True  # variation selectors change nothing visible either
    category = unicodedata.category(ch)
    return category in _HIDDEN_CATEGORIES or (category == "Zs" and ch != " ")


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with invisible and direction-changing characters written as escapes.

    :param keep_newlines: leave ``\\n`` and ``\\t`` as they are (multi-line messages);
        ``\\r`` is always shown, since it lets a line overwrite itself in a terminal.
    """
    if text.isascii() and text.isprintable():
        return text  # the usual name: nothing to do
    kept = "\n\t" if keep_newlines else ""
    if keep_newlines:
        text = text.replace("\r\n", "\n")
    return "".join(_escape(ch) if ch not in kept and _hidden(ch) else ch for ch in text)


def finalize(value: Any) -> Any:
    """Jinja ``finalize`` hook: every string a template prints goes through :func:`visible`
    (markup built on purpose, such as inline SVG, is left alone: it escapes its own text)."""
    from markupsafe import Markup

    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, keep_newlines=True)
    return value


def escape_visible(text: Any) -> Any:
    """:func:`markupsafe.escape` of :func:`visible` text, for markup built in Python."""
    from markupsafe import escape

    return escape(visible(str(text)))

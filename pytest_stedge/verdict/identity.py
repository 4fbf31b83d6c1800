"""What makes two results comparable, and why two are not, in words.

Two results compare only when the same model (sha256, or the md5 the tool printed for a
public run) and the same options (their hash) made them (DESIGN.md §9). When they do not,
every page says which: the model's two hashes, or the options that differ, old -> new
(the stated options travel in the Result as ``options``: the words the identity hashes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# an option followed by a value (others are flags); what the identity of a run states
_FLAG_VALUE_PREFIXES = ("--", "-")


def comparable(base: Mapping[str, Any], head: Mapping[str, Any]) -> bool:
    """Same model and same options on both sides, both known (an unknown identity is never
    assumed equal)."""
    return all(
        base.get(key) and head.get(key) and base.get(key) == head.get(key)
        for key in ("model_sha256", "options_hash")
    )


def not_comparable_reason(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    """Why ``base`` and ``head`` do not compare, in words (empty when they do).

    Each side: ``model_sha256``, ``options_hash``, ``options`` (the stated words, or None)
    and ``version``.
    """
    reasons = []
    old_model, new_model = base.get("model_sha256"), head.get("model_sha256")
    if not old_model or not new_model:
        missing = [str(side.get("version") or "?") for side in (base, head) if not side.get("model_sha256")]
        reasons.append(f"the model's hash is not recorded in {' and '.join(missing)}")
    elif old_model != new_model:
        reasons.append(f"model differs: {short_hash(old_model)} -> {short_hash(new_model)}")
    old_hash, new_hash = base.get("options_hash"), head.get("options_hash")
    if not old_hash or not new_hash:
        missing = [str(side.get("version") or "?") for side in (base, head) if not side.get("options_hash")]
        reasons.append(f"the options are not recorded in {' and '.join(missing)}")
    elif old_hash != new_hash:
        reasons.append(_options_reason(base.get("options"), head.get("options"), old_hash, new_hash))
    return "; ".join(reasons)


def short_hash(identity: str) -> str:
    """``sha256 1a2b3c4d…`` or ``md5 c85b2bb9…`` (a public run's model known by the md5 the
    tool printed)."""
    kind, _, digest = identity.rpartition(":")
    return f"{kind or 'sha256'} {digest[:8]}…"


def _options_reason(old: Any, new: Any, old_hash: str, new_hash: str) -> str:
    if not _words(old) and not _words(new) and (old is None or new is None):
        return f"options differ (hash {old_hash[:8]} -> {new_hash[:8]}; the options are not stated)"
    before, after = option_map(_words(old)), option_map(_words(new))
    moved = [
        f"{name} {before.get(name, '(none)') or '(set)'} -> {after.get(name, '(none)') or '(set)'}"
        for name in sorted(set(before) | set(after), key=_option_order)
        if before.get(name) != after.get(name) or (name in before) != (name in after)
    ]
    if not moved:
        # the same words, another hash: a profile or memory-pool file the options name changed
        return "options differ: the same options name files whose contents changed (profile or mpool)"
    return "options differ: " + "; ".join(moved)


def _words(options: Any) -> list[str]:
    if isinstance(options, (list, tuple)):
        return [str(o) for o in options]
    return []


def option_map(words: Sequence[str]) -> dict[str, str]:
    """``["--target", "stm32n6", "--no-check"]`` -> ``{"--target": "stm32n6", "--no-check": ""}``:
    an option takes the next word as its value unless that word is an option too."""
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith(_FLAG_VALUE_PREFIXES):
            out.setdefault("(argument)", "")
            out["(argument)"] = (out["(argument)"] + " " + word).strip()
            i += 1
            continue
        nxt = words[i + 1] if i + 1 < len(words) else None
        if nxt is not None and not nxt.startswith("--") and not (nxt.startswith("-") and not _number(nxt)):
            out[word] = nxt
            i += 2
        else:
            out[word] = ""
            i += 1
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _option_order(name: str) -> tuple[int, str]:
    return (0 if name == "--target" else 1, name)

"""``did you mean 'stages'?`` for a misspelt case key or metric name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'stages'?)`` when a choice is close to ``word``, else ``""``.

    difflib's ratio with a 0.6 cutoff: 'stage' -> 'stages', 'activation_bytes' ->
    'activations_bytes'; an unrelated word suggests nothing rather than a wrong guess.
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""

"""The deployment a recorded run states: its command line's options that the oracle reads."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The options of a recorded command line that move the floor or the expected figure.
# File arguments (pools, profiles) name files on the machine that ran the tool: they are
# kept only when ``folder`` holds a file of the same name (a run folder with its pools).
_FLAGS = ("--st-neural-art", "--no-inputs-allocation", "--no-outputs-allocation")
_VALUED = ("--input-data-type", "--output-data-type")
_FILES = ("--memory-pool", "--mpool")


def deployment_options(words: Sequence[str], folder: Path | None = None) -> list[str]:
    """The options of a recorded command line that the oracle's deployment reads."""
    out: list[str] = []
    k = 0
    while k < len(words):
        word = words[k]
        flag, _, inline = word.partition("=")
        value = inline or (words[k + 1] if k + 1 < len(words) else "")
        step = 1 if inline or flag in _FLAGS else 2
        if flag in _FLAGS:
            out.append(flag)
        elif flag in _VALUED and value:
            out += [flag, value]
        elif flag in _FILES and value and folder is not None:
            local = folder / re.split(r"[\\/]", value)[-1]
            if local.is_file():
                out += [flag, str(local)]
        else:
            step = 1
        k += step
    return out


def run_options(run: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The target and the deployment options of a recorded run: its command line's
    options where the recording keeps them (the corpus's recordings.json), else what its
    Result states (``neural_art``: NPU epochs exist)."""
    found = run.get("result")
    result: dict[str, Any] = found if isinstance(found, dict) else {}
    target = run.get("target") or result.get("target")
    options = run.get("options")
    if isinstance(options, list):
        return (str(target) if target else None), deployment_options([str(o) for o in options])
    return (str(target) if target else None), (["--st-neural-art"] if result.get("neural_art") else [])

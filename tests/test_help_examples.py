"""Every corpus path a `stedge` help example names exists in the shipped corpus (issue 30:
`stedge board-run corpus/kws/case.toml` named a case that does not exist)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from pytest_stedge.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
_CORPUS_PATH = re.compile(r"(?<![\w/.])corpus/[\w./-]+")


def _helps(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    out = [(parser.prog, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _helps(sub)
    return out


def test_every_corpus_path_in_a_help_example_exists() -> None:
    named = []
    for prog, text in _helps(build_parser()):
        for path in _CORPUS_PATH.findall(text):
            named.append(path)
            assert (ROOT / path.rstrip(".")).exists(), f"{prog}: help names {path}"
    assert "corpus/mlperf-ds-cnn/case.toml" in named

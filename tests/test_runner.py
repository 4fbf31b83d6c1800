"""The stedgeai command line of each stage, and the Neural-ART profile a case asks for."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.corpus import load_cases
from pytest_stedge.errors import ReportParseError, ToolchainError
from pytest_stedge.runner import build_argv, load_loose_json
from pytest_stedge.toolchain import Install

PROFILE = """\
{
  // ST's tools accept comments and trailing commas
  "Globals": {},
  "Profiles": {
    "p": {"memory_pool": "./mpools/default.mpool", "options": "--Os /* kept */ --native-float",},
    "q": {"memory_pool": "//server/share/q.mpool", "options": ""},
  },
}
"""


@pytest.fixture
def case(tmp_path: Path):
    corpus = tmp_path / "corpus"
    (corpus / "profiles").mkdir(parents=True)
    (corpus / "profiles" / "neural_art.json").write_text(PROFILE)
    (corpus / "profiles" / "small.mpool").write_text("{}")
    folder = corpus / "cnn"
    folder.mkdir()
    make_conv_model(folder / "model.onnx")
    (folder / "case.toml").write_text(textwrap.dedent("""
        model = "model.onnx"
        target = "stm32n6"
        options = ["--input-data-type", "uint8"]
        stages = ["generate", "validate-host", "validate-target"]
        [neural_art]
        profile = "p"
        file = "../profiles/neural_art.json"
        mpool = "../profiles/small.mpool"
    """))
    return load_cases(folder / "case.toml")[0]


INSTALL = Install("4.0.1", "20581", "7ed50de05", Path("/st/4.0"), Path("/st/4.0/Utilities/linux/stedgeai"))


def test_generate_argv_and_the_derived_profile(case, tmp_path: Path) -> None:
    work = tmp_path / "work"
    argv = build_argv(case, "generate", INSTALL, work)
    assert argv[:2] == [str(INSTALL.executable), "generate"]
    assert argv[argv.index("--model") + 1] == str(case.model)
    assert argv[argv.index("--output") + 1] == str(work / "st_ai_output")
    assert argv[argv.index("--st-neural-art") + 1] == f"p@{work / 'neural_art.json'}"
    assert argv[-2:] == ["--input-data-type", "uint8"]
    derived = json.loads((work / "neural_art.json").read_text())
    assert derived["Profiles"]["p"]["memory_pool"] == str(case.neural_art.mpool)
    assert derived["Profiles"]["p"]["options"] == "--Os /* kept */ --native-float"
    assert "//" in (case.neural_art.file.read_text())  # the corpus file is never edited


def test_validate_modes(case, tmp_path: Path) -> None:
    host = build_argv(case, "validate-host", INSTALL, tmp_path)
    assert host[1] == "validate" and host[host.index("--mode") + 1] == "host"
    target = build_argv(case, "validate-target", INSTALL, tmp_path, board_desc="serial:COM7:921600")
    assert target[target.index("--mode") + 1 :][:3] == ["target", "--desc", "serial:COM7:921600"]
    with pytest.raises(ToolchainError, match="validate-target needs a board"):
        build_argv(case, "validate-target", INSTALL, tmp_path)


def test_loose_json_keeps_slashes_inside_strings(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    path.write_text(PROFILE)
    assert load_loose_json(path)["Profiles"]["q"]["memory_pool"] == "//server/share/q.mpool"
    path.write_text('{"Profiles": [}')
    with pytest.raises(ReportParseError, match=r"profile.json:1: not a Neural-ART profile file"):
        load_loose_json(path)

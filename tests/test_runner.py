"""The stedgeai command line of each stage, and the Neural-ART profile a case asks for."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.case.load import load_cases
from pytest_stedge.errors import ReportParseError, ToolchainError
from pytest_stedge.tool.discovery import Install
from pytest_stedge.tool.runner import build_argv, load_loose_json

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
    # relative to the derived profile, as every real profile writes it (./my_mpools/...)
    assert derived["Profiles"]["p"]["memory_pool"] == "./my_mpools/small.mpool"
    assert (work / "my_mpools" / "small.mpool").read_bytes() == case.neural_art.mpool.read_bytes()
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


def _n6_case(tmp_path: Path, profile_text: str) -> tuple:
    """A case overriding the mpool of a profile file that also names a memory_desc."""
    from fake_stedgeai import make_install

    make_install(tmp_path / "st" / "4.0", "4.0.1")
    from pytest_stedge.tool.discovery import discover

    found = discover([tmp_path / "st"], env={}, defaults=False)
    install = found.installs[0]
    corpus = tmp_path / "corpus"
    profiles = corpus / "profiles"
    (profiles / "my_mpools").mkdir(parents=True)
    shipped = next((tmp_path / "st").rglob("stm32n6__noextmem.mpool"))
    (profiles / "my_mpools" / "tight.mpool").write_bytes(shipped.read_bytes())
    (profiles / "my_mpools" / "board.mdesc").write_text("{}\n")
    (profiles / "user_neuralart.json").write_text(profile_text)
    folder = corpus / "cnn"
    folder.mkdir()
    make_conv_model(folder / "model.onnx")
    (folder / "case.toml").write_text(textwrap.dedent("""
        model = "model.onnx"
        target = "stm32n6"
        [neural_art]
        profile = "p"
        file = "../profiles/user_neuralart.json"
        mpool = "../profiles/my_mpools/tight.mpool"
    """))
    return load_cases(folder / "case.toml")[0], install


USER_PROFILE = """{
  "Globals": {},
  "Profiles": {
    "p": {"memory_pool": "./my_mpools/does-not-matter.mpool",
          "memory_desc": "./my_mpools/board.mdesc",
          "options": "--native-float --Os"}
  }
}
"""


def test_the_tool_loads_the_case_mpool_and_the_profile_mdesc_from_the_derived_profile(
    tmp_path: Path,
) -> None:
    from pytest_stedge.tool.runner import run_stage

    case, install = _n6_case(tmp_path, USER_PROFILE)
    work = tmp_path / "work"
    run = run_stage(case, "generate", install, work, timeout=120)
    derived = json.loads((work / "neural_art.json").read_text())["Profiles"]["p"]
    assert derived["memory_pool"] == "./my_mpools/tight.mpool"
    assert derived["memory_desc"] == "./my_mpools/board.mdesc"
    report = (work / "st_ai_output" / "network_generate_report.txt").read_text()
    args = report.split("Compiler arguments:", 1)[1].splitlines()[0]
    # the fake resolves profile paths against the profile's folder, as the real tool does
    assert f"--load-mpool {work / 'my_mpools' / 'tight.mpool'} " in args
    assert f"--load-mdesc {work / 'my_mpools' / 'board.mdesc'} " in args
    # the pools the tool reports are those of the case's mpool (no external memories), not
    # the profile's nor the install's default (which adds hyperRAM and octoFlash)
    shipped = json.loads((work / "my_mpools" / "tight.mpool").read_text())["memory"]["mempools"]
    assert [p["name"] for p in run.result["memory"]["pools"]] == [p["name"] for p in shipped]
    assert "hyperRAM" not in [p["name"] for p in shipped]


def test_a_profile_naming_a_missing_memory_desc_is_an_error_naming_the_file(tmp_path: Path) -> None:
    case, install = _n6_case(tmp_path, USER_PROFILE.replace("board.mdesc", "gone.mdesc"))
    with pytest.raises(ToolchainError, match=r"memory_desc\] './my_mpools/gone.mdesc': no such file"):
        build_argv(case, "generate", install, tmp_path / "work")


def test_the_fake_resolves_profile_paths_against_the_profile_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative path that exists only under the working folder is not found: the real tool
    reads ./my_mpools/x of N6_scripts/user_neuralart.json as N6_scripts/my_mpools/x."""
    from fake_stedgeai.profiles import ProfileError, resolve_profile

    elsewhere = tmp_path / "profiles"
    elsewhere.mkdir()
    (elsewhere / "p.json").write_text(
        '{"Profiles": {"p": {"memory_pool": "./my_mpools/x.mpool", "options": ""}}}'
    )
    cwd = tmp_path / "cwd"
    (cwd / "my_mpools").mkdir(parents=True)
    (cwd / "my_mpools" / "x.mpool").write_text('{"memory": {"mempools": []}}')
    monkeypatch.chdir(cwd)
    with pytest.raises(ProfileError, match=r"memory_pool \"./my_mpools/x.mpool\" not found"):
        resolve_profile(f"p@{elsewhere / 'p.json'}", elsewhere / "p.json")
    (elsewhere / "my_mpools").mkdir()
    (elsewhere / "my_mpools" / "x.mpool").write_text('{"memory": {"mempools": []}}')
    assert resolve_profile(f"p@{elsewhere / 'p.json'}", elsewhere / "p.json").mpool_file == (
        elsewhere / "my_mpools" / "x.mpool"
    ).resolve()

"""``stedge bisect``: delta debugging over a case's compiler options against a fake tool
whose faults depend on them (issue 28, point 3)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import make_conv_model
from fake_stedgeai import make_install

from pytest_stedge.cli.main import main

REPO = Path(__file__).resolve().parents[1]
PROFILE_OPTIONS = ("--optimization 3 --all-buffers-info --enable-virtual-mem-pools --native-float "
                   "--cache-maintenance --Ocache-opt --Os --Omax-ca-pipe 4")
# the public report's question: does --Ocache-opt or the epoch controller change the result?
PAIR_FAULT = {"validate": {"cos": 0.091}, "commands": ["validate"],
              "when_options": ["--Ocache-opt", "--enable-epoch-controller"]}
CASE = """\
model = "model.onnx"
target = "stm32n6"
stages = ["generate", "validate-target"]
options = ["--enable-epoch-controller", "--c-api", "st-ai"]
[neural_art]
profile = "default"
file = "../profiles/neural_art.json"
[expect.validate-target]
val_cos = { min = 0.99 }
"""


def corpus(tmp_path: Path, case_text: str = CASE) -> Path:
    root = tmp_path / "corpus"
    (root / "profiles").mkdir(parents=True)
    shutil.copyfile(REPO / "corpus/profiles/stm32n6.mpool", root / "profiles/stm32n6.mpool")
    (root / "profiles/neural_art.json").write_text(json.dumps({
        "Globals": {}, "Profiles": {"default": {"memory_pool": "./stm32n6.mpool",
                                                "options": PROFILE_OPTIONS}}}))
    (root / "tcn").mkdir()
    make_conv_model(root / "tcn/model.onnx")
    (root / "tcn/case.toml").write_text(case_text)
    return root / "tcn"


def bisect(case: Path, install: Path, capsys: pytest.CaptureFixture[str],
           *extra: str) -> tuple[int, dict]:
    code = main(["bisect", str(case), "--version", "4.0.1", "--stage", "validate-target",
                 "--board", "serial:COM9:921600", "--loader", "true", "--root", str(install),
                 "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def pair_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fault-pair")
    make_install(root, "4.0.1", config=PAIR_FAULT)
    return root


@pytest.mark.slow
def test_the_pair_of_options_that_breaks_validation_is_found(
        pair_install: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = bisect(corpus(tmp_path), pair_install, capsys, "--work", str(tmp_path / "w"))
    assert code == 0
    # 8 profile options and 2 of the case
    assert report["options"][:2] == ["--optimization 3", "--all-buffers-info"]
    assert report["options"][-2:] == ["--enable-epoch-controller", "--c-api st-ai"]
    assert report["culprits"] == ["--Ocache-opt", "--enable-epoch-controller"]
    n = len(report["options"])
    assert n == 10 and len(report["runs"]) <= 2 * n * math.log2(n)
    first, empty = report["runs"][0], report["runs"][1]
    assert first["outcome"] == "fail" and first["figures"]["val_cos"] == pytest.approx(0.091)
    assert empty["kept"] == [] and empty["outcome"] == "pass"
    assert empty["figures"]["val_cos"] >= 0.99
    for run in report["runs"]:  # every run is judged on its own figures
        both = {"--Ocache-opt", "--enable-epoch-controller"} <= set(run["kept"])
        assert run["outcome"] == ("fail" if both else "pass"), run
        assert "val_cos" in run["figures"]
    # each run kept its own derived profile: the corpus was never edited
    derived = json.loads((tmp_path / "w/run-002/bisect_neural_art.json").read_text())
    assert derived["Profiles"]["default"]["options"] == ""
    assert json.loads((tmp_path / "corpus/profiles/neural_art.json").read_text())[
        "Profiles"]["default"]["options"] == PROFILE_OPTIONS


@pytest.mark.slow
def test_a_fault_of_every_build_is_no_option_s_fault(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    make_install(tmp_path / "always", "4.0.1",
                 config={"validate": {"cos": 0.091}, "commands": ["validate"]})
    code, report = bisect(corpus(tmp_path), tmp_path / "always", capsys)
    assert code == 1 and report["culprits"] == [] and len(report["runs"]) == 2
    assert "fails without any of the options too" in report["verdict"]


@pytest.mark.slow
def test_a_passing_stage_is_not_bisected(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    make_install(tmp_path / "fine", "4.0.1")
    code, report = bisect(corpus(tmp_path), tmp_path / "fine", capsys)
    assert code == 1 and report["culprits"] is None and len(report["runs"]) == 1
    assert report["verdict"].startswith("the stage passes with every option")


@pytest.mark.slow
def test_a_tool_crash_that_needs_one_option_is_bisected_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_install(tmp_path / "crash", "4.0.1",
                 config={"crash": True, "commands": ["generate"], "when_options": ["--Os"]})
    code, report = bisect(corpus(tmp_path), tmp_path / "crash", capsys)
    assert code == 0 and report["culprits"] == ["--Os"]
    assert report["check"].startswith("the tool fails")


def test_without_the_version_installed_it_says_so(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bisect", str(corpus(tmp_path)), "--version", "9.9.9", "--stage", "generate",
                 "--root", str(tmp_path / "nothing")])
    err = capsys.readouterr().err
    assert code == 2
    assert "stedgeai 9.9.9 is not installed here" in err and "recorded run cannot" in err


@pytest.mark.slow
def test_stedge_bisect_names_the_option_in_a_failing_item_s_report(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    make_install(tmp_path / "installs" / "4.0.1", "4.0.1",
                 config={"validate": {"cos": 0.5}, "commands": ["validate"],
                         "when_options": ["--split-weights"]})
    folder = pytester.path / "corpus" / "mlp"
    folder.mkdir(parents=True)
    make_conv_model(folder / "model.onnx")
    (folder / "case.toml").write_text(
        'model = "model.onnx"\ntarget = "stm32h7"\nstages = ["validate-host"]\n'
        'oracle = false\noptions = ["--compression", "none", "--split-weights"]\n'
        "[expect]\nval_cos = { min = 0.99 }\n")
    result = pytester.runpytest_subprocess(
        str(pytester.path / "corpus"), "--stedge-root", str(tmp_path / "installs"),
        "--stedge-version", "4.0.1", "--stedge-db", str(tmp_path / "db.duckdb"),
        "--stedge-bisect", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        "--stedge-report", "none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([("*bisect (--stedge-bisect): --split-weights: with this the "
                                 "check fails, without any one of them it passes (*runs, 2 "
                                 "options: 0 of the profile, 2 of the case)*")])

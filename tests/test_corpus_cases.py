"""case.toml -> Case: variants, per-stage expectations, identity hashes, the corpus root."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.case.load import load_cases
from pytest_stedge.case.paths import find_corpus_root
from pytest_stedge.errors import CaseError


def _case(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "model_int8.onnx"):
        if not (folder / name).exists():
            make_conv_model(folder / name)
    path = folder / "case.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_variants_become_cases_of_their_own(tmp_path: Path) -> None:
    path = _case(
        tmp_path / "corpus" / "cnn",
        """
        model = "model.onnx"
        target = "stm32n6"
        options = ["--input-data-type", "uint8"]
        [expect]
        activations_bytes = { max = 100 }
        [variants.float]
        [variants.int8]
        model = "model_int8.onnx"
        [variants.int8.expect]
        activations_bytes = { max = 50 }
        """,
    )
    float_case, int8_case = load_cases(path)
    assert (float_case.name, int8_case.name) == ("cnn/float", "cnn/int8")
    assert int8_case.model.name == "model_int8.onnx" and float_case.model.name == "model.onnx"
    assert int8_case.options == ("--input-data-type", "uint8")
    assert [b.max for b in int8_case.bounds_for("generate")] == [50.0]
    assert [b.max for b in float_case.bounds_for("generate")] == [100.0]


def test_stage_tables_and_metric_families(tmp_path: Path) -> None:
    path = _case(
        tmp_path / "corpus" / "tcn",
        """
        model = "model.onnx"
        target = "stm32n6"
        stages = ["generate", "validate-target"]
        [expect]
        activations_bytes = { max = 100 }
        val_cos = { min = 0.9 }
        [expect.validate-target]
        val_cos = { min = 0.99 }
        """,
    )
    (case,) = load_cases(path)
    assert {b.metric for b in case.bounds_for("generate")} == {"activations_bytes"}
    target = case.bounds_for("validate-target")
    assert [(b.metric, b.min) for b in target] == [("val_cos", 0.99)]
    assert [b.metric for b in case.bounds_for("validate-host")] == ["val_cos"]


def test_options_hash_changes_with_what_changes_the_output(tmp_path: Path) -> None:
    a = _case(tmp_path / "corpus" / "a", 'model = "model.onnx"\ntarget = "stm32n6"\n')
    b = _case(tmp_path / "corpus" / "b", 'model = "model.onnx"\ntarget = "stm32n6"\noptions = ["-O", "ram"]\n')
    c = _case(tmp_path / "corpus" / "c", 'model = "model.onnx"\ntarget = "stm32n6"\ndescription = "x"\n')
    ha, hb, hc = (load_cases(p)[0].options_hash() for p in (a, b, c))
    assert ha != hb
    assert ha == hc  # a description does not change what the tool produces


def test_corpus_root_never_climbs_out_of_the_project(tmp_path: Path) -> None:
    (tmp_path / "bugs").mkdir()  # an unrelated folder above the project
    project = tmp_path / "project"
    (project / "pyproject.toml").parent.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    path = _case(project / "cases" / "cnn", 'model = "model.onnx"\ntarget = "stm32n6"\n')
    assert find_corpus_root(path) == project / "cases"
    named = _case(tmp_path / "x" / "corpus" / "deep" / "cnn", 'model = "model.onnx"\ntarget = "stm32n6"\n')
    assert find_corpus_root(named) == tmp_path / "x" / "corpus"


def test_onnx_light_models_resolve_from_the_installed_package(tmp_path: Path) -> None:
    path = _case(tmp_path / "corpus" / "r50", 'model = "onnx-light:resnet50"\ntarget = "stm32n6"\nstages = []\n')
    (case,) = load_cases(path)
    assert case.model.name == "light_resnet50.onnx" and case.model.is_file()
    bad = _case(tmp_path / "corpus" / "bad", 'model = "onnx-light:nope"\ntarget = "stm32n6"\n')
    with pytest.raises(CaseError, match=r"'onnx-light:nope': no such model in .*; accepted: .*resnet50"):
        load_cases(bad)


def test_a_profile_mpool_needs_a_profile_file(tmp_path: Path) -> None:
    folder = tmp_path / "corpus" / "n6"
    (tmp_path / "corpus" / "profiles").mkdir(parents=True)
    (tmp_path / "corpus" / "profiles" / "x.mpool").write_text("{}")
    path = _case(
        folder,
        'model = "model.onnx"\ntarget = "stm32n6"\n[neural_art]\nprofile = "p"\nmpool = "../profiles/x.mpool"\n',
    )
    with pytest.raises(CaseError, match=r"\[neural_art.mpool\]: an mpool needs a profile file"):
        load_cases(path)

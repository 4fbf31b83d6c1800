"""The committed corpus is what corpus/build.py produces, and every case.toml is valid."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

from pytest_stedge.case.build import (
    CorpusBuildError,
    build_corpus,
    compare_models,
    load_recipes,
)
from pytest_stedge.case.load import load_cases
from pytest_stedge.case.scan import iter_case_files
from pytest_stedge.cli import main as cli

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@pytest.fixture(scope="module")
def recipes():  # type: ignore[no-untyped-def]
    return load_recipes(CORPUS)


def test_every_case_loads_and_pins_its_model() -> None:
    cases = [case for path in iter_case_files(CORPUS) for case in load_cases(path)]
    names = {case.name for case in cases}
    assert {"mvs-cnn/int8", "mtcnn-rnet/prelu-float", "mtcnn-onet/alt-sched", "tcn-23x60"} <= names
    assert len(names) == len(cases), "case names must be unique"
    for case in cases:
        assert case.description, f"{case.name}: no description"
        if case.record_only:  # the model is not shipped: its declared identity stands
            assert case.model_source is not None and not case.model.exists(), case.name
            assert case.model_sha256() == case.model_source.identity()
        elif case.model.is_relative_to(CORPUS):
            assert case.sha256 == case.model_sha256(), f"{case.name}: pin differs from {case.model}"


def test_rebuild_gives_the_committed_graphs_and_weights(recipes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    built = build_corpus(recipes, CORPUS, out=tmp_path)
    assert {item.path for item in built} == {recipe.path for recipe in recipes}
    for item in built:
        if item.path.endswith(".tflite"):  # a flatbuffer written byte for byte
            assert (CORPUS / item.path).read_bytes() == (tmp_path / item.path).read_bytes()
            continue
        committed = onnx.load(CORPUS / item.path)
        rebuilt = onnx.load(tmp_path / item.path)
        assert compare_models(committed, rebuilt) == [], item.path
    # the corpus is cloned by every user: keep it small
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    assert size < 8 * 1024 * 1024


def test_compare_models_names_a_changed_weight() -> None:
    model = onnx.load(CORPUS / "dw-stride2" / "model_int8.onnx")
    changed = onnx.load(CORPUS / "dw-stride2" / "model_int8.onnx")
    weight = next(t for t in changed.graph.initializer if t.name.endswith("_quantized"))
    weight.raw_data = bytes([weight.raw_data[0] ^ 1]) + weight.raw_data[1:]
    assert compare_models(model, changed) == [f"initializer {weight.name!r}: values differ"]


def _copy_case(tmp_path: Path, folder: str) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS / "profiles", root / "profiles")
    shutil.copytree(CORPUS / folder, root / folder)
    return root


def test_build_refuses_to_overwrite_a_model_pinned_to_another_sha(recipes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = _copy_case(tmp_path, "dw-stride2")
    case_toml = root / "dw-stride2" / "case.toml"
    model = root / "dw-stride2" / "model_int8.onnx"
    real_sha = load_cases(case_toml)[0].sha256
    assert real_sha is not None
    case_toml.write_text(case_toml.read_text().replace(real_sha, "0" * 64))
    model.write_bytes(b"not the built model")
    mine = [r for r in recipes if r.path.startswith("dw-stride2/")]

    with pytest.raises(CorpusBuildError) as info:
        build_corpus(mine, root)
    message = str(info.value)
    assert "dw-stride2/model_int8.onnx" in message and str(case_toml) in message
    assert "--force" in message
    assert model.read_bytes() == b"not the built model"  # untouched

    built = build_corpus(mine, root, force=True)
    assert built[0].status == "written"
    assert load_cases(case_toml)[0].sha256 == real_sha == built[0].sha256
    assert "# Reproducer" in case_toml.read_text(), "re-pinning keeps the comments"


def test_build_pins_a_new_model_and_leaves_a_matching_one_alone(recipes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = _copy_case(tmp_path, "conv2d-16f-3x3")
    case_toml = root / "conv2d-16f-3x3" / "case.toml"
    mine = [r for r in recipes if r.path.startswith("conv2d-16f-3x3/")]
    assert build_corpus(mine, root)[0].status == "unchanged"

    pinned = load_cases(case_toml)[0].sha256
    lines = [line for line in case_toml.read_text().splitlines() if not line.startswith("sha256")]
    case_toml.write_text("\n".join(lines) + "\n")
    (root / "conv2d-16f-3x3" / "model_int8.onnx").unlink()
    built = build_corpus(mine, root)
    assert built[0].status == "written" and built[0].notes
    assert load_cases(case_toml)[0].sha256 == pinned


def test_cli_check_passes_on_the_committed_corpus_and_fails_on_a_changed_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["corpus", "build", "--check", "--corpus", str(CORPUS)]) == 0
    assert "unchanged" in capsys.readouterr().out

    root = tmp_path / "corpus"
    shutil.copytree(CORPUS, root)
    target = root / "mlperf-ds-cnn" / "model_int8.onnx"
    model = onnx.load(target)
    model.graph.node[-1].name = "renamed"
    onnx.save(model, target)
    assert cli.main(["corpus", "build", "--check", "--corpus", str(root)]) == 1
    out = capsys.readouterr().out
    assert "differs" in out and "mlperf-ds-cnn/model_int8.onnx" in out
    assert onnx.load(target).graph.node[-1].name == "renamed", "--check writes nothing"


def test_prelu_float_variant_leaves_exactly_the_prelu_unquantized() -> None:
    for folder, count in (("mtcnn-rnet", 4), ("mtcnn-onet", 5)):
        for name, float_slopes in (("model_int8.onnx", 0), ("model_prelu_float.onnx", count)):
            graph = onnx.load(CORPUS / folder / name).graph
            inits = {t.name for t in graph.initializer}
            prelus = [n for n in graph.node if n.op_type == "PRelu"]
            assert len(prelus) == count
            assert sum(n.input[1] in inits for n in prelus) == float_slopes, f"{folder}/{name}"


def test_reproducers_have_the_reported_shape() -> None:
    graph = onnx.load(CORPUS / "relu-dw7" / "model_int8.onnx").graph
    assert len(graph.node) == 9
    relu = next(n for n in graph.node if n.op_type == "Relu")
    conv = next(n for n in graph.node if n.op_type == "Conv")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}
    assert attrs["kernel_shape"] == [7, 7] and attrs["group"] == 16
    reader = next(n for n in graph.node if relu.output[0] in n.input)
    assert reader.op_type == "QuantizeLinear", "the conv reads the ReLU output through Q/DQ"

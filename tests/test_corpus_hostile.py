"""Hostile case files (issue 16): numbers that never expire or pass everything, paths that
escape through symlinks, options that move the tool's outputs, NUL bytes and loops. Each
is a CaseError naming the file, the key and what is accepted; a case that loads keeps every
path inside the corpus."""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pytest_stedge.case.load import load_cases
from pytest_stedge.case.owned_options import OWNED_OPTIONS, READING_OPTIONS
from pytest_stedge.errors import CaseError
from pytest_stedge.options import MAX_TIMEOUT_S, parse_timeout


def _corpus(root: Path) -> Path:
    """root/corpus/cnn/model.onnx, root/corpus/profiles/*, root/outside/model.onnx."""
    corpus = root / "corpus"
    for folder in (corpus / "cnn", corpus / "profiles", root / "outside"):
        folder.mkdir(parents=True, exist_ok=True)
    for path in (corpus / "cnn" / "model.onnx", corpus / "profiles" / "mcu.json",
                 corpus / "profiles" / "art.json", root / "outside" / "model.onnx"):
        path.write_bytes(b"model bytes")
    return corpus


def _case(corpus: Path, values: dict[str, Any], folder: str = "cnn") -> Path:
    path = corpus / folder / "case.toml"
    path.write_text(tomlkit.dumps({"model": "model.onnx", "target": "stm32n6", **values}),
                    encoding="utf-8")
    return path


def _refused(path: Path, key: str, *fragments: str) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_cases(path)
    assert info.value.path == path and info.value.key == key, str(info.value)
    assert str(info.value).startswith(f"{path}: [{key}]: ")
    for fragment in fragments:
        assert fragment in info.value.message, info.value.message
    return info.value


@pytest.mark.parametrize("value", [math.nan, math.inf, 1e30, -5, 0, 86_400.5, "600", True])
def test_timeouts_that_never_expire_or_make_no_sense_are_refused(tmp_path: Path,
                                                                value: Any) -> None:
    # nan compares false with everything: today `timeout <= 0` lets it through and a hung
    # tool is never killed; inf and 1e30 are no limit either.
    path = _case(_corpus(tmp_path), {"timeout": value})
    _refused(path, "timeout", "a positive number of seconds, at most 86,400 (one day)")


def test_timeouts_up_to_a_day_are_kept() -> None:
    for text, seconds in (("0.5", 0.5), ("600", 600.0), ("86400", MAX_TIMEOUT_S)):
        assert parse_timeout(text) == seconds


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e30", "-5", "0"])
def test_stedge_timeout_option_refuses_the_same_values(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="at most 86,400"):
        parse_timeout(text)


@pytest.mark.parametrize(("bound", "key", "fragment"), [
    ({"max": math.nan}, "expect.val_cos.max", "expected a finite number, got nan"),
    ({"min": -math.inf}, "expect.val_cos.min", "expected a finite number, got -inf"),
    ({"exact": math.nan}, "expect.val_cos.exact", "finite"),
    ({"exact": 1.0, "rel": -5}, "expect.val_cos.rel", "expected a tolerance >= 0"),
    ({"exact": 1.0, "abs": -1e-3}, "expect.val_cos.abs", "expected a tolerance >= 0"),
    ({"exact": 1.0, "rel": math.nan}, "expect.val_cos.rel", "finite"),
    ({"min": 0.9, "max": 0.5}, "expect.val_cos", "min 0.9 is above max 0.5"),
    (math.nan, "expect.val_cos", "expected a finite number, got nan"),
])
def test_bounds_that_would_pass_everything_are_refused(tmp_path: Path, bound: Any, key: str,
                                                       fragment: str) -> None:
    # `max = nan` makes every `value > max` false: today it silently passes every figure.
    path = _case(_corpus(tmp_path), {"expect": {"val_cos": bound}})
    _refused(path, key, fragment)


def test_symlinked_case_folder_from_outside_does_not_bring_its_surroundings(
        tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    outside = tmp_path / "elsewhere" / "evil"
    outside.mkdir(parents=True)
    (corpus / "evil").symlink_to(outside, target_is_directory=True)
    # Today the root is found from the resolved path: elsewhere/, so its ../model.onnx
    # (elsewhere/model.onnx) counts as inside.
    (outside.parent / "model.onnx").write_bytes(b"outside")
    path = _case(corpus, {"model": "../model.onnx"}, folder="evil")
    _refused(path, "model", "leaves the corpus", str(corpus))
    (outside / "model.onnx").write_bytes(b"outside")
    path = _case(corpus, {"model": "model.onnx"}, folder="evil")
    _refused(path, "model", "leaves the corpus")


def test_symlinked_case_folder_inside_the_corpus_keeps_its_own_name(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    _case(corpus, {})
    (corpus / "alias").symlink_to(corpus / "cnn", target_is_directory=True)
    [case] = load_cases(corpus / "alias" / "case.toml")
    assert case.name == "alias" and case.model == (corpus / "cnn" / "model.onnx").resolve()


OWNED = [
    (["--output", "/elsewhere"], "--output", "the harness (each item's own work folder)"),
    (["--output=/elsewhere"], "--output (as '--output=/elsewhere')", "work folder"),
    (["-o/elsewhere"], "-o (as '-o/elsewhere')", "work folder"),
    (["--workspace", "/tmp/ws"], "--workspace", "work folder"),
    (["--work", "/tmp/ws"], "--workspace (as '--work')", "work folder"),
    (["-w", "/tmp/ws"], "-w", "work folder"),
    (["--model", "/etc/other.onnx"], "--model", "the case's 'model' key"),
    (["-m", "x.onnx"], "-m", "the case's 'model' key"),
    (["--name", "other"], "--name", "the case's 'name' key"),
    (["-n", "other"], "-n", "the case's 'name' key"),
    (["--target", "stm32h7"], "--target", "the case's 'target' key"),
    (["--memory-pool", "/x.json"], "--memory-pool", "the case's 'memory_pool' key"),
    (["--st-neural-art", "p@/x.json"], "--st-neural-art", "the case's [neural_art] table"),
    (["--mode", "target"], "--mode", "the case's 'stages'"),
    (["--desc", "serial:COM3"], "--desc", "--stedge-board"),
    (["-d", "serial:COM3"], "-d", "--stedge-board"),
    (["--val-json", "/x.json"], "--val-json", "makes the tool read a c_info JSON file"),
    (["-vi", "/data.npz"], "-vi", "validation input files"),
    (["--custom", "/layers.json"], "--custom", "a custom-layer file"),
]


@pytest.mark.parametrize(("options", "option", "setter"), OWNED)
def test_options_the_harness_owns_are_refused_naming_what_sets_them(
        tmp_path: Path, options: list[str], option: str, setter: str) -> None:
    path = _case(_corpus(tmp_path), {"options": ["--input-data-type", "uint8", *options]})
    _refused(path, "options", f"option {option} ", setter)


def test_ordinary_options_are_kept(tmp_path: Path) -> None:
    options = ["--input-data-type", "uint8", "--output-data-type", "int8", "--outputs-ch-position",
               "chlast", "-O", "ram", "--range", "-1", "1", "-v", "2", "--c-api", "st-ai",
               "--no-workspace", "--type", "onnx"]
    [case] = load_cases(_case(_corpus(tmp_path), {"options": options}))
    assert case.options == tuple(options)


@pytest.mark.parametrize(("values", "key", "fragment"), [
    ({"model": "x\0y"}, "model", "holds a NUL character"),
    ({"options": ["--input-data-type", "uint8\0"]}, "options", "holds a NUL character"),
    ({"description": "a\0b"}, "description", "holds a NUL character"),
    ({"target": "--output=/elsewhere"}, "target", "letters, digits"),
    ({"name": "n\u00e9twork"}, "name", "a C identifier"),
    ({"markers": ["n6: injected"]}, "markers", "pytest marker names"),
    ({"neural_art": {"profile": "p@/etc/other.json"}}, "neural_art.profile", "no '@'"),
    ({"model": "/etc/passwd"}, "model", "is absolute"),
    ({"memory_pool": "../../outside/model.onnx"}, "memory_pool", "leaves the corpus"),
])
def test_strings_that_break_argv_or_names_are_refused(tmp_path: Path, values: dict[str, Any],
                                                      key: str, fragment: str) -> None:
    _refused(_case(_corpus(tmp_path), values), key, fragment)


def test_symlink_loops_and_missing_case_files_are_case_errors(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    (corpus / "cnn" / "a").symlink_to(corpus / "cnn" / "b")
    (corpus / "cnn" / "b").symlink_to(corpus / "cnn" / "a")
    _refused(_case(corpus, {"model": "a"}), "model", "cannot be resolved")  # RuntimeError today
    looped = corpus / "loop" / "case.toml"
    looped.parent.mkdir()
    looped.symlink_to(looped)
    with pytest.raises(CaseError, match="cannot read the case file: Too many levels"):
        load_cases(looped)  # OSError today
    with pytest.raises(CaseError, match="cannot read the case file: No such file"):
        load_cases(corpus / "nowhere" / "case.toml")
    with pytest.raises(CaseError, match="variant name 'a/b'"):
        load_cases(_case(corpus, {"variants": {"a/b": {"name": "x"}}}))


# --- property: any values -> a CaseError naming file and key, or a case inside the corpus ---
BIDI = ["\u202e", "\u2066", "\u200f", "\u061c"]
TEXT = st.text(alphabet=st.sampled_from(["a", "/", ".", "-", "_", "=", "@", "\0", " ", *BIDI]),
               max_size=12)
NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                   st.sampled_from([math.nan, math.inf, -math.inf, 1e30, 0, -5, 86_400]))
PATHS = st.one_of(
    st.sampled_from(["model.onnx", "../cnn/model.onnx", "../../outside/model.onnx",
                     "/etc/passwd", "sub/../model.onnx", "out/model.onnx", "in/model.onnx",
                     "loop/model.onnx", "../profiles/mcu.json", "../profiles/art.json", "", "."]),
    TEXT, TEXT.map(lambda t: f"../{t}"), TEXT.map(lambda t: f"/{t}"))
OPTION = st.one_of(st.sampled_from([*OWNED_OPTIONS, *READING_OPTIONS, "--input-data-type",
                                    "uint8", "-1", "--out", "--outputs-ch-position"]), TEXT)
def often(good: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` two times in three: a case refused for its model says nothing of its other
    keys."""
    return st.integers(0, 2).flatmap(lambda i: other if i == 0 else good)


KEYS = {
    "timeout": NUMBER | TEXT,
    "model": often(st.sampled_from(["model.onnx", "in/model.onnx"]), PATHS),
    "memory_pool": often(st.just("../profiles/mcu.json"), PATHS),
    "target": often(st.just("stm32n6"), TEXT),
    "name": often(st.just("network"), TEXT),
    "description": TEXT,
    "options": st.lists(OPTION, max_size=4),
    "markers": st.lists(TEXT, max_size=2),
    "neural_art": st.fixed_dictionaries({}, optional={
        "profile": TEXT, "file": PATHS, "mpool": PATHS}),
    "expect": st.dictionaries(st.sampled_from(["val_cos", "activations_bytes"]),
                              NUMBER | st.dictionaries(
                                  st.sampled_from(["min", "max", "exact", "rel", "abs"]),
                                  NUMBER, min_size=1, max_size=3), max_size=2),
}


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({}, optional=KEYS), st.booleans())
def test_any_case_values_give_a_named_case_error_or_a_case_inside_the_corpus(
        values: dict[str, Any], linked_from_outside: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = _corpus(root)
        cnn = corpus / "cnn"
        (cnn / "out").symlink_to(root / "outside", target_is_directory=True)
        (cnn / "in").symlink_to(cnn, target_is_directory=True)
        (cnn / "loop").symlink_to(cnn / "loop")
        folder = "cnn"
        if linked_from_outside:  # the whole case folder is a link to a folder outside
            (corpus / "linked").symlink_to(root / "outside", target_is_directory=True)
            folder = "linked"
        path = _case(corpus, values, folder=folder)
        try:
            cases = load_cases(path)
        except CaseError as exc:
            event(f"refused: {exc.key.split('.')[0] if exc.key else None}")
            assert exc.path == path and exc.key, str(exc)
            assert exc.key.split(".")[0] in {*values, "model", "target"}, str(exc)
            assert str(exc).startswith(f"{path}: [{exc.key}]: ") and exc.message
            return
        event("loaded")
        inside = corpus.resolve()
        for case in cases:
            paths = [case.model, case.memory_pool]
            if case.neural_art:
                paths += [case.neural_art.file, case.neural_art.mpool]
            for p in paths:
                if p is not None:
                    assert os.path.realpath(p).startswith(str(inside) + os.sep), p
            assert case.timeout is None or 0 < case.timeout <= MAX_TIMEOUT_S
            texts = [case.target, case.c_name, case.description, *case.options, *case.markers]
            assert not any("\0" in t for t in texts)
            for bounds in case.expect.values():
                for b in bounds:
                    numbers = [b.min, b.max, b.exact, b.rel, b.abs]
                    assert all(math.isfinite(n) for n in numbers if n is not None)
                    assert b.rel >= 0 and b.abs >= 0

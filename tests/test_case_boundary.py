"""One case file never stops the corpus: any failure while loading it (a parser's nesting
limit, a path the file system refuses, a malformed band) is that file's collection error,
named with its key, and every other case still runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.case.load import load_cases
from pytest_stedge.errors import CaseError

BASE = "model = 'model.onnx'\ntarget = 'stm32n6'\n"


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, db: Path, *args: str):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db),
        "--stedge-version", "4.0.1", "-p", "no:cacheprovider", f"--rootdir={pytester.path}", *args,
    )


HOSTILE = {
    # tomli refuses inline tables nested past 400 levels with RecursionError
    "deep-inline": BASE + "description = " + "{a = " * 500 + "1" + "}" * 500 + "\n",
    "deep-array": BASE + "options = " + "[" * 500 + "]" * 500 + "\n",
    # a dotted key of more than 1000 parts: RecursionError too
    "long-dotted-key": BASE + "x" + ".x" * 1200 + " = 1\n",
    # a file name longer than any file system takes: ENAMETOOLONG from lstat
    "long-model-name": "model = '" + "m" * 5000 + ".onnx'\ntarget = 'stm32n6'\n",
    "long-model-path": "model = '" + "d/" * 2500 + "m.onnx'\ntarget = 'stm32n6'\n",
    "long-profile": BASE + "[neural_art]\nfile = '" + "p/" * 2500 + "n.json'\n",
}
EXPECTED = {
    "deep-inline": "*deep-inline/case.toml: nested too deeply to read*",
    "deep-array": "*deep-array/case.toml: nested too deeply to read*",
    "long-dotted-key": "*long-dotted-key/case.toml: nested too deeply to read*",
    "long-model-name": "*long-model-name/case.toml: [[]model]: path 'mmmm*"
                       "cannot be resolved: File name too long*",
    "long-model-path": "*long-model-path/case.toml: [[]model]: model file 'd/d/*... "
                       "(5,006 characters) not found*",
    "long-profile": "*long-profile/case.toml*",
}


def test_every_hostile_case_file_is_its_own_collection_error_and_the_rest_runs(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"good": SIMPLE_CASE, **{name: BASE for name in HOSTILE}})
    for name, text in HOSTILE.items():
        (corpus / name / "case.toml").write_text(text)
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=2, errors=len(HOSTILE))  # good: oracle and generate
    out = result.stdout.str()
    for pattern in EXPECTED.values():
        result.stdout.fnmatch_lines([pattern])
    assert "RecursionError" not in out and "Traceback" not in out and "OSError" not in out
    assert max(len(line) for line in out.splitlines()) < 1000  # 5,000 characters are cut
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_load_cases_raises_only_case_errors(
    make_corpus: CorpusFactory, name: str
) -> None:
    corpus = make_corpus({name: BASE})
    (corpus / name / "case.toml").write_text(HOSTILE[name])
    with pytest.raises(CaseError) as caught:
        load_cases(corpus / name / "case.toml")
    assert caught.value.path == corpus / name / "case.toml"


BAD_BANDS = ['"nan"', '"inf"', '"-1"', '"-50%"', '"+1e309%"', '"+nan%"', "nan", "-inf", '""',
             '"3%%"', '"+ -2"']


def test_malformed_baseline_bands_are_refused_at_collection_naming_file_and_key(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    """Each band would pass collection and fail every item after its run: refused before."""
    cases = {"good": SIMPLE_CASE + "[baseline]\nactivations_bytes = '+3%'\n"}
    for i, band in enumerate(BAD_BANDS):
        cases[f"band{i}"] = SIMPLE_CASE + f"[baseline]\nactivations_bytes = {band}\n"
    cases["variant"] = SIMPLE_CASE + "[variants.int8.baseline]\nweights_bytes = '-5%'\n"
    corpus = make_corpus(cases)
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=2, errors=len(BAD_BANDS) + 1)
    for i in range(len(BAD_BANDS)):
        result.stdout.fnmatch_lines([(f"*band{i}/case.toml: [[]baseline.activations_bytes]: band *"
                                     "expected a band such as '+3%'*")])
    result.stdout.fnmatch_lines([("*variant/case.toml: [[]variants.int8.baseline.weights_bytes]: "
                                 "band '-5%'*a band is a magnitude*")])
    assert "Traceback" not in result.stdout.str()
    work = list((pytester.path / ".stedge" / "work").glob("run-*/band*"))
    assert work == []  # the tool never ran for a refused case

"""Collection of a corpus: plain case folders yield their items from the corpus folder, with
the node ids, keywords, selection, ignores and conftests pytest's own collection gives."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

VARIANTS = SIMPLE_CASE + """\
    [variants.int8]
    markers = ["int8"]
    [variants.float]
    """


@pytest.fixture
def corpus(pytester: pytest.Pytester, make_corpus: CorpusFactory) -> Path:
    return make_corpus({"mvs-cnn": VARIANTS, "tcn": SIMPLE_CASE}, root=pytester.path / "corpus")


def _ids(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", *args)
    return [line for line in result.outlines if "::" in line]


def test_node_ids_as_pytest_names_them(pytester: pytest.Pytester, corpus: Path) -> None:
    assert _ids(pytester, "corpus") == [
        "corpus/mvs-cnn/case.toml::oracle[int8]",
        "corpus/mvs-cnn/case.toml::generate[int8-no-install]",
        "corpus/mvs-cnn/case.toml::oracle[float]",
        "corpus/mvs-cnn/case.toml::generate[float-no-install]",
        "corpus/tcn/case.toml::oracle",
        "corpus/tcn/case.toml::generate[no-install]",
    ]


def test_selection_by_keyword_path_node_id_and_marker(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    # -k matches the case folder's name and the variant, as with a folder node
    assert _ids(pytester, "corpus", "-k", "mvs-cnn and int8") == [
        "corpus/mvs-cnn/case.toml::oracle[int8]",
        "corpus/mvs-cnn/case.toml::generate[int8-no-install]",
    ]
    assert _ids(pytester, "corpus", "-m", "int8") == _ids(pytester, "corpus", "-k", "int8")
    assert _ids(pytester, "corpus/tcn") == [
        "corpus/tcn/case.toml::oracle", "corpus/tcn/case.toml::generate[no-install]",
    ]
    assert _ids(pytester, "corpus/tcn/case.toml::oracle") == ["corpus/tcn/case.toml::oracle"]
    assert _ids(pytester, "corpus/mvs-cnn/case.toml::generate") == [
        "corpus/mvs-cnn/case.toml::generate[int8-no-install]",
        "corpus/mvs-cnn/case.toml::generate[float-no-install]",
    ]


def test_ignores_are_honoured(pytester: pytest.Pytester, corpus: Path) -> None:
    assert all("tcn" not in i for i in _ids(pytester, "corpus", "--ignore=corpus/tcn"))
    kept = _ids(pytester, "corpus", "--ignore-glob=*/mvs-cnn/case.toml")
    assert kept and all("mvs-cnn" not in i for i in kept)


def test_a_conftest_in_a_case_folder_applies_to_its_items(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    (corpus / "tcn" / "conftest.py").write_text(textwrap.dedent("""
        def pytest_itemcollected(item):
            item.add_marker("tcn_only")

        def pytest_configure(config):
            config.addinivalue_line("markers", "tcn_only: from the case folder's conftest")
        """))
    assert _ids(pytester, "corpus", "-m", "tcn_only") == [
        "corpus/tcn/case.toml::oracle", "corpus/tcn/case.toml::generate[no-install]",
    ]


def test_a_conftest_above_the_case_folders_applies_to_every_item(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    (corpus / "conftest.py").write_text(textwrap.dedent("""
        def pytest_collection_modifyitems(items):
            for item in items:
                item.add_marker("everywhere")

        def pytest_itemcollected(item):
            print("seen", item.nodeid)
        """))
    result = pytester.runpytest("--collect-only", "-s", "-p", "no:cacheprovider", "corpus",
                                "-W", "ignore::pytest.PytestUnknownMarkWarning")
    assert sum(line.startswith("seen corpus/") for line in result.outlines) == 6


def test_a_malformed_case_fails_as_its_own_file(pytester: pytest.Pytester, corpus: Path) -> None:
    (corpus / "tcn" / "case.toml").write_text("model = 'model.onnx'\ntarget = [")
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", "corpus")
    result.stdout.fnmatch_lines(["*ERROR collecting corpus/tcn/case.toml*", "*not valid TOML*"])
    assert sum("corpus/mvs-cnn/case.toml::" in line for line in result.outlines) == 4

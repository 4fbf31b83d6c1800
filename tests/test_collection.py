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


# Folders pytest's own rules (``_pytest.main.pytest_ignore_collect``) leave out, each by a
# different rule, beside two it keeps.
IGNORED_BY_RULE = {
    "build": "norecursedirs (a name)",
    ".hidden": "norecursedirs ('.*')",
    "pkg.egg": "norecursedirs ('*.egg')",
    "skipme_1": "norecursedirs ('skipme_*', from the ini)",
    "deep": "norecursedirs ('corpus/deep': a pattern with a separator, on the path)",
    "__pycache__": "always",
    "venvlike": "a virtualenv (pyvenv.cfg)",
    "listed": "collect_ignore of the corpus conftest",
    "globbed_x": "collect_ignore_glob of the corpus conftest",
    "opt_ignored": "--ignore",
    "optglob_y": "--ignore-glob on the folder",
    "confile": "collect_ignore naming the case file",
    "fileignored": "--ignore naming the case file",
    "fileglob": "--ignore-glob naming the case file",
}


def test_every_ignore_rule_of_pytest_leaves_out_the_same_case_folders(
    pytester: pytest.Pytester, make_corpus: CorpusFactory
) -> None:
    """The corpus folder answers pytest's ignore rules itself, once per folder (0.23 ms a
    case saved); it must leave out exactly what pytest's hook does."""
    names = ["alpha", "zulu", *IGNORED_BY_RULE]
    corpus = make_corpus({name: SIMPLE_CASE for name in names}, root=pytester.path / "corpus")
    (corpus / "venvlike" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (corpus / "conftest.py").write_text(
        'collect_ignore = ["listed", "confile/case.toml"]\ncollect_ignore_glob = ["globbed_*"]\n'
    )
    pytester.makeini("[pytest]\nnorecursedirs = .* build *.egg skipme_* corpus/deep\n")
    options = ("--ignore=corpus/opt_ignored", "--ignore-glob=*/optglob_*",
               "--ignore=corpus/fileignored/case.toml", "--ignore-glob=*/fileglob/case.toml")

    def case_folders() -> set[str]:
        return {line.split("/")[1] for line in _ids(pytester, "corpus", *options)}

    assert case_folders() == {"alpha", "zulu"}
    # A hook of a conftest makes every question go to pytest's hook: the same answer.
    pytester.makeconftest("def pytest_ignore_collect(collection_path, config):\n    return None\n")
    assert case_folders() == {"alpha", "zulu"}


def test_a_conftest_ignore_hook_is_asked_about_every_case_folder_and_file(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    (corpus / "conftest.py").write_text(textwrap.dedent("""
        def pytest_ignore_collect(collection_path, config):
            print("asked", collection_path.relative_to(config.rootpath).as_posix())
            return collection_path.name == "tcn" or None
        """))
    result = pytester.runpytest("--collect-only", "-q", "-s", "-p", "no:cacheprovider", "corpus")
    asked = {line.split()[1] for line in result.outlines if line.startswith("asked ")}
    assert {"corpus/tcn", "corpus/mvs-cnn", "corpus/mvs-cnn/case.toml"} <= asked
    assert "corpus/tcn/case.toml" not in asked  # its folder was ignored
    assert [i for i in result.outlines if "::" in i and "tcn" in i] == []


class _Node:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_next_session_releases_what_a_session_froze() -> None:
    """A corpus session freezes what collection built (pytest_stedge.heap): frozen garbage
    is not collected, until the next corpus session of the process releases it, so a
    process running sessions in a loop keeps one session's objects at most."""
    import gc
    import weakref

    from pytest_stedge import heap

    node = _Node()
    alive = weakref.ref(node)
    heap.settle()  # the first session: node is frozen
    del node
    gc.collect()
    assert alive() is not None  # garbage, but frozen
    heap.settle()  # the next session
    assert alive() is None and gc.get_freeze_count() > 0
    gc.unfreeze()


def test_a_corpus_session_leaves_the_collector_on_or_off_as_it_was(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    import gc

    try:
        pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", "corpus")
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.disable()
        pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", "corpus")
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_session_without_a_corpus_never_touches_the_garbage_collector(
    pytester: pytest.Pytester,
) -> None:
    import gc

    gc.unfreeze()
    pytester.makepyfile(test_plain="""
        import gc

        def test_collector_untouched():
            assert gc.isenabled() and gc.get_freeze_count() == 0
        """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert gc.get_freeze_count() == 0


def test_a_folder_listing_says_which_folders_are_plain_case_folders(tmp_path: Path) -> None:
    from pytest_stedge.case.scan import scan_folder

    def folder(name: str, *files: str) -> str:
        path = tmp_path / name
        path.mkdir()
        for file in files:
            (path / file).write_text("x")
        return str(path)

    plain = scan_folder(folder("plain", "case.toml", "model.onnx"))
    assert plain is not None and sorted(plain.plain or ()) == ["case.toml", "model.onnx"]
    for name, files in (("python", ("case.toml", "conftest.py")), ("venv", ("case.toml", "pyvenv.cfg")),
                        ("no-case", ("model.onnx",))):
        scan = scan_folder(folder(name, *files))
        assert scan is not None and scan.plain is None, name
    nested = folder("nested", "case.toml")
    (Path(nested) / "sub").mkdir()
    scan = scan_folder(nested)
    assert scan is not None and scan.plain is None and scan.subfolders == (f"{nested}/sub",)
    linked = folder("linked", "case.toml")
    (Path(linked) / "model.onnx").symlink_to(Path(nested) / "case.toml")
    scan = scan_folder(linked)
    # a symlinked model is no regular file of the folder: the case resolves it on its own
    assert scan is not None and scan.plain == ("case.toml",) and "model.onnx" in scan.files
    assert scan_folder(str(tmp_path / "absent")) is None


def test_the_recordings_search_hands_its_listings_to_the_collection(tmp_path: Path) -> None:
    from pytest_stedge.case.recordings import find_recordings

    corpus = tmp_path / "corpus"
    for name in ("a", "b", ".hidden", "node_modules"):
        (corpus / name).mkdir(parents=True)
        (corpus / name / "case.toml").write_text("")
    scans: dict = {}
    assert find_recordings([corpus], scans) == []
    assert sorted(scans) == [str(corpus), str(corpus / "a"), str(corpus / "b")]
    assert scans[str(corpus / "a")].plain == ("case.toml",)

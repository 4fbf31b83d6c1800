"""The upgrade gate end to end: baseline, regressions, a bug that looks fixed, --stedge-update.

Modelled on pytest-regressions' workflow helper: record, rerun, change, accept, rerun.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory, make_conv_model

from pytest_stedge.store.database import Store

BUG = """\
id = "old-bug"
title = "Hybrid epochs on a plain CNN"
source = "https://example.invalid/old-bug"
affected = "==4.0.1"
status = "open"
reproducers = ["fixed"]
signature = "epochs_hybrid > 0"
"""

CNN_CASE = SIMPLE_CASE + """\
    [expect]
    activations_bytes = { min = 1 }  # the tool reports something

    [baseline]
    # a 1% band on weights; every other metric uses the ini default (exact)
    weights_bytes = "+1%"
    """


@pytest.fixture
def workflow(pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path):
    from fake_stedgeai import make_install

    installs = tmp_path / "installs"
    make_install(installs / "3.0", "3.0.0")
    # v2 worsens activations by 10% and adds a software epoch, for the "cnn" model only
    make_install(
        installs / "4.0", "4.0.1",
        config={"model": {"inflate_activations": 1.10, "extra_sw_epochs": 1}},
    )
    corpus = make_corpus({"cnn": CNN_CASE}, root=pytester.path / "corpus")
    fixed = corpus / "fixed"
    fixed.mkdir()
    make_conv_model(fixed / "other.onnx", channels=6, size=10)
    (fixed / "case.toml").write_text(
        textwrap.dedent(SIMPLE_CASE).replace("model.onnx", "other.onnx") + 'bugs = ["old-bug"]\n'
    )
    # a top-level key after a table would belong to the table: rewrite in order
    text = (fixed / "case.toml").read_text().replace('bugs = ["old-bug"]\n', "")
    (fixed / "case.toml").write_text('bugs = ["old-bug"]\n' + text)
    (corpus / "bugs").mkdir()
    (corpus / "bugs" / "old-bug.toml").write_text(BUG)
    db = tmp_path / "db.duckdb"

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "corpus", "--stedge-root", str(installs), "--stedge-db", str(db),
            "-p", "no:cacheprovider", "-rxX", *args,
        )

    return run, corpus, db


def test_record_rerun_regress_xpass_update_pass(workflow) -> None:
    run, corpus, db = workflow

    # 1. record the baseline with v1, 2. rerun: passes
    run("--stedge-version", "3.0.0").assert_outcomes(passed=4)
    run("--stedge-version", "3.0.0").assert_outcomes(passed=4)

    # 3. v2 against the baseline: both changes are regressions and the session fails
    result = run("--stedge-version", "4.0.1", "--stedge-baseline", "3.0.0", "-k", "cnn")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            # activations +10% (and their ratio to the bound), one more SW epoch (and total)
            "*cnn generate[[]4.0.1]: 4 metric(s) moved beyond their band against 3.0.0.",
            "*activations_bytes*2,048*2,254*+206 (+10.1%)*regressed*",
            "*epochs_sw*4*5*+1*regressed*",
            "stedge diff 3.0.0 -> 4.0.1: 4 regressed, 9 unchanged",
            "cnn [[]generate]*",
            "*activations_bytes*(+10.1%)*REGRESSED*",
            "*epochs_sw*+1*REGRESSED*",
        ]
    )

    # 4. a registered bug that v2 no longer shows: strict XPASS naming it
    result = run("--stedge-version", "4.0.1", "--stedge-baseline", "3.0.0", "-k", "fixed")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)] bug old-bug looks fixed in 4.0.1*update the registry*"])
    with Store.open(db, create=False) as store:
        findings = store.findings(bug_id="old-bug")
    assert {(f["version"], f["status"]) for f in findings} >= {("4.0.1", "not-reproduced")}

    # 5. accept the new figures: the case file keeps its comments and gets wider bands
    before = (corpus / "cnn" / "case.toml").read_text()
    result = run("--stedge-version", "4.0.1", "--stedge-baseline", "3.0.0", "-k", "cnn", "--stedge-update")
    result.stdout.fnmatch_lines(["--stedge-update changed:", "*cnn/case.toml: *activations_bytes*"])
    # everything asked for was written: exit 0, and each change names its file once
    assert result.ret == pytest.ExitCode.OK
    changed = [line for line in result.outlines if "cnn/case.toml: [" in line]
    assert changed and all(line.count("case.toml") == 1 for line in changed)
    result.stdout.fnmatch_lines(["--stedge-update wrote the new expectations of all 1 failing*"])
    after = (corpus / "cnn" / "case.toml").read_text()
    assert after != before
    assert "# a 1% band on weights; every other metric uses the ini default (exact)" in after
    assert "# the tool reports something" in after
    assert (corpus / "fixed" / "case.toml").read_text().startswith('bugs = ["old-bug"]')

    # 6. the next run passes
    run("--stedge-version", "4.0.1", "--stedge-baseline", "3.0.0", "-k", "cnn").assert_outcomes(passed=2)


def test_a_baseline_without_stored_results_is_a_usage_error(workflow) -> None:
    run, _, _ = workflow
    run("--stedge-version", "3.0.0").assert_outcomes(passed=4)
    result = run("--stedge-version", "4.0.1", "--stedge-baseline", "2.2.0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stedge-baseline 2.2.0: the store * has no results of 2.2.0; versions with stored results: 3.0.0*"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no_xdist", "xdist_two"])
def test_baseline_run_in_the_same_session(workflow, xdist: list[str]) -> None:
    run, _, _ = workflow
    result = run(
        "--stedge-version", "4.0.1", "--stedge-version", "3.0.0", "--stedge-baseline", "3.0.0",
        "-k", "cnn", *xdist,
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["stedge diff 3.0.0 -> 4.0.1: 4 regressed, 9 unchanged"])


def test_a_case_naming_a_missing_bug_is_a_collection_error(workflow) -> None:
    run, corpus, _ = workflow
    case = corpus / "cnn" / "case.toml"
    case.write_text('bugs = ["no-such-bug"]\n' + case.read_text())
    result = run("--stedge-version", "3.0.0")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*cnn/case.toml: [[]bugs]: unknown bug 'no-such-bug'*known bugs: old-bug*"])


def test_a_known_bug_xfails_and_is_never_accepted_by_update(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus(
        {"cnn": SIMPLE_CASE + "[expect]\nepochs_sw = { max = 0 }  # the NPU should run it all\n"},
        root=pytester.path / "corpus",
    )
    (corpus / "bugs").mkdir()
    (corpus / "bugs" / "sw-bug.toml").write_text(
        BUG.replace("old-bug", "sw-bug").replace('["fixed"]', '["cnn"]')
        .replace("epochs_hybrid > 0", "epochs_sw > 0")
    )
    before = (corpus / "cnn" / "case.toml").read_text()
    result = pytester.runpytest_subprocess(
        "corpus", "--stedge-root", str(fake_installs), "--stedge-db", str(tmp_path / "db.duckdb"),
        "--stedge-version", "4.0.1", "-p", "no:cacheprovider", "-rx", "--stedge-update",
    )
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["XFAIL *generate[[]4.0.1]*known bug sw-bug in 4.0.1: *[[]https://example.invalid/sw-bug]*"])
    assert (corpus / "cnn" / "case.toml").read_text() == before


def test_update_of_one_variant_writes_into_that_variant_only(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    # issue 19: `--stedge-update -k "mvs-cnn and int8"` widened the [expect] that the
    # float variant shares, printed each path twice and exited 1
    corpus = make_corpus(
        {"mvs-cnn": SIMPLE_CASE + """\
    [expect]
    activations_bytes = { max = 1 }  # shared by both variants

    [variants.int8]
    stages = ["generate"]

    [variants.float]
    stages = ["generate"]
    """},
        root=pytester.path / "corpus",
    )
    db = tmp_path / "db.duckdb"

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "corpus", "--stedge-root", str(fake_installs), "--stedge-version", "4.0.1",
            "--stedge-db", str(db), "-p", "no:cacheprovider", *args,
        )

    result = run("-k", "mvs-cnn and int8", "--stedge-update")
    assert result.ret == pytest.ExitCode.OK
    changed = [line for line in result.outlines if "case.toml: [" in line]
    assert len(changed) == 1 and changed[0].count("case.toml") == 1
    assert "[variants.int8.expect] activations_bytes max 1 -> " in changed[0]
    text = (corpus / "mvs-cnn" / "case.toml").read_text()
    assert "activations_bytes = { max = 1 }  # shared by both variants" in text

    after = run("-k", "generate")
    after.assert_outcomes(passed=1, failed=1)  # int8 now passes; float still misses
    after.stdout.fnmatch_lines(["FAILED corpus/mvs-cnn/case.toml::generate[[]float-4.0.1]*"])


def test_update_with_a_failure_it_cannot_write_keeps_the_exit_status(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    from fake_stedgeai import make_install

    installs = tmp_path / "installs"
    make_install(installs / "4.0", "4.0.1", config={"other": {"crash": True}})
    missed = SIMPLE_CASE + "    [expect]\n    activations_bytes = { max = 1 }\n"
    corpus = make_corpus({"cnn": missed, "broken": missed}, root=pytester.path / "corpus")
    (corpus / "broken" / "model.onnx").rename(corpus / "broken" / "other.onnx")
    toml = corpus / "broken" / "case.toml"
    toml.write_text(toml.read_text().replace("model.onnx", "other.onnx"))
    result = pytester.runpytest_subprocess(
        "corpus", "--stedge-root", str(installs), "--stedge-version", "4.0.1",
        "--stedge-db", str(tmp_path / "db.duckdb"), "-p", "no:cacheprovider",
        "--stedge-update", "-k", "generate",
    )
    result.assert_outcomes(failed=2)  # cnn missed (and got updated), broken crashed
    result.stdout.fnmatch_lines(["*cnn/case.toml: [[]expect] activations_bytes max 1 -> *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED

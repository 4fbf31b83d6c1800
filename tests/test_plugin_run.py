"""The main job end to end: pytest corpus --stedge-version X with the fake tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.store.database import Store


@pytest.fixture(params=["no_xdist", "xdist_two"])
def plugin_args(request: pytest.FixtureRequest) -> list[str]:
    """Every run-level test runs once without xdist and once with -n 2."""
    return [] if request.param == "no_xdist" else ["-n", "2"]


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, db: Path, *args: str):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db), "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}",
        *args,
    )


def test_items_are_one_per_case_stage_and_version(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    make_corpus({"cnn": SIMPLE_CASE, "other": SIMPLE_CASE}, root=pytester.path / "corpus")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_inprocess(
        "corpus", "--stedge-root", str(fake_installs), "--stedge-db", str(tmp_path / "db.duckdb"),
        "--collect-only", "-q",
    )
    result.stdout.fnmatch_lines(
        [
            "corpus/cnn/case.toml::oracle",
            "corpus/cnn/case.toml::generate[[]3.0.0]",
            "corpus/cnn/case.toml::generate[[]4.0.1]",
            "corpus/other/case.toml::oracle",
            "corpus/other/case.toml::generate[[]4.0.1]",
        ]
    )
    assert not (tmp_path / "db.duckdb").exists()  # collecting is not a run


def test_generate_runs_checks_and_stores(
    pytester: pytest.Pytester,
    make_corpus: CorpusFactory,
    fake_installs: Path,
    tmp_path: Path,
    plugin_args: list[str],
) -> None:
    corpus = make_corpus(
        {
            "cnn": SIMPLE_CASE
            + """
    [expect]
    activations_bytes = { min = 1 }
    epochs_hybrid = { max = 0 }
    activations_ratio = { max = 1000 }
    """
        }
    )
    db = tmp_path / "results.duckdb"
    result = _run(pytester, corpus, fake_installs, db, "--stedge-version", "4.0.1", *plugin_args)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*stedge summary*", "case*passed*failed*skipped", "cnn*2*0*0",
                                 f"stored as run 1 in {db}"])
    with Store.open(db, create=False) as store:
        run = store.get_run(1)
    assert run["status"] == "passed"
    assert run["versions"] == ["4.0.1"]
    generate = next(i for i in run["items"] if i["stage"] == "generate")
    assert generate["version"] == "4.0.1"
    assert generate["outcome"] == "passed"
    assert generate["result"]["tool"]["version"] == "4.0.1"
    # the figure is the tool's own, as its c_info states it
    (workdir,) = (pytester.path / ".stedge" / "work").glob("run-1-*/cnn/generate-4.0.1")
    c_info = json.loads((workdir / "st_ai_output" / "network_c_info.json").read_text())
    assert generate["metrics"]["activations_bytes"] == c_info["memory_footprint"]["activations"]
    assert generate["metrics"]["activations_ratio"] == pytest.approx(
        generate["metrics"]["activations_bytes"]
        / generate["metrics"]["activations_lower_bound_bytes"]
    )
    assert len(generate["model_sha256"]) == 64
    assert generate["tool_seconds"] > 0
    # the tool ran in the item's own folder
    workdirs = list((pytester.path / ".stedge" / "work").glob("run-1-*/cnn/generate-4.0.1"))
    assert workdirs and (workdirs[0] / "st_ai_output" / "network_c_info.json").is_file()


def test_failed_expectations_show_every_missed_metric(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus(
        {
            "cnn": SIMPLE_CASE
            + """
    [expect]
    activations_bytes = { max = 10 }
    weights_bytes = { exact = 3, rel = 0.01 }
    val_cos = { min = 0.99 }
    """
        }
    )
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb", "--stedge-version", "4.0.1")
    result.assert_outcomes(passed=1, failed=1)
    (workdir,) = (pytester.path / ".stedge" / "work").glob("run-1-*/cnn/generate-4.0.1")
    footprint = json.loads((workdir / "st_ai_output" / "network_c_info.json").read_text())[
        "memory_footprint"
    ]
    act, weights = footprint["activations"], footprint["weights"]
    # the differences, by hand from the tool's own figures
    act_row = (f"*activations_bytes*<= 10 B*{act:,} B*+{act - 10:,} B "
               f"(+{(act - 10) / 10 * 100:.1f}%)")
    weights_row = (f"*weights_bytes*== 3 B ± 1%*{weights:,} B*+{weights - 3:,} B "
                   f"(+{(weights - 3) / 3 * 100:.1f}%)")
    result.stdout.fnmatch_lines(
        [
            "*cnn generate[[]4.0.1]: 2 metrics missed their expectations.",
            "*metric*expected*measured*difference",
            act_row,
            weights_row,
        ]
    )
    # val_cos is for validate stages: not checked on generate
    assert "val_cos" not in result.stdout.str().split("stedge summary")[0]
    result.stdout.fnmatch_lines(["failed items:", "*generate[[]4.0.1]", "*activations_bytes: expected <= 10 B*"])
    assert result.ret == 1


def test_no_install_skips_with_where_we_looked(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-db", str(tmp_path / "db.duckdb"), "-rs",
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*no stedgeai install found (looked in: */opt/ST/STEdgeAI*--stedge-root DIR or STEDGEAI_CORE_DIR*"]
    )


def test_unknown_version_is_a_usage_error(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb", "--stedge-version", "9.9.9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*stedgeai 9.9.9 is not installed*Installs found: 3.0.0 (*3.0), 4.0.1 (*4.0)*Looked in: *"]
    )


def test_stedgeai_core_dir_is_searched(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    monkeypatch.setenv("STEDGEAI_CORE_DIR", str(fake_installs / "3.0"))
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-db", str(tmp_path / "db.duckdb"), "-v",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*generate[[]3.0.0] PASSED*"])


def test_junitxml_and_k_select_items(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE, "other": SIMPLE_CASE})
    xml = tmp_path / "junit.xml"
    result = _run(
        pytester, corpus, fake_installs, tmp_path / "db.duckdb",
        "-k", "cnn and generate and 4.0.1", f"--junitxml={xml}",
    )
    result.assert_outcomes(passed=1, deselected=5)
    text = xml.read_text()
    assert 'name="generate[4.0.1]"' in text
    assert "cnn" in text


def test_json_of_a_run_from_the_cli(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_stedge.cli.main import main

    corpus = make_corpus({"cnn": SIMPLE_CASE})
    db = tmp_path / "db.duckdb"
    _run(pytester, corpus, fake_installs, db, "--stedge-version", "3.0.0").assert_outcomes(passed=2)
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "passed" in out and "3.0.0" in out
    assert main(["show", "1", "--db", str(db), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert {i["stage"] for i in run["items"]} == {"oracle", "generate"}
    assert run["items"][0]["result"]["schema"] == "stedge.result/1"
    assert main(["show", "7", "--db", str(db)]) == 2
    assert "no run 7" in capsys.readouterr().err


def test_last_failed_and_exitfirst_select_items(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus(
        {"good": SIMPLE_CASE, "bad": SIMPLE_CASE + "[expect]\nactivations_bytes = { max = 1 }\n"},
        root=pytester.path / "corpus",
    )
    args = ["corpus", "--stedge-root", str(fake_installs), "--stedge-db", str(tmp_path / "db.duckdb"),
            "--stedge-version", "4.0.1"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=3, failed=1)
    again = pytester.runpytest_subprocess(*args, "--lf", "-v")
    # only the failed item runs; the other cases' items are collected and deselected
    assert again.parseoutcomes() == {"failed": 1, "deselected": 3}
    again.stdout.fnmatch_lines(["*corpus/bad/case.toml::generate[[]4.0.1] FAILED*"])
    first = pytester.runpytest_subprocess(*args, "-x")
    first.assert_outcomes(passed=1, failed=1)
    assert corpus.is_dir()

"""The gate from the user's side: a case that should fail fails, with the right table.

Each test writes a corpus, runs pytest on it against the fake stedgeai (faults set the
measured figures), and reads what a user reads: outcomes, the failure table, the summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CorpusFactory

HOST_CASE = """\
    model = "model.onnx"
    target = "stm32h7"
    stages = ["validate-host"]
    oracle = false
    {bugs}
    [expect]
    {expect}
    """


def _installs(tmp_path: Path, **configs: dict) -> Path:
    """Fake installs by version, each with its own baked faults."""
    from fake_stedgeai import make_install

    root = tmp_path / "installs"
    for version, config in configs.items():
        make_install(root / version, version.replace("_", "."), config=config)
    return root


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, tmp_path: Path, *args: str):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(tmp_path / "db.duckdb"),
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}", "--stedge-report", "none",
        "-rxX", *args,
    )


def test_an_accuracy_floor_fails_below_it_and_holds_within_its_tolerance(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    installs = _installs(tmp_path, **{"4_0_1": {"validate": {"cos": 0.985}}})
    corpus = make_corpus(
        {
            "floor": HOST_CASE.format(bugs="", expect="val_cos = { min = 0.99 }"),
            # 0.99 with rel 0.01: the floor is 0.99 - 0.0099 = 0.9801, below 0.985
            "tolerant": HOST_CASE.format(bugs="", expect="val_cos = { min = 0.99, rel = 0.01 }"),
            # 0.99 with abs 0.004: the floor is 0.986, above 0.985
            "tight": HOST_CASE.format(bugs="", expect="val_cos = { min = 0.99, abs = 0.004 }"),
        }
    )
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.1")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*floor validate-host[[]4.0.1]: 1 metric missed their expectations.",
            "*metric   expected  measured  difference",
            # 0.985 - 0.99 = -0.005; -0.005 / 0.99 = -0.5 %
            "*val_cos  >= 0.99   0.985     -0.005 (-0.5%)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*tight validate-host[[]4.0.1]*", "*val_cos  >= 0.99 ± 0.004  0.985     -0.005 (-0.5%)"]
    )
    assert "tolerant validate-host" not in result.stdout.str().split("short test summary")[0]
    assert result.ret == 1


def test_identical_outputs_give_snr_inf_and_losing_it_is_reported_not_crashed(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    installs = _installs(
        tmp_path, **{"4_0_0": {"validate": {"identical": True}}, "4_0_1": {}}
    )
    corpus = make_corpus({"cnn": HOST_CASE.format(bugs="", expect="val_snr = { min = 40 }")})
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.0",
                  "--stedge-version", "4.0.1", "--stedge-baseline", "4.0.0")
    # snr=inf meets its floor; 4.0.1's finite snr meets it too but lost bit-exactness
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cnn validate-host[[]4.0.1]: * metric(s) moved beyond their band against 4.0.0.",
            "  val_snr   inf       6*-inf         regressed  +1",
        ]
    )
    result.stdout.fnmatch_lines(["*val_snr: regressed against 4.0.0: inf -> *(band +1)"])
    assert "OverflowError" not in result.stdout.str() + result.stderr.str()


def test_validation_noise_between_versions_is_not_a_regression(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    # the real MobileNetV2-224 move between 2.2.0 and 4.0.1: cos 0.997552 -> 0.997453
    installs = _installs(
        tmp_path, **{"4_0_0": {"validate": {"cos": 0.997552}}, "4_0_1": {"validate": {"cos": 0.997453}}}
    )
    corpus = make_corpus({"cnn": HOST_CASE.format(bugs="", expect="val_cos = { min = 0.99 }")})
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.0",
                  "--stedge-version", "4.0.1", "--stedge-baseline", "4.0.0")
    result.assert_outcomes(passed=2)
    # the user can make it exact again
    (corpus.parent / "pytest.ini").write_text("[pytest]\nstedge_metric_bands =\n    val_cos=0\n")
    strict = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.0",
                  "--stedge-version", "4.0.1", "--stedge-baseline", "4.0.0")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(["*val_cos: regressed against 4.0.0: 0.99755* -> 0.99745* (band 0)"])


def test_a_malformed_metric_band_is_a_usage_error(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    installs = _installs(tmp_path, **{"4_0_1": {}})
    corpus = make_corpus({"cnn": HOST_CASE.format(bugs="", expect="val_cos = { min = 0.9 }")})
    (corpus.parent / "pytest.ini").write_text("[pytest]\nstedge_metric_bands = val_cos+1\n")
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.1",
                  "--stedge-baseline", "4.0.1")
    result.stderr.fnmatch_lines(["*ini stedge_metric_bands: metric band 'val_cos+1': expected METRIC=BAND*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_when_nothing_moved_the_summary_says_how_much_was_compared(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    installs = _installs(tmp_path, **{"4_0_0": {}, "4_0_1": {}})
    case = HOST_CASE.replace('target = "stm32h7"', 'target = "stm32h7"\n    stages = ["generate"]')
    corpus = make_corpus({"cnn": case.replace('    stages = ["validate-host"]\n', "").format(
        bugs="", expect="macc = { min = 1 }")})
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.0",
                  "--stedge-version", "4.0.1", "--stedge-baseline", "4.0.0")
    result.assert_outcomes(passed=2)
    # weights, activations, activations in external RAM, io in and out, macc: an MCU
    # generate has no epochs
    result.stdout.fnmatch_lines(["baseline 4.0.0: 6 metrics unchanged in 4.0.1"])


BUG = """\
id = "sw-bug"
title = "extra SW epochs"
source = "https://example.invalid/sw-bug"
affected = "==4.0.1"
status = "open"
reproducers = ["cnn"]
signature = "epochs_sw > 100"
"""

N6_CASE = """\
    model = "model.onnx"
    target = "stm32n6"
    oracle = false
    {bugs}
    [neural_art]
    profile = "default"
    """


@pytest.mark.parametrize("listed", [False, True], ids=["reproducer-only", "listed-too"])
def test_a_known_bug_that_no_longer_shows_is_a_strict_xpass(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path, listed: bool
) -> None:
    installs = _installs(tmp_path, **{"4_0_1": {}})
    corpus = make_corpus({"cnn": N6_CASE.format(bugs='bugs = ["sw-bug"]' if listed else "")})
    (corpus / "bugs").mkdir()
    (corpus / "bugs" / "sw-bug.toml").write_text(BUG)
    result = _run(pytester, corpus, installs, tmp_path, "--stedge-version", "4.0.1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [("*[[]XPASS(strict)] bug sw-bug looks fixed in 4.0.1: its signature `epochs_sw > 100` "
          "no longer matches*update the registry*")]
    )
    assert result.ret == 1

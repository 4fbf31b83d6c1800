"""A case's [expect] bound is checked on every stage that measures its metric, and a bound
that no stage of the case checks is said in the summary, naming the case and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CorpusFactory

from pytest_stedge.case.load import load_cases
from pytest_stedge.verdict.expect import check

MCU_CASE = """\
    description = "two Conv+Relu layers on an MCU (host validation runs there)"
    model = "model.onnx"
    target = "stm32h7"
    stages = {stages}
    [expect]
    activations_bytes = {{ max = 10 }}
    val_cos = {{ min = 0.99 }}
    [expect.analyze]
    macc = {{ max = 1 }}
    """


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, db: Path) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db),
        "--stedge-version", "4.0.1", "--stedge-report", "none", "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}",
    )


def test_a_validate_item_is_checked_on_the_memory_it_measured(tmp_path: Path) -> None:
    """The issue's case: a validate-target item at 143,360 B under `[expect]
    activations_bytes = { max = 20_000 }` passed, its report showing expected "—"."""
    case_toml = tmp_path / "case.toml"
    (tmp_path / "model.onnx").write_bytes(b"")
    case_toml.write_text(
        'model = "model.onnx"\ntarget = "stm32n6"\nstages = ["generate", "validate-target"]\n'
        "[expect]\nactivations_bytes = { max = 20_000 }\nval_cos = { min = 0.99 }\n",
        encoding="utf-8",
    )
    (case,) = load_cases(case_toml, tmp_path)
    measured = {"activations_bytes": 143_360.0, "val_cos": 1.0}
    (miss,) = check(case.bounds_for("validate-target", measured), measured)
    assert (miss.metric, miss.measured) == ("activations_bytes", 143_360.0)
    # a validate run that printed no memory figure is not failed for it: it did not measure it
    assert check(case.bounds_for("validate-target", {"val_cos": 1.0}), {"val_cos": 1.0}) == []
    # generate always states its memory: a missing figure there stays a miss
    assert [m.metric for m in check(case.bounds_for("generate", {}), {})] == ["activations_bytes"]
    assert [key for key, _ in case.keyed_bounds("validate-target", measured)] == [
        "expect.activations_bytes", "expect.val_cos"
    ]


def test_validate_items_fail_on_memory_bounds_and_unchecked_bounds_are_said(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": MCU_CASE.format(stages='["generate", "validate-host"]')})
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=1, failed=2)  # the oracle passes; both tool stages miss
    result.stdout.fnmatch_lines([
        "*cnn validate-host[[]4.0.1]: 1 metric missed their expectations.",
        "*activations_bytes*<= 10 B*",
    ])
    out = result.stdout.str()
    summary = out[out.index("stedge summary"):]
    assert "warning: bounds that no stage checked" in summary
    # val_cos was checked by validate-host; the analyze table by nothing
    assert "  cnn: expect.analyze.macc (analyze is not among the case's stages)\n" in summary


def test_a_bound_no_stage_measures_is_a_warning_naming_case_and_key(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": MCU_CASE.format(stages='["generate"]')})
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "warning: bounds that no stage checked (they said nothing):",
        ("  cnn: expect.analyze.macc (analyze is not among the case's stages); "
         "expect.val_cos (no stage measured val_cos)"),
    ])

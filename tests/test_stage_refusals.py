"""Only the tool's documented stage-for-target refusals skip an item; every other error fails it.

The refusal text is the one ../shared/stedgeai-formats.md 2.4 quotes for 4.0 on the N6
(`E102(CliArgumentError): Validation on host is not supported for devices based on Arm
Cortex M55/M85 core.`); the option error is the real 4.0 line quoted in 2.5.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CorpusFactory

from pytest_stedge.tool.runner import STAGE_REFUSALS, stage_refusal

HOST_REFUSAL = (
    "E102(CliArgumentError): Validation on host is not supported for devices based on "
    "Arm Cortex M55/M85 core."
)
C_API_ERROR = (
    "E102(CliArgumentError): --address/--copy-weights-at arguments are not supported with "
    "the 'st-ai' c-api."
)

N6_CASE = """\
    model = "model.onnx"
    target = "stm32n6"
    stages = {stages}
    options = {options}
    [neural_art]
    profile = "default"
    """


def test_the_documented_refusals_are_listed_one_by_one() -> None:
    assert [(r.stages, r.line) for r in STAGE_REFUSALS] == [(("validate-host",), HOST_REFUSAL)]


def test_host_validation_refusal_is_recognised_on_host_validation_only() -> None:
    assert stage_refusal("validate-host", HOST_REFUSAL) is STAGE_REFUSALS[0]
    # the line wrapped or padded the way a console prints it is the same line
    assert stage_refusal("validate-host", HOST_REFUSAL.replace(" for ", "\n  for ") + " ")
    # the same words on another stage are not a documented refusal of that stage
    assert stage_refusal("generate", HOST_REFUSAL) is None
    assert stage_refusal("validate-target", HOST_REFUSAL) is None


@pytest.mark.parametrize(
    "reason",
    [
        C_API_ERROR,
        "E102(CliArgumentError): --st-neural-art is only supported with the 'stm32n6' target",
        "INTERNAL ERROR: Transpose on batch not supported in layer _df_gru_gru_Transpose_output_0",
        HOST_REFUSAL + " Also something else",
        None,
    ],
    ids=["c-api-options", "neural-art-target", "internal-error", "longer-text", "no-reason"],
)
def test_other_not_supported_lines_are_not_refusals(reason: str | None) -> None:
    assert stage_refusal("validate-host", reason) is None


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, tmp_path: Path):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(tmp_path / "db.duckdb"),
        "--stedge-version", "4.0.1", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        "-rs", "--stedge-report", "none",
    )


def test_host_validation_on_the_n6_with_4x_is_a_skip_that_says_why(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": N6_CASE.format(stages='["validate-host"]', options="[]")})
    result = _run(pytester, corpus, fake_installs, tmp_path)
    result.assert_outcomes(passed=1, skipped=1)  # the oracle passes, the stage skips
    result.stdout.fnmatch_lines(
        [f"SKIPPED*stedgeai 4.0.1 refuses validate-host here: {HOST_REFUSAL}"]
    )
    assert result.ret == 0


def test_a_misconfigured_case_fails_even_though_the_tool_says_not_supported(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    options = '["--c-api", "st-ai", "--address", "0x71000000"]'
    corpus = make_corpus({"cnn": N6_CASE.format(stages='["generate"]', options=options)})
    result = _run(pytester, corpus, fake_installs, tmp_path)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*exited with status *: {C_API_ERROR}*"])
    assert "refuses" not in result.stdout.str()
    assert result.ret == 1

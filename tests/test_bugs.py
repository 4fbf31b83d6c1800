"""The known-bug registry: loading, bad input, version logic, findings, the corpus entries."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pytest_stedge.bugs.registry import (
    check_case_bugs,
    load_bug,
    load_registry,
    missing_reproducers,
    release_of,
)
from pytest_stedge.bugs.signature import signature_env
from pytest_stedge.errors import CaseError

PROJECT = Path(__file__).resolve().parents[1]
CORPUS = PROJECT / "corpus"

GOOD = """\
id = "{id}"
title = "PReLU runs in software"
source = "https://example.invalid/report"
affected = "<2.2"
fixed_in = "2.2.0"
status = "fixed"
reproducers = ["mtcnn-rnet/int8"]
signature = '"PRelu" in software_ops'
"""


def write_bug(folder: Path, text: str, name: str = "prelu") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(textwrap.dedent(text).format(id=name), encoding="utf-8")
    return path


def test_load_registry_reads_every_file(tmp_path: Path) -> None:
    write_bug(tmp_path, GOOD, "prelu")
    write_bug(tmp_path, GOOD.replace("<2.2", "==2.1.*"), "other")
    registry = load_registry(tmp_path)
    assert registry.ids() == ["other", "prelu"]
    bug = registry.get("prelu")
    assert bug is not None and bug.reproducers == ("mtcnn-rnet/int8",)
    assert str(bug.fixed_in) == "2.2.0" and bug.status == "fixed"


def test_missing_folder_is_an_empty_registry(tmp_path: Path) -> None:
    assert len(load_registry(tmp_path / "nope")) == 0


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.1.0", True),
        ("2.1.0-20182", True),
        ("1.0.0", True),
        ("2.2.0", False),
        ("2.2.0-20266 2adc00962", False),
        ("4.0.1", False),
        ("nightly", None),
    ],
)
def test_affects_with_fixed_in(tmp_path: Path, version: str, expected: bool | None) -> None:
    bug = load_bug(write_bug(tmp_path, GOOD))
    assert bug.affects(version) is expected


def test_affects_is_unknown_outside_what_the_registry_says(tmp_path: Path) -> None:
    text = (
        GOOD.replace('affected = "<2.2"', 'affected = "==4.0.1"')
        .replace('fixed_in = "2.2.0"\n', "")
        .replace('"fixed"', '"open"')
    )
    bug = load_bug(write_bug(tmp_path, text))
    assert bug.affects("4.0.1-20581") is True
    assert bug.affects("4.0.0") is None and bug.affects("4.1.0") is None
    unknown = load_bug(write_bug(tmp_path, text.replace('"==4.0.1"', '"unknown"')))
    assert unknown.affects("4.0.1") is None


def test_release_of_strips_build_numbers() -> None:
    assert str(release_of("4.0.1-20581 359356bb0")) == "4.0.1"
    assert release_of("unknown") is None


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        (('affected = "<2.2"', 'affected = "<<2.2"'), "affected", "PEP 440"),
        (('affected = "<2.2"', 'affected = ""'), "affected", "unknown"),
        (
            ("signature = '\"PRelu\" in software_ops'", 'signature = "prelu_ops > 1"'),
            "signature",
            "unknown name 'prelu_ops'",
        ),
        (
            ("signature = '\"PRelu\" in software_ops'", 'signature = "epochs_sw >"'),
            "signature",
            "column 12",
        ),
        (('title = "PReLU runs in software"\n', ""), "title", "missing"),
        (('reproducers = ["mtcnn-rnet/int8"]\n', ""), "reproducers", "missing"),
        (('reproducers = ["mtcnn-rnet/int8"]', "reproducers = []"), "reproducers", "non-empty"),
        (('status = "fixed"', 'status = "wontfix"'), "status", "open, fixed, unknown"),
        (('fixed_in = "2.2.0"', 'fixed_in = "two"'), "fixed_in", "not a version"),
        (('fixed_in = "2.2.0"', 'fixed_in = "2.1"'), "fixed_in", "inside affected"),
        (('fixed_in = "2.2.0"\n', ""), "fixed_in", "status 'fixed' needs"),
        (('id = "{id}"', 'id = "other-name"'), "id", "differs from the file name"),
        (('status = "fixed"', 'status = "fixed"\nseverity = 3'), "severity", "unknown key"),
        (('status = "fixed"', 'status = "fixed"\nstages = ["flash"]'), "stages", "generate"),
    ],
)
def test_bad_bug_file_names_file_and_key(
    tmp_path: Path, change: tuple[str, str], key: str, fragment: str
) -> None:
    assert change[0] in GOOD
    path = write_bug(tmp_path, GOOD.replace(*change))
    with pytest.raises(CaseError) as info:
        load_registry(tmp_path)
    assert info.value.key == key
    assert str(path) in str(info.value) and f"[{key}]" in str(info.value)
    assert fragment in str(info.value)


def test_invalid_toml_names_file(tmp_path: Path) -> None:
    path = write_bug(tmp_path, "id = \n")
    with pytest.raises(CaseError, match="not valid TOML") as info:
        load_registry(tmp_path)
    assert info.value.path == path


def test_case_referencing_missing_bug(tmp_path: Path) -> None:
    write_bug(tmp_path, GOOD)
    registry = load_registry(tmp_path)
    check_case_bugs(["prelu"], registry, tmp_path / "case.toml")
    with pytest.raises(CaseError) as info:
        check_case_bugs(["prelu", "gone"], registry, tmp_path / "case.toml")
    assert info.value.key == "bugs"
    assert "'gone'" in str(info.value) and "known bugs: prelu" in str(info.value)


def test_evaluate_findings_for_reproducers_and_matches(tmp_path: Path) -> None:
    write_bug(tmp_path, GOOD)
    registry = load_registry(tmp_path)
    sw = signature_env(
        {"software_ops": ["PRelu"], "epochs": {"sw": 2}}, stage="generate", version="2.1.0"
    )
    (finding,) = registry.evaluate(sw, case_name="mtcnn-rnet/int8")
    assert finding.status == "reproduced"
    assert finding.evidence["values"] == {"software_ops": ["PRelu"]}
    assert finding.evidence["affects"] is True
    assert finding.to_row()["bug_id"] == "prelu"
    hw = signature_env({"software_ops": []}, stage="generate", version="2.2.0")
    (finding,) = registry.evaluate(hw, case_name="mtcnn-rnet/int8")
    assert finding.status == "not-reproduced" and finding.evidence["affects"] is False
    blind = signature_env({}, stage="generate", version="2.2.0")
    (finding,) = registry.evaluate(blind, case_name="mtcnn-rnet/int8")
    assert finding.status == "unknown"
    # another case: only a match is a finding
    assert registry.evaluate(hw, case_name="mlperf-resnet8") == []
    (finding,) = registry.evaluate(sw, case_name="mlperf-resnet8")
    assert finding.status == "reproduced" and finding.evidence["reproducer"] is False
    # a case listing the bug is relevant too
    assert len(registry.evaluate(hw, case_name="x", case_bugs=["prelu"])) == 1


def test_stages_limit_where_a_bug_is_looked_for(tmp_path: Path) -> None:
    write_bug(tmp_path, GOOD.replace('status = "fixed"', 'status = "fixed"\nstages = ["generate"]'))
    registry = load_registry(tmp_path)
    env = signature_env({"software_ops": ["PRelu"]}, stage="validate-host", version="2.1.0")
    assert registry.evaluate(env, case_name="mtcnn-rnet/int8") == []
    bug = registry.get("prelu")
    assert bug is not None and bug.explains({**env, "stage": "generate"}, "2.1.0")
    assert not bug.explains(env, "2.2.0")


# -- the corpus's own registry ---------------------------------------------------------------

EXPECTED_IDS = {
    "act-far-above-liveness": [
        "n6-micro-conv2d-32f-7x7/devcloud", "n6-micro-conv2d-32f-7x7/cubemx",
        "n6-micro-conv2d-32f-7x7/aistudio", "mvs-cnn/int8",
    ],
    "tcn-uncorrelated-4.0.1": ["tcn-23x60"],
    "npu-hang-activ-conv": ["relu-dw7"],
    "dw-stride2-stall": ["dw-stride2"],
    "validate-generate-act-mismatch": ["conv2d-16f-3x3"],
    # findings of the recorded public runs (corpus/real), each with its reproducers
    "n6-conv1x1-activations-4.0.0": [
        "n6-micro-conv2d-1x1/devcloud", "n6-micro-conv2d-1x1/aistudio", "n6-micro-conv2d-1x1/cubemx",
    ],
    "n6-conv1x1-slower-4.0.0": [
        "n6-micro-conv2d-1x1/devcloud", "n6-micro-conv2d-1x1/aistudio", "n6-micro-conv2d-1x1/cubemx",
    ],
    "n6-conv7x7-activations-4.0.0": [
        "n6-micro-conv2d-32f-7x7/devcloud", "n6-micro-conv2d-32f-7x7/devcloud-ec",
        "n6-micro-conv2d-32f-7x7/aistudio", "n6-micro-conv2d-32f-7x7/cubemx",
    ],
    "n6-conv7x7-board-timeout-4.0.0": [
        "n6-micro-conv2d-32f-7x7/devcloud", "n6-micro-conv2d-32f-7x7/devcloud-ec",
        "n6-micro-conv2d-32f-7x7/aistudio", "n6-micro-conv2d-32f-7x7/cubemx",
    ],
    "n6-depthwise-weights-4.0.0": ["n6-micro-depthwise-3x3/devcloud", "n6-micro-depthwise-3x3/cubemx"],
}


def test_corpus_registry_loads_with_the_reported_bugs() -> None:
    registry = load_registry(CORPUS / "bugs")
    assert {b.id: list(b.reproducers) for b in registry} == EXPECTED_IDS
    tcn = registry.get("tcn-uncorrelated-4.0.1")
    assert tcn is not None and tcn.affects("4.0.1") and tcn.affects("3.0.0") is None
    stall = registry.get("dw-stride2-stall")  # the public notes pin 4.0.1-20581
    assert stall is not None and stall.affects("4.0.1-20581") and stall.affects("4.0.0") is None
    # no version is known free of it: unknown, never a guess
    act = registry.get("act-far-above-liveness")
    assert act is not None and act.affected is None and act.affects("2.2.0") is None


@pytest.mark.parametrize(
    ("bug_id", "env", "status"),
    [
        # the public 7x7 micro-benchmark: 1,323,008 B (2.2.0) over its floor of 12,320 B
        ("act-far-above-liveness", {"activations_ratio": 1_323_008 / 12_320}, "reproduced"),
        ("act-far-above-liveness", {"activations_ratio": 1.1}, "not-reproduced"),
        # the thread's cos 0.589 on target; MobileNetV2-224's correct 0.9975
        ("tcn-uncorrelated-4.0.1", {"val_cos": 0.589, "stage": "validate-target"}, "reproduced"),
        (
            "tcn-uncorrelated-4.0.1",
            {"val_cos": 0.997453, "stage": "validate-target"},
            "not-reproduced",
        ),
        (
            "npu-hang-activ-conv",
            {"diagnostics": ["LoadError"], "stage": "validate-target"},
            "reproduced",
        ),
        # validate's 78,112 B over the floor of 12,304 B (input + output, fused conv + mean)
        ("validate-generate-act-mismatch", {"activations_ratio": 78_112 / 12_304}, "reproduced"),
        # a correct fused plan at the floor (generate's 12,304 B) is not the bug
        (
            "validate-generate-act-mismatch",
            {"activations_ratio": 12_304 / 12_304},
            "not-reproduced",
        ),
        # the recorded figures of the findings' own evidence (corpus/real recordings)
        ("n6-conv1x1-activations-4.0.0",
         {"target": "stm32n6", "weights_bytes": 225, "activations_bytes": 143_360}, "reproduced"),
        ("n6-conv1x1-activations-4.0.0",
         {"target": "stm32n6", "weights_bytes": 225, "activations_bytes": 12_320}, "not-reproduced"),
        # BlazeFace 2.2.0 plans 540,672 B: a real network, not the one-layer evidence
        ("n6-conv1x1-activations-4.0.0",
         {"target": "stm32n6", "weights_bytes": 166_225, "activations_bytes": 540_672},
         "not-reproduced"),
        ("n6-depthwise-weights-4.0.0",
         {"target": "stm32n6", "weights_bytes": 129, "epochs_total": 1}, "reproduced"),
        ("n6-depthwise-weights-4.0.0",
         {"target": "stm32n6", "weights_bytes": 65, "epochs_total": 3}, "not-reproduced"),
        # the 1x1 conv's 225 B in 2 epochs is not the depthwise evidence
        ("n6-depthwise-weights-4.0.0",
         {"target": "stm32n6", "weights_bytes": 225, "epochs_total": 2}, "not-reproduced"),
        ("n6-conv7x7-board-timeout-4.0.0",
         {"weights_bytes": 4_833, "diagnostics": ["LoadError"]}, "reproduced"),
        ("n6-conv7x7-board-timeout-4.0.0", {"weights_bytes": 4_833, "diagnostics": []},
         "not-reproduced"),
    ],
)
def test_corpus_signatures_on_reported_figures(bug_id: str, env: dict, status: str) -> None:
    registry = load_registry(CORPUS / "bugs")
    bug = registry.get(bug_id)
    assert bug is not None
    env = {"stage": bug.stages[0] if bug.stages else "generate", **env}
    findings = [
        f for f in registry.evaluate(env, case_name=bug.reproducers[0]) if f.bug_id == bug_id
    ]
    assert [f.status for f in findings] == [status]


_DESIGN = re.compile(r"DESIGN\.md|design document|pytest-stedge DESIGN", re.IGNORECASE)


def test_every_corpus_bug_cites_a_public_source_a_reader_can_open() -> None:
    """Each bug and finding links at least one public page (an http(s) URL: a thread, an
    issue, a repository file at a commit); none cites the project's design document."""
    registry = load_registry(CORPUS / "bugs")
    assert len(registry) >= 8
    for bug in registry:
        assert bug.links, f"{bug.id}: no public source (links = [{{ title, url }}])"
        for title, url in bug.links:
            assert title.strip() and re.match(r"^https?://[^/\s]+\.[^/\s]+/\S+$", url), (bug.id, url)
        text = " ".join([bug.source, bug.notes, bug.path.read_text(encoding="utf-8")])
        assert not _DESIGN.search(text), f"{bug.id} cites the design document"
        # a GitHub link names a file at a commit or a thread, never only a repository's front page
        for _title, url in bug.links:
            if url.startswith("https://github.com/"):
                assert re.search(r"/(blob|tree)/[0-9a-f]{40}/|/(issues|pull|discussions)/\d+", url), url


def test_corpus_cases_and_registry_agree() -> None:
    from pytest_stedge.case.load import load_cases
    from pytest_stedge.case.scan import iter_case_files

    registry = load_registry(CORPUS / "bugs")
    names = []
    for case_toml in iter_case_files(CORPUS):
        if "bugs" in case_toml.parts:
            continue
        # the corpus ships its models: a case that does not load is a failure, never a skip
        for case in load_cases(case_toml, CORPUS):
            names.append(case.name)
            check_case_bugs(case.bugs, registry, case.path)
    assert missing_reproducers(registry, names) == []

"""The gate's verdict on one item: expectations, the baseline, known bugs, and the message.

Figures: the real 2.2.0 -> 4.0.1 MobileNetV2-224 pair on the N6 (real-cases
n6-mobilenetv2-224-onnx-irv: cos 0.997552 -> 0.997453, rmse 0.141914070 -> 0.144032702),
the real N6 activation figure 245,760 B (n6-mobilenetv2-qdq-3versions), and hand counts.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_stedge.bugs.registry import BugRegistry, load_bug
from pytest_stedge.case.model import Bound, Case
from pytest_stedge.verdict.bands import parse_metric_bands
from pytest_stedge.verdict.compare import ChangeKind
from pytest_stedge.verdict.gate import (
    Baseline,
    Verdict,
    explaining_bug,
    failure_message,
    judge,
    looks_fixed,
    xpass_marker,
)

SHA = "a" * 64


def _case(tmp_path: Path, *, expect: dict[str, tuple[Bound, ...]] | None = None,
          baseline: dict[str, str] | None = None, bugs: tuple[str, ...] = (),
          name: str = "cnn") -> Case:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"model")
    return Case(
        name=name, path=tmp_path / "case.toml", corpus_root=tmp_path, model=model,
        target="stm32n6", expect=expect or {}, baseline=baseline or {}, bugs=bugs,
    )


def _judge(case: Case, metrics: dict[str, float], base: Baseline | None = None, *,
           version: str | None = "4.0.1", stage: str = "generate", strict: bool = False,
           registry: BugRegistry | None = None, sha: str | None = SHA,
           metric_bands: dict[str, str] | None = None) -> Verdict:
    return judge(
        case=case, stage=stage, version=version, result={"schema": "stedge.result/1"},
        metrics=metrics, model_sha256=sha, baseline=base, default_band="0",
        strict_baseline=strict, registry=registry, metric_bands=metric_bands,
    )


def _base(case: Case, metrics: dict[str, float], *, version: str = "3.0.0",
          sha: str | None = SHA, options: str | None = None) -> Baseline:
    return Baseline(version=version, metrics=metrics, model_sha256=sha,
                    options_hash=case.options_hash() if options is None else options)


# -- expectations -----------------------------------------------------------------------------


def test_expectations_of_the_stage_decide_without_a_baseline(tmp_path: Path) -> None:
    case = _case(tmp_path, expect={"": (Bound("epochs_sw", max=0), Bound("val_cos", min=0.99))})
    verdict = _judge(case, {"epochs_sw": 2})
    # val_cos is a validation metric: generate never measures it, so it is not checked there
    assert [m.metric for m in verdict.misses] == ["epochs_sw"]
    assert verdict.failed and verdict.changes == [] and verdict.baseline_version is None
    host = _judge(case, {"epochs_sw": 0, "val_cos": 0.5}, stage="validate-host")
    assert [m.metric for m in host.misses] == ["val_cos"]
    # a validate run that states its epochs is checked on them too
    host = _judge(case, {"epochs_sw": 2, "val_cos": 0.5}, stage="validate-host")
    assert [m.metric for m in host.misses] == ["epochs_sw", "val_cos"]
    # and one that does not state them is not failed for it
    assert [m.metric for m in _judge(case, {"val_cos": 1.0}, stage="validate-host").misses] == []
    assert not _judge(case, {"epochs_sw": 0}).failed


# -- the baseline -------------------------------------------------------------------------------


def test_a_regression_beyond_the_band_fails_and_an_improvement_only_when_strict(
    tmp_path: Path,
) -> None:
    case = _case(tmp_path, baseline={"weights_bytes": "+1%"})
    base = _base(case, {"activations_bytes": 245_760, "weights_bytes": 1_000, "macc": 500})
    head = {"activations_bytes": 245_761, "weights_bytes": 1_010, "macc": 400}
    verdict = _judge(case, head, base)
    assert verdict.baseline_version == "3.0.0"
    kinds = {c.metric: c.kind for c in verdict.changes}
    # bytes are exact: one more byte regresses; weights +1.0 % is inside "+1%"
    assert kinds == {"activations_bytes": ChangeKind.REGRESSED,
                     "weights_bytes": ChangeKind.UNCHANGED, "macc": ChangeKind.IMPROVED}
    assert [c.metric for c in verdict.failing_changes] == ["activations_bytes"]
    strict = _judge(case, head, base, strict=True)
    assert [c.metric for c in strict.failing_changes] == ["activations_bytes", "macc"]


def test_newly_failing_gates_even_inside_the_band(tmp_path: Path) -> None:
    case = _case(tmp_path, expect={"": (Bound("epochs_sw", max=3),)}, baseline={"epochs_sw": "+50%"})
    verdict = _judge(case, {"epochs_sw": 4}, _base(case, {"epochs_sw": 3}))
    (change,) = verdict.failing_changes
    assert change.kind is ChangeKind.NEWLY_FAILING


def test_the_same_version_or_the_oracle_is_never_compared(tmp_path: Path) -> None:
    case = _case(tmp_path)
    base = _base(case, {"activations_bytes": 1}, version="4.0.1")
    same = _judge(case, {"activations_bytes": 9}, base)
    assert same.changes == [] and same.baseline_version is None and not same.failed
    oracle = _judge(case, {"activations_bytes": 9}, _base(case, {"activations_bytes": 1}),
                    version=None, stage="oracle")
    assert oracle.changes == [] and not oracle.failed


@pytest.mark.parametrize(
    ("base_sha", "head_sha", "options", "note"),
    [(None, SHA, None, "the model's hash is not recorded in 3.0.0"),
     (SHA, None, None, "the model's hash is not recorded in 4.0.1"),
     ("b" * 64, SHA, None, "model differs: sha256 bbbbbbbb… -> sha256 aaaaaaaa…"),
     (SHA, SHA, "other-options",
      "options differ (hash other-op -> {hash}; the options are not stated)")],
    ids=["base-model-unknown", "head-model-unknown", "other-model", "other-options"],
)
def test_another_model_or_options_is_never_a_regression(
    tmp_path: Path, base_sha: str | None, head_sha: str | None, options: str | None, note: str
) -> None:
    case = _case(tmp_path)
    base = _base(case, {"activations_bytes": 1_000}, sha=base_sha, options=options)
    verdict = _judge(case, {"activations_bytes": 9_000}, base, sha=head_sha)
    (change,) = verdict.changes
    assert change.kind is ChangeKind.NOT_COMPARABLE
    assert change.note == note.format(hash=case.options_hash()[:8])
    assert not verdict.failed


def test_noisy_validation_metrics_have_default_bands_and_counts_stay_exact(tmp_path: Path) -> None:
    case = _case(tmp_path)
    # the real 2.2.0 -> 4.0.1 move of one model: noise, not a regression
    base = _base(case, {"val_cos": 0.997552, "val_rmse": 0.141914070, "epochs_sw": 3})
    head = {"val_cos": 0.997453, "val_rmse": 0.144032702, "epochs_sw": 3}
    verdict = _judge(case, head, base, stage="validate-target")
    assert {c.metric: (c.kind, c.band) for c in verdict.changes} == {
        "val_cos": (ChangeKind.UNCHANGED, "+0.001"),
        "val_rmse": (ChangeKind.UNCHANGED, "+15%"),
        "epochs_sw": (ChangeKind.UNCHANGED, "0"),
    }
    # an accuracy collapse (cos 0.091 of a 4.0.1 TCN on the board) is far outside
    collapsed = _judge(case, {"val_cos": 0.091}, base, stage="validate-target")
    assert [(c.metric, c.kind) for c in collapsed.failing_changes] == [
        ("val_cos", ChangeKind.REGRESSED)
    ]
    # the user's own default wins over the built-in one; the case's band over both
    exact = _judge(case, head, base, stage="validate-target",
                   metric_bands=parse_metric_bands(["val_cos=0"]))
    assert [c.metric for c in exact.failing_changes] == ["val_cos"]
    banded = _case(tmp_path, baseline={"val_cos": "+0.5"})
    loose = _judge(banded, {"val_cos": 0.6}, _base(banded, {"val_cos": 0.997552}),
                   metric_bands=parse_metric_bands(["val_cos=0"]))
    assert loose.failing_changes == []


# -- the message --------------------------------------------------------------------------------


def test_failure_message_lists_misses_then_moves_and_says_the_hint_once(tmp_path: Path) -> None:
    case = _case(tmp_path, expect={"": (Bound("activations_bytes", max=2_100),)})
    base = _base(case, {"activations_bytes": 2_048, "epochs_sw": 4})
    verdict = _judge(case, {"activations_bytes": 2_254, "epochs_sw": 5}, base)
    text = failure_message("cnn generate[4.0.1]", verdict, update_hint=True)
    assert text.splitlines() == [
        "cnn generate[4.0.1]: 1 metric missed their expectations.",
        "To accept the measured values, rerun with --stedge-update.",
        "",
        "  metric             expected    measured  difference",
        # 2,254 - 2,100 = 154 B; 154 / 2,100 = 7.3 %
        "  activations_bytes  <= 2,100 B  2,254 B   +154 B (+7.3%)",
        "",
        "cnn generate[4.0.1]: 2 metric(s) moved beyond their band against 3.0.0.",
        "",
        "  metric             baseline  measured  delta          kind           band",
        # 2,048 -> 2,254: +206, +10.06 %; 4 -> 5: +25 %
        "  activations_bytes  2,048     2,254     +206 (+10.1%)  newly failing  0",
        "  epochs_sw          4         5         +1 (+25.0%)    regressed      0",
    ]
    # the summary names each metric once: the miss, then the moves not already missed
    assert verdict.summary_lines() == [
        "activations_bytes: expected <= 2,100 B, measured 2,254 B",
        "epochs_sw: regressed against 3.0.0: 4 -> 5 (band 0)",
    ]
    only_moves = _judge(_case(tmp_path), {"epochs_sw": 5}, _base(case, {"epochs_sw": 4}))
    quiet = failure_message("t", only_moves, update_hint=False)
    assert quiet.splitlines()[:2] == ["t: 1 metric(s) moved beyond their band against 3.0.0.", ""]
    hinted = failure_message("t", only_moves, update_hint=True)
    assert hinted.splitlines()[1] == "To accept the measured values, rerun with --stedge-update."


def test_infinite_snr_of_identical_outputs_does_not_break_the_message(tmp_path: Path) -> None:
    case = _case(tmp_path)
    # the tool prints snr=inf when the outputs are identical (real 4.0.0 Developer Cloud logs)
    lost = _judge(case, {"val_snr": 60.0}, _base(case, {"val_snr": float("inf")}),
                  stage="validate-host")
    (change,) = lost.failing_changes
    assert change.kind is ChangeKind.REGRESSED and change.delta_pct is None
    text = failure_message("t", lost, update_hint=False)
    assert text.splitlines()[-1] == "  val_snr  inf       60        -inf   regressed  +1"
    assert lost.summary_lines() == ["val_snr: regressed against 3.0.0: inf -> 60 (band +1)"]
    gained = _judge(case, {"val_snr": float("inf")}, _base(case, {"val_snr": 60.0}),
                    stage="validate-host", strict=True)
    assert failure_message("t", gained, update_hint=False).splitlines()[-1] == (
        "  val_snr  60        inf       +inf   improved  +1"
    )
    steady = _judge(case, {"val_snr": float("inf")}, _base(case, {"val_snr": float("inf")}),
                    stage="validate-host")
    assert [c.kind for c in steady.changes] == [ChangeKind.UNCHANGED]


def test_baseline_to_dict_is_plain_data(tmp_path: Path) -> None:
    base = Baseline("3.0.0", {"macc": 1.0}, SHA, "h", run_id=7)
    assert base.to_dict() == {"version": "3.0.0", "metrics": {"macc": 1.0},
                              "model_sha256": SHA, "options_hash": "h", "run_id": 7,
                              "options": None, "placement": None}
    # the baseline's software/hybrid epochs per operator travel to workers as plain data
    base.placement = {"Transpose": {"sw": 22, "hybrid": 0}}
    assert Baseline(**base.to_dict()) == base


# -- known bugs -----------------------------------------------------------------------------------

BUG = """\
id = "{id}"
title = "extra SW epochs"
source = "https://example.invalid/{id}"
affected = "{affected}"
status = "open"
reproducers = {reproducers}
signature = "epochs_sw > {threshold}"
"""


def _registry(tmp_path: Path, **bugs: tuple[str, list[str]] | tuple[str, list[str], int]) -> BugRegistry:
    folder = tmp_path / "bugs"
    folder.mkdir(exist_ok=True)
    registry = BugRegistry(folder=folder)
    for bug_id, spec in bugs.items():
        affected, reproducers = spec[0], spec[1]
        threshold = spec[2] if len(spec) > 2 else 0  # type: ignore[misc]
        path = folder / f"{bug_id}.toml"
        path.write_text(textwrap.dedent(BUG).format(
            id=bug_id, affected=affected, reproducers=str(reproducers).replace("'", '"'),
            threshold=threshold))
        registry.bugs[bug_id] = load_bug(path)
    return registry


def test_a_failing_item_matching_an_affecting_bug_is_explained(tmp_path: Path) -> None:
    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", ["cnn"]), "later": (">=9", ["x"]),
                                      "a-quiet": ("==4.0.1", ["cnn"], 100)})
    case = _case(tmp_path, expect={"": (Bound("epochs_sw", max=0),)})
    verdict = _judge(case, {"epochs_sw": 2}, registry=registry)
    # in id order: a bug of this case that does not show, one that shows but affects only
    # later versions, then the one that explains the failure
    assert [(f["bug_id"], f["status"]) for f in verdict.findings] == [
        ("a-quiet", "not-reproduced"), ("later", "reproduced"), ("sw-bug", "reproduced")]
    bug = explaining_bug(registry, verdict, "4.0.1")
    assert bug is not None and bug.id == "sw-bug"  # "later" does not affect 4.0.1
    assert explaining_bug(registry, verdict, "4.0.0") is None  # 4.0.0: nobody knows
    assert explaining_bug(registry, verdict, None) is None
    assert explaining_bug(None, verdict, "4.0.1") is None
    gone = BugRegistry(folder=tmp_path)  # the finding names a bug the registry lost
    assert explaining_bug(gone, verdict, "4.0.1") is None


def test_no_findings_on_the_oracle_or_without_bugs(tmp_path: Path) -> None:
    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", ["cnn"])})
    case = _case(tmp_path)
    assert _judge(case, {"epochs_sw": 2}, registry=registry, stage="oracle",
                  version=None).findings == []
    assert _judge(case, {"epochs_sw": 2}, registry=BugRegistry()).findings == []
    assert _judge(case, {"epochs_sw": 2}, registry=None).findings == []


@pytest.mark.parametrize(
    ("reproducers", "listed", "fixed"),
    [
        (["cnn"], (), True),  # a reproducer-only case
        (["other"], ("sw-bug",), True),  # a case that lists the bug, not its reproducer
        (["cnn"], ("sw-bug",), True),
        (["other"], (), False),  # an unrelated case says nothing about the bug
    ],
    ids=["reproducer-only", "listed-only", "both", "unrelated"],
)
def test_bug_looks_fixed_for_every_case_tied_to_it(
    tmp_path: Path, reproducers: list[str], listed: tuple[str, ...], fixed: bool
) -> None:
    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", reproducers)})
    case = _case(tmp_path, bugs=listed)
    verdict = _judge(case, {"epochs_sw": 0}, registry=registry)
    bug = looks_fixed(registry, case, verdict, "4.0.1")
    assert (bug is not None and bug.id == "sw-bug") is fixed
    # a version the registry does not list as affected is not "fixed-looking"
    assert looks_fixed(registry, case, verdict, "4.0.2") is None
    assert looks_fixed(registry, case, verdict, None) is None
    assert looks_fixed(None, case, verdict, "4.0.1") is None


def test_looks_fixed_reads_past_findings_that_do_not_qualify(tmp_path: Path) -> None:
    registry = _registry(tmp_path, **{
        "a-shows": ("==4.0.1", ["cnn"], 0),  # reproduced: not fixed-looking
        "b-other-version": ("==3.0.0", ["cnn"], 100),  # not shown, but 4.0.1 is not affected
        "c-fixed": ("==4.0.1", ["cnn"], 100),  # not shown and 4.0.1 is affected
    })
    case = _case(tmp_path)
    verdict = _judge(case, {"epochs_sw": 1}, registry=registry)
    assert [f["bug_id"] for f in verdict.findings] == ["a-shows", "b-other-version", "c-fixed"]
    bug = looks_fixed(registry, case, verdict, "4.0.1")
    assert bug is not None and bug.id == "c-fixed"


def test_a_bug_still_showing_does_not_look_fixed(tmp_path: Path) -> None:
    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", ["cnn"])})
    case = _case(tmp_path)
    verdict = _judge(case, {"epochs_sw": 1}, registry=registry)
    assert looks_fixed(registry, case, verdict, "4.0.1") is None
    gone = BugRegistry(folder=tmp_path)
    assert looks_fixed(gone, case, _judge(case, {"epochs_sw": 0}, registry=registry), "4.0.1") is None


def test_the_xpass_marker_is_strict_and_says_what_to_update(tmp_path: Path) -> None:
    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", ["cnn"])})
    bug = registry.get("sw-bug")
    assert bug is not None
    mark = xpass_marker(bug, "4.0.1").mark
    assert mark.name == "xfail" and mark.kwargs["strict"] is True
    assert mark.kwargs["reason"] == (
        "bug sw-bug looks fixed in 4.0.1: its signature `epochs_sw > 0` no longer matches, "
        "yet corpus/bugs/sw-bug.toml lists 4.0.1 as affected; update the registry"
    )


def test_a_known_bug_is_reported_xfailed_with_its_id_and_source(tmp_path: Path) -> None:
    from pytest_stedge.verdict.gate import xfail_known_bug

    registry = _registry(tmp_path, **{"sw-bug": ("==4.0.1", ["cnn"])})
    bug = registry.get("sw-bug")
    assert bug is not None
    with pytest.raises(pytest.xfail.Exception) as info:
        xfail_known_bug(bug, "4.0.1", "cnn generate[4.0.1]: 1 metric missed")
    assert str(info.value) == (
        "known bug sw-bug in 4.0.1: extra SW epochs [https://example.invalid/sw-bug]; "
        "cnn generate[4.0.1]: 1 metric missed"
    )

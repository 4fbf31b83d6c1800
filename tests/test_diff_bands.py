"""Default bands of the noisy metrics, the HW/EC split in ``stedge diff``, infinities.

The validation figures are the real X-cross rows of one MobileNetV2-224 int8 model on the
N6 with 2.2.0 and 4.0.1 (real-cases n6-mobilenetv2-224-onnx-irv: rev-B 2.2.0 CubeMX log,
rev-A 4.0.1 AI Studio log); the test reads them from the logs when ../shared is there.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import validate_run

from pytest_stedge.cli import main as cli
from pytest_stedge.store.database import ItemRow, Store
from pytest_stedge.verdict.bands import (
    NOISY_BANDS,
    BandError,
    band_for,
    beyond_band,
    parse_band,
    parse_metric_bands,
)
from pytest_stedge.verdict.compare import ChangeKind, compare_results

# X-cross #1 of the two logs, as printed
REAL_22 = {"val_cos": 0.997552, "val_rmse": 0.141914070, "val_mae": 0.111658059,
           "val_l2r": 0.070281632, "val_nse": 0.994966}
REAL_401 = {"val_cos": 0.997453, "val_rmse": 0.144032702, "val_mae": 0.111400001,
            "val_l2r": 0.071507879, "val_nse": 0.994808}
IRV = Path(__file__).resolve().parents[2] / "shared" / "real-cases" / "n6-mobilenetv2-224-onnx-irv"


def test_the_figures_are_the_ones_the_real_logs_print() -> None:
    if not IRV.is_dir():
        pytest.skip(f"real cases not available: {IRV} is absent")
    from pytest_stedge.result import flat_metrics

    # each log holds a generate and a validate: the metrics are the validate run's
    old = flat_metrics(validate_run(IRV / "rev-B-ir9" / "2.2.0-cubemx" / "mobilenet_v2_224.txt"))
    new = flat_metrics(validate_run(IRV / "rev-A-ir10" / "4.0.1-aistudio" / "mobilenet_v2_224.txt"))
    assert {k: old[k] for k in REAL_22} == pytest.approx(REAL_22, abs=1e-9)
    assert {k: new[k] for k in REAL_401} == pytest.approx(REAL_401, abs=1e-9)


def _changes(old: dict[str, float], new: dict[str, float], **kw: object) -> dict[str, ChangeKind]:
    changes = compare_results("m", "validate-target", old, new, comparable=True, bands={},
                              default_band="0", **kw)  # type: ignore[arg-type]
    return {c.metric: c.kind for c in changes}


def test_the_real_version_pair_is_unchanged_with_the_default_bands() -> None:
    assert set(_changes(REAL_22, REAL_401).values()) == {ChangeKind.UNCHANGED}
    # with every band exact, as before, four of the five were a "regression"
    exact = _changes(REAL_22, REAL_401, metric_bands={})
    assert exact == {"val_cos": ChangeKind.REGRESSED, "val_rmse": ChangeKind.REGRESSED,
                     "val_l2r": ChangeKind.REGRESSED, "val_nse": ChangeKind.REGRESSED,
                     "val_mae": ChangeKind.IMPROVED}


@pytest.mark.parametrize(
    ("metric", "old", "inside", "outside"),
    [
        ("val_cos", 0.997552, 0.996553, 0.996551),  # +-0.001 absolute
        ("val_nse", 0.994966, 0.992967, 0.992965),  # +-0.002 absolute
        ("val_snr", 22.5, 21.5, 21.49),  # +-1 dB
        ("val_rmse", 0.2, 0.2299, 0.2301),  # +-15 % of 0.2 = 0.03
        ("val_mae", 0.2, 0.2299, 0.2301),
        ("val_l2r", 0.2, 0.2299, 0.2301),
        ("val_acc", 90.0, 80.0, 79.9),  # 10 points: one sample of the default ten
        ("duration_ms", 20.0, 20.99, 21.01),  # +-5 %
    ],
)
def test_each_noisy_band_at_its_edge(metric: str, old: float, inside: float, outside: float) -> None:
    band = parse_band(NOISY_BANDS[metric])
    assert not beyond_band(old, inside, band)
    assert beyond_band(old, outside, band)


def test_byte_macc_and_epoch_counts_stay_exact() -> None:
    for metric in ("activations_bytes", "weights_bytes", "activations_external_bytes",
                   "io_in_bytes", "io_out_bytes", "macc", "epochs_total", "epochs_hw",
                   "epochs_ec", "epochs_sw", "epochs_hybrid", "activations_ratio"):
        assert metric not in NOISY_BANDS
        assert band_for(metric, {}, "0") == "0"
    # 245,760 B (real N6 activations) to one byte more is a regression
    kinds = _changes({"activations_bytes": 245_760}, {"activations_bytes": 245_761})
    assert kinds == {"activations_bytes": ChangeKind.REGRESSED}


def test_band_precedence_case_then_user_default_then_builtin_then_session() -> None:
    assert band_for("val_cos", {"val_cos": "+0.5"}, "0", {"val_cos": "0"}) == "+0.5"
    assert band_for("val_cos", {}, "+9%", {"val_cos": "0"}) == "0"
    assert band_for("val_cos", {}, "+9%") == "+0.001"
    assert band_for("macc", {}, "+9%") == "+9%"
    assert band_for("macc", {"val_cos": "+1"}, "+9%", {"val_cos": "0"}) == "+9%"


def test_parse_metric_bands_overrides_and_refuses_bad_entries() -> None:
    bands = parse_metric_bands(["val_cos=0", "  # a comment", "", " macc = +3% "])
    assert bands["val_cos"] == "0" and bands["macc"] == "+3%"
    assert bands["val_snr"] == NOISY_BANDS["val_snr"]  # the others keep their own
    assert parse_metric_bands([]) == NOISY_BANDS
    for entry, match in (("val_cos", "METRIC=BAND"), ("cosine=+1", "METRIC=BAND"),
                         ("val_cos=-1", "band '-1'")):
        with pytest.raises(BandError, match=match):
            parse_metric_bands([entry])


def test_infinite_figures_move_only_when_they_change() -> None:
    inf = math.inf
    wide = parse_band("+1000%")
    assert beyond_band(inf, 60.0, wide) and beyond_band(60.0, inf, wide)
    assert not beyond_band(inf, inf, parse_band("0"))
    kinds = _changes({"val_snr": inf}, {"val_snr": 60.0})
    assert kinds == {"val_snr": ChangeKind.REGRESSED}
    (change,) = compare_results("m", "v", {"val_snr": 60.0}, {"val_snr": inf}, comparable=True,
                                bands={}, default_band="0")
    assert change.kind is ChangeKind.IMPROVED and change.delta == inf and change.delta_pct is None
    (zero,) = compare_results("m", "v", {"epochs_sw": 0.0}, {"epochs_sw": 2.0}, comparable=True,
                              bands={}, default_band="0")
    assert zero.delta == 2 and zero.delta_pct is None  # no percentage of zero
    (some,) = compare_results("m", "v", {"epochs_sw": 4.0}, {"epochs_sw": 5.0}, comparable=True,
                              bands={}, default_band="0")
    assert some.delta_pct == 25.0


# -- stedge diff --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _away_from_the_corpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def _store(path: Path, base: dict[str, float], head: dict[str, float]) -> Path:
    with Store.open(path) as store:
        for version, metrics in (("2.2.0", base), ("4.0.1", head)):
            run = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run, [ItemRow(
                nodeid=f"corpus/mnv2::validate-target[{version}]", case_name="mnv2",
                stage="validate-target", version=version, outcome="passed", model_sha256="m",
                options_hash="o", metrics=metrics)])
    return path


def _diff(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = cli.main(argv)
    return status, capsys.readouterr().out


EPOCHS_22 = {"epochs_total": 58, "epochs_hw": 55, "epochs_ec": 0, "epochs_sw": 3}
EPOCHS_401 = {"epochs_total": 58, "epochs_hw": 40, "epochs_ec": 15, "epochs_sw": 3}


def test_stedge_diff_of_the_real_pair_exits_0_and_shows_the_hw_ec_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path / "s.duckdb", {**REAL_22, **EPOCHS_22}, {**REAL_401, **EPOCHS_401})
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db)], capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "stedge diff 2.2.0 -> 4.0.1: 2 changed, 7 unchanged"
    assert "  epochs_hw   55   40  -15 (-27.3%)  changed  0" in lines
    assert "  epochs_ec    0   15           +15  changed  0" in lines
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db), "--all"], capsys)
    rows = [line.split() for line in out.splitlines()]
    assert ["val_cos", "0.997552", "0.997453", "-9.9e-05", "(-0.0%)", "unchanged", "+0.001"] in rows
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db), "--json"], capsys)
    doc = json.loads(out)
    assert doc["counts"]["changed"] == 2 and doc["regressed"] is False


def test_stedge_diff_band_per_metric_and_from_the_ini(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path / "s.duckdb", REAL_22, REAL_401)
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db), "--band", "val_cos=0"], capsys)
    assert status == 1
    rows = [line.split() for line in out.splitlines()]
    assert ["val_cos", "0.997552", "0.997453", "-9.9e-05", "(-0.0%)", "REGRESSED", "0"] in rows
    (tmp_path / "pytest.ini").write_text("[pytest]\nstedge_metric_bands =\n    val_rmse=0\n")
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db)], capsys)
    assert status == 1 and "val_rmse" in out and "val_cos" not in out
    # a general --band leaves the validation metrics their own bands
    status, out = _diff(["diff", "2.2.0", "4.0.1", "--db", str(db), "--band", "+50%",
                         "--band", "val_rmse=+2%"], capsys)
    assert status == 0
    status = cli.main(["diff", "2.2.0", "4.0.1", "--db", str(db), "--band", "val_cos=abc"])
    assert status == 2
    assert "stedge: error: band 'abc': expected a band such as" in capsys.readouterr().err


def test_float_noise_below_one_part_in_1e12_is_not_a_change() -> None:
    # another version printing more digits of the same figure is not a move
    exact = parse_band("0")
    assert not beyond_band(0.997453, 0.997453 * (1 + 0.5e-12), exact)
    assert beyond_band(0.997453, 0.997453 * (1 + 1.5e-12), exact)
    # the noise allowance is relative to the figure, never below 1e-12 absolute
    assert not beyond_band(1e6, 1e6 + 0.5e-6, exact)
    assert beyond_band(1e6, 1e6 + 1.5e-6, exact)
    assert not beyond_band(0.0, 0.5e-12, exact) and beyond_band(0.0, 1.5e-12, exact)
    assert not beyond_band(0.0, 1e-12, exact)  # at the allowance exactly: still within
    assert not beyond_band(100.0, 110.0, parse_band("+10"))  # a band is inclusive


def test_bands_from_numbers_and_how_they_print() -> None:
    from pytest_stedge.verdict.bands import Band

    # a TOML band written as a number: 1024 is absolute, like "+1024"
    assert parse_band(1024) == Band(1024.0, False, "1024")
    assert parse_band(0.5).value == 0.5 and not parse_band(0.5).relative
    for bad, shown in ((True, "band True:"), (None, "band None:"), ([3], "band [3]:")):
        with pytest.raises(BandError, match="expected a band such as") as info:
            parse_band(bad)  # type: ignore[arg-type]
        assert shown in str(info.value)
    assert str(parse_band(" +3% ")) == "+3%"  # as written, trimmed
    assert str(Band(3.0, True)) == "+3%" and str(Band(1024.0, False)) == "+1024"
    assert str(Band(0.5, True, "")) == "+0.5%"


def test_a_side_not_measured_is_never_beyond_a_band_and_huge_figures_keep_their_percent() -> None:
    (missing,) = compare_results("m", "v", {"macc": 10.0}, {}, comparable=True, bands={},
                                 default_band="0")
    assert missing.kind is ChangeKind.NOT_COMPARABLE and missing.beyond_band is False
    assert missing.note == "not measured in head" and missing.delta is None
    (huge,) = compare_results("m", "v", {"macc": 1e300}, {"macc": 2e300}, comparable=True,
                              bands={}, default_band="0")
    assert huge.delta_pct == pytest.approx(100.0) and huge.beyond_band is True


def test_diff_store_refuses_a_bad_default_band_even_when_no_metric_would_read_it(
    tmp_path: Path,
) -> None:
    from pytest_stedge.verdict.store_diff import diff_store

    db = _store(tmp_path / "s.duckdb", REAL_22, REAL_401)  # only banded validation metrics
    with Store.open(db, create=False) as store:
        with pytest.raises(BandError, match="band 'abc'"):
            diff_store(store, "2.2.0", "4.0.1", default_band="abc")
        assert diff_store(store, "2.2.0", "4.0.1", default_band="0").counts()["unchanged"] == 5


def test_an_unknown_model_or_options_identity_says_so(tmp_path: Path) -> None:
    from pytest_stedge.verdict.store_diff import diff_store

    path = tmp_path / "u.duckdb"
    with Store.open(path) as store:
        for version, sha, opts in (("2.2.0", None, "o"), ("4.0.1", "m", None)):
            run = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run, [ItemRow(
                nodeid=f"corpus/c::generate[{version}]", case_name="c", stage="generate",
                version=version, outcome="passed", model_sha256=sha, options_hash=opts,
                metrics={"macc": 1.0 if version == "2.2.0" else 9.0})])
        (change,) = diff_store(store, "2.2.0", "4.0.1").changes
    assert change.kind is ChangeKind.NOT_COMPARABLE
    assert change.note == ("the model's hash is not recorded in 2.2.0; "
                           "the options are not recorded in 4.0.1")


def test_changes_for_picks_kinds_in_listing_order() -> None:
    from pytest_stedge.verdict.compare import DiffReport, changes_for

    changes = compare_results("m", "v", {"macc": 1.0, "epochs_sw": 1.0, "weights_bytes": 5.0},
                              {"macc": 2.0, "epochs_sw": 0.0, "weights_bytes": 5.0},
                              comparable=True, bands={}, default_band="0")
    report = DiffReport("a", "b", changes)
    picked = changes_for(report, [ChangeKind.IMPROVED, ChangeKind.REGRESSED])
    assert [(c.metric, c.kind) for c in picked] == [
        ("macc", ChangeKind.REGRESSED), ("epochs_sw", ChangeKind.IMPROVED)]
    assert changes_for(report, []) == []

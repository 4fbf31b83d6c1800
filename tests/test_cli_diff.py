"""``stedge diff``: exit status, listing order, --json, bands from the corpus, bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_stedge.cli import main as cli
from pytest_stedge.store.database import ItemRow, Store

BASE_METRICS = {"activations_bytes": 2_457_600.0, "epochs_sw": 1.0, "weights_bytes": 50_000.0}


@pytest.fixture(autouse=True)
def _diff_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # register the command whether or not cli.py lists it yet; run away from ./corpus
    if "pytest_stedge.cli.diff" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(
            cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "pytest_stedge.cli.diff")
        )
    monkeypatch.chdir(tmp_path)


def fill(
    path: Path,
    head: dict[str, float],
    *,
    case: str = "mvs-cnn/int8",
    other: dict[str, float] | None = None,
) -> Path:
    with Store.open(path) as store:
        for version, metrics in (("3.0.0", BASE_METRICS), ("4.0.1", head)):
            run = store.begin_run(argv=["pytest"], versions=[version])
            rows = [
                ItemRow(
                    nodeid=f"corpus/{case}::generate[{version}]",
                    case_name=case,
                    stage="generate",
                    version=version,
                    outcome="passed",
                    model_sha256="m",
                    options_hash="o",
                    metrics=metrics,
                )
            ]
            if other is not None:
                rows.append(
                    ItemRow(
                        nodeid=f"corpus/aaa::generate[{version}]",
                        case_name="aaa",
                        stage="generate",
                        version=version,
                        outcome="passed",
                        model_sha256="m",
                        options_hash="o",
                        metrics=other if version == "4.0.1" else BASE_METRICS,
                    )
                )
            store.add_items(run, rows)
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_regression_exits_1_and_is_listed_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worse = {**BASE_METRICS, "activations_bytes": 2_703_360.0, "epochs_sw": 2.0}
    # "aaa" sorts first but only improved: the regressed case must still come first
    better = {**BASE_METRICS, "weights_bytes": 40_000.0}
    db = fill(tmp_path / "r.duckdb", worse, other=better)
    status, out, _ = run(["diff", "3.0.0", "4.0.1", "--db", str(db)], capsys)
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == "stedge diff 3.0.0 -> 4.0.1: 2 regressed, 1 improved, 3 unchanged"
    assert out.index("mvs-cnn/int8") < out.index("aaa")
    case_block = out[out.index("mvs-cnn/int8") : out.index("aaa")]
    assert "activations_bytes" in case_block and "+245,760 (+10.0%)" in case_block
    assert "epochs_sw" in case_block and "REGRESSED" in case_block
    assert "40,000" in out and "improved" in out


def test_no_regression_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    better = {**BASE_METRICS, "activations_bytes": 2_000_000.0}
    db = fill(tmp_path / "r.duckdb", better)
    status, out, _ = run(["diff", "3.0.0", "4.0.1", "--db", str(db)], capsys)
    assert status == 0
    assert "1 improved" in out and "REGRESSED" not in out


def test_band_option_absorbs_small_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fill(tmp_path / "r.duckdb", {**BASE_METRICS, "activations_bytes": 2_500_000.0})
    assert run(["diff", "3.0.0", "4.0.1", "--db", str(db)], capsys)[0] == 1
    assert run(["diff", "3.0.0", "4.0.1", "--db", str(db), "--band", "+2%"], capsys)[0] == 0


def test_bad_band_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = fill(tmp_path / "r.duckdb", BASE_METRICS)
    status, _, err = run(["diff", "3.0.0", "4.0.1", "--db", str(db), "--band=-3%"], capsys)
    assert status == 2 and "'-3%'" in err


def test_missing_version_exits_2_listing_stored_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fill(tmp_path / "r.duckdb", BASE_METRICS)
    status, out, err = run(["diff", "2.2.0", "4.0.1", "--db", str(db)], capsys)
    assert status == 2 and out == ""
    assert "2.2.0" in err and "versions with results: 3.0.0, 4.0.1" in err


def test_missing_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(["diff", "1", "2", "--db", str(tmp_path / "none.duckdb")], capsys)
    assert status == 2 and "no store" in err


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = fill(tmp_path / "r.duckdb", {**BASE_METRICS, "epochs_sw": 3.0})
    status, out, _ = run(["diff", "3.0.0", "4.0.1", "--db", str(db), "--json"], capsys)
    assert status == 1
    doc = json.loads(out)
    assert set(doc) == {"base", "head", "regressed", "counts", "changes", "only_base", "only_head",
                        "placement_moves"}
    assert doc["placement_moves"] == []  # no epoch tables in these results: nothing moved
    assert (doc["base"], doc["head"], doc["regressed"]) == ("3.0.0", "4.0.1", True)
    assert doc["counts"]["regressed"] == 1 and doc["counts"]["unchanged"] == 2
    first = doc["changes"][0]
    assert first["kind"] == "regressed" and first["metric"] == "epochs_sw"
    assert {
        "case_name",
        "stage",
        "old",
        "new",
        "delta",
        "delta_pct",
        "band",
        "beyond_band",
        "unit",
        "direction",
    } <= set(first)
    assert (first["old"], first["new"], first["delta"]) == (1.0, 3.0, 2.0)


def write_corpus(root: Path, band: str, expect: str = "") -> Path:
    case = root / "corpus" / "mvs-cnn"
    case.mkdir(parents=True)
    (case / "model_int8.onnx").write_bytes(b"not read by the diff")
    (case / "case.toml").write_text(
        textwrap.dedent(f"""\
        model = "model_int8.onnx"
        target = "stm32n6"
        [variants.int8]
        [variants.int8.baseline]
        activations_bytes = "{band}"
        {expect}
        """),
        encoding="utf-8",
    )
    return root / "corpus"


def test_case_baseline_bands_from_the_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fill(tmp_path / "r.duckdb", {**BASE_METRICS, "activations_bytes": 2_703_360.0})
    corpus = write_corpus(tmp_path, "+12%")
    status, out, _ = run(
        ["diff", "3.0.0", "4.0.1", "--db", str(db), "--corpus", str(corpus)], capsys
    )
    assert status == 0, out
    # ./corpus is the default
    assert run(["diff", "3.0.0", "4.0.1", "--db", str(db)], capsys)[0] == 0


def test_newly_failing_expectation_from_the_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fill(tmp_path / "r.duckdb", {**BASE_METRICS, "activations_bytes": 2_460_000.0})
    corpus = write_corpus(
        tmp_path, "+5%", "[variants.int8.expect]\nactivations_bytes = { max = 2_458_000 }"
    )
    status, out, _ = run(
        ["diff", "3.0.0", "4.0.1", "--db", str(db), "--corpus", str(corpus)], capsys
    )
    assert status == 1
    assert "newly failing" in out


def test_html_page_written_when_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fill(tmp_path / "r.duckdb", {**BASE_METRICS, "epochs_sw": 2.0})
    page = tmp_path / "d.html"
    status, out, err = run(
        ["diff", "3.0.0", "4.0.1", "--db", str(db), "--html", str(page), "--json"], capsys
    )
    assert status == 1 and page.is_file() and "mvs-cnn/int8" in page.read_text()
    assert json.loads(out)["regressed"] is True and str(page) in err

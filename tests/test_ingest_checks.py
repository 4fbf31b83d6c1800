"""`stedge ingest` on real tool outputs: checked against the case (model MD5, version
banner), kept as history, and visible at once to runs, diff, report and the dashboard;
validate-target recordings replay without a board.

The hashes below come from ../shared/real-cases SOURCE.txt (the MD5 of each committed
model file, equal to the model_hash its logs print), not from our code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store

TCN_MD5 = "e3db1723d9713e7e4c6d9cd91e3d66db"  # SOURCE.txt: tcn/model_npu_int8.onnx
CONV_MD5 = "5dcb483041d313e5ae021646dafb5b48"  # SOURCE.txt: baseline_conv2d_16f_3x3_int8.tflite


@pytest.fixture
def real(shared_dir: Path) -> Path:
    return shared_dir / "real-cases"


def _corpus(tmp_path: Path, name: str, model: Path, stages: str = '["generate"]') -> Path:
    corpus = tmp_path / "corpus"
    folder = corpus / name
    folder.mkdir(parents=True)
    shutil.copy(model, folder / model.name)
    (folder / "case.toml").write_text(
        f'model = "{model.name}"\ntarget = "stm32n6"\nstages = {stages}\noracle = false\n'
    )
    return corpus


def _ingest(*args: str) -> int:
    return main(["ingest", *args])


def test_a_real_pair_is_stored_as_a_recorded_run(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tcn = real / "n6-packetqc-tcn-qwen2" / "tcn"
    corpus = _corpus(tmp_path, "tcn", tcn / "model_npu_int8.onnx")
    db = tmp_path / "db.duckdb"
    # the folder holds an analyze console and a generate: run 2 is the generate
    assert _ingest(str(tcn / "4.0.0"), "--version", "4.0.0", "--case", "tcn", "--run", "2",
                   "--corpus", str(corpus), "--db", str(db)) == 0
    out = capsys.readouterr().out
    assert "recorded as run 1" in out
    assert main(["runs", "--db", str(db), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"], r["versions"], r["items"]) for r in runs] == [
        (1, "recorded", ["4.0.0"], 1)
    ]
    with Store.open(db, read_only=True) as store:
        assert store.versions() == ["4.0.0"]
        item = store.latest_item("tcn", "generate", "4.0.0")
    assert item is not None and item["recorded"] is True
    # report figures of the real tcn generate report (SOURCE.txt / INDEX.md: 492,504 B
    # weights, 23,936 B activations)
    assert item["metrics"]["weights_bytes"] == 492_504
    assert item["metrics"]["activations_bytes"] == 23_936


def test_a_model_hash_mismatch_is_refused_naming_both_hashes(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    make_conv_model((corpus / "cnn").mkdir(parents=True) or corpus / "cnn" / "model.onnx")
    (corpus / "cnn" / "case.toml").write_text('model = "model.onnx"\ntarget = "stm32n6"\n')
    import hashlib

    ours = hashlib.md5((corpus / "cnn" / "model.onnx").read_bytes()).hexdigest()
    db = tmp_path / "db.duckdb"
    tcn = real / "n6-packetqc-tcn-qwen2" / "tcn" / "4.0.0"
    args = [str(tcn), "--version", "4.0.0", "--case", "cnn", "--run", "2", "--corpus", str(corpus),
            "--db", str(db)]
    assert _ingest(*args) == 2
    err = capsys.readouterr().err
    assert f"MD5 0x{TCN_MD5}" in err and f"MD5 0x{ours}" in err and "--force" in err
    assert not db.exists()
    assert _ingest(*args, "--force") == 0
    assert "marked not comparable" in capsys.readouterr().out
    with Store.open(db, read_only=True) as store:
        (rec,) = store.recordings()
        item = store.latest_item("cnn", "generate", "4.0.0")
    assert rec["comparable"] is False and TCN_MD5 in rec["note"]
    assert item is not None and item["model_sha256"] is None  # never compared


def test_a_version_banner_mismatch_and_latest_are_refused(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tcn = real / "n6-packetqc-tcn-qwen2" / "tcn"
    corpus = _corpus(tmp_path, "tcn", tcn / "model_npu_int8.onnx")
    db = tmp_path / "db.duckdb"
    base = [str(tcn / "4.0.0"), "--case", "tcn", "--run", "2", "--corpus", str(corpus),
            "--db", str(db)]
    assert _ingest(*base, "--version", "4.0.1") == 2
    err = capsys.readouterr().err
    assert "the outputs say stedgeai 4.0.0, --version says 4.0.1" in err
    assert _ingest(*base, "--version", "latest") == 2
    assert "'latest'" in capsys.readouterr().err
    assert not db.exists()


def test_a_second_ingest_needs_replace_and_history_is_kept(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tcn = real / "n6-packetqc-tcn-qwen2" / "tcn"
    corpus = _corpus(tmp_path, "tcn", tcn / "model_npu_int8.onnx")
    db = tmp_path / "db.duckdb"
    args = [str(tcn / "4.0.0"), "--version", "4.0.0", "--case", "tcn", "--run", "2",
            "--corpus", str(corpus), "--db", str(db)]
    assert _ingest(*args) == 0
    assert _ingest(*args) == 2
    err = capsys.readouterr().err
    assert "already holds a recording of tcn generate for 4.0.0" in err and "--replace" in err
    with Store.open(db, read_only=True) as store:
        assert len(store.list_runs()) == 1  # the refused ingest left no run
    assert _ingest(*args, "--replace") == 0
    with Store.open(db, read_only=True) as store:
        runs = store.list_runs()
        assert [r["status"] for r in runs] == ["recorded", "recorded"]
        (rec,) = store.recordings()
    assert rec["run_id"] == 2


def test_two_ingested_versions_diff_report_and_dashboard_at_once(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = real / "n6-micro-convs-4flows" / "conv2d_16f_3x3"
    corpus = _corpus(tmp_path, "conv", conv / "baseline_conv2d_16f_3x3_int8.tflite",
                     '["generate"]')
    db = tmp_path / "db.duckdb"
    for folder, version in (("2.2.0-devcloud", "2.2.0"), ("4.0.0-devcloud", "4.0.0")):
        # each Dev Cloud console holds the generate and the validate on the board: run 1 is
        # the generate (the 4.0.0 validate prints no summary, hence no model hash to check)
        assert _ingest(str(conv / folder), "--version", version, "--case", "conv", "--run", "1",
                       "--corpus", str(corpus), "--db", str(db)) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    main(["diff", "2.2.0", "4.0.0", "--db", str(db), "--json", "--corpus", str(corpus)])
    diff = json.loads(capsys.readouterr().out)
    kinds = {c["kind"] for c in diff["changes"]}
    assert {"regressed", "improved", "unchanged"} & kinds  # the same verified model MD5
    assert not [c for c in diff["changes"] if "sha256" in c["note"] or "options" in c["note"]]
    assert main(["report", "latest", "--db", str(db)]) == 0
    assert list((tmp_path / "reports").glob("run-2-*.html"))
    assert main(["dashboard", "--db", str(db), "--out", str(tmp_path / "site"),
                 "--corpus", str(corpus)]) == 0
    assert (tmp_path / "site" / "index.html").is_file()


def test_a_validate_target_recording_replays_without_a_board(
    real: Path, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    conv = real / "n6-micro-convs-4flows" / "conv2d_16f_3x3"
    corpus = _corpus(tmp_path, "conv", conv / "baseline_conv2d_16f_3x3_int8.tflite",
                     '["validate-target"]')
    db = tmp_path / "db.duckdb"
    assert _ingest(str(conv / "2.2.0-cubemx-target"), "--version", "2.2.0", "--case", "conv",
                   "--run", "2", "--corpus", str(corpus), "--db", str(db)) == 0
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-version", "2.2.0", "--stedge-db", str(db), "-v",
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*conv/case.toml::validate-target[[]2.2.0] PASSED (recorded)*"])
    with Store.open(db, read_only=True) as store:
        item = store.latest_item("conv", "validate-target", "2.2.0")
    assert item is not None and item["outcome"] == "passed" and item["recorded"] is True
    assert item["metrics"]["val_cos"] > 0.9


def test_outputs_of_several_runs_are_never_stored_as_one(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An AI Studio log: a generate, then the validate on the board (its summary prints the
    # validation front end's MACC and sizes): without --run nothing is stored, the runs
    # are listed; --run 1 stores the generate, with the generate's figures only.
    conv = real / "n6-micro-convs-4flows" / "conv2d_16f_3x3"
    corpus = _corpus(tmp_path, "conv", conv / "baseline_conv2d_16f_3x3_int8.tflite")
    db = tmp_path / "db.duckdb"
    log = conv / "4.0.0-aistudio" / "conv2d_16f_3x3.txt"
    args = [str(log), "--version", "4.0.0", "--case", "conv", "--corpus", str(corpus),
            "--db", str(db)]
    assert _ingest(*args) == 2
    err = capsys.readouterr().err
    assert "holds 2 runs; store one with --run N" in err
    assert "1: generate 4.0.0 (conv2d_16f_3x3.txt)" in err
    assert "2: validate 4.0.0 (conv2d_16f_3x3.txt)" in err
    assert not db.exists()
    assert _ingest(*args, "--run", "3") == 2
    assert "--run 3, but it holds 2 run(s)" in capsys.readouterr().err
    assert _ingest(*args, "--run", "1", "--force") == 0
    with Store.open(db, read_only=True) as store:
        item = store.latest_item("conv", "generate", "4.0.0")
    assert item is not None and "val_cos" not in item["metrics"]
    # --stage names the run when the file holds one of that stage: the board's validate
    other = tmp_path / "other.duckdb"
    staged = [*args[:-1], str(other), "--stage", "validate-target", "--force"]
    assert _ingest(*staged) == 0
    with Store.open(other, read_only=True) as store:
        item = store.latest_item("conv", "validate-target", "4.0.0")
    assert item is not None and "val_cos" in item["metrics"]


def test_outputs_without_a_figure_are_refused_naming_the_file(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real report cut after its `model_hash` line parses (version, model, hash all
    match the case) but holds no figure: stored, it replayed as "measured not measured"."""
    tcn = real / "n6-packetqc-tcn-qwen2" / "tcn"
    corpus = _corpus(tmp_path, "tcn", tcn / "model_npu_int8.onnx")
    text = (tcn / "4.0.0" / "network_generate_report.txt").read_text(encoding="utf-8")
    cut = tmp_path / "cut"
    cut.mkdir()
    end = text.index("\n", text.index("model_hash")) + 1
    (cut / "network_generate_report.txt").write_text(text[:end], encoding="utf-8")
    db = tmp_path / "db.duckdb"
    assert _ingest(str(cut), "--version", "4.0.0", "--case", "tcn", "--corpus", str(corpus),
                   "--db", str(db)) == 2
    err = capsys.readouterr().err
    assert f"{cut / 'network_generate_report.txt'}: no figure could be read" in err
    assert "Nothing was stored" in err and "Traceback" not in err
    assert not db.exists() or main(["runs", "--db", str(db), "--json"]) == 0 and json.loads(
        capsys.readouterr().out) == []
    # the whole report is accepted
    assert _ingest(str(tcn / "4.0.0"), "--version", "4.0.0", "--case", "tcn", "--run", "2",
                   "--corpus", str(corpus), "--db", str(db)) == 0

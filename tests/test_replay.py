"""Recorded runs: ingest outputs made elsewhere, replay them where the tool is absent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store

# what the oracle adds beside the tool's own figures
ORACLE_METRICS = {"activations_lower_bound_bytes", "activations_ratio", "float_nodes"}


def _record_elsewhere(installs: Path, model: Path, out: Path) -> Path:
    """What a Windows PC with the tool would hand over: its st_ai_output folder."""
    exe = installs / "4.0" / "Utilities" / "linux" / "stedgeai"
    subprocess.run(
        [str(exe), "generate", "--model", str(model), "--target", "stm32n6", "--st-neural-art",
         "--output", str(out), "--workspace", str(out.parent / "ws")],
        check=True, capture_output=True,
    )
    return out


def test_ingest_then_replay_without_the_install(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = make_corpus(
        {"cnn": SIMPLE_CASE + "[expect]\nactivations_bytes = { min = 1 }\n", "norec": SIMPLE_CASE}
    )
    db = tmp_path / "db.duckdb"
    folder = _record_elsewhere(fake_installs, corpus / "cnn" / "model.onnx", tmp_path / "pc" / "st_ai_output")
    assert main(["ingest", str(folder), "--version", "4.0.1", "--case", "cnn",
                 "--corpus", str(corpus), "--db", str(db)]) == 0
    assert "stored" in capsys.readouterr().out

    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-version", "4.0.1", "--stedge-db", str(db), "-v", "-rs",
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*cnn/case.toml::generate[[]4.0.1] PASSED (recorded)*",
            "1 item(s) replayed from recorded runs",
            "*not installed here and the store has no recording of norec*",
        ]
    )
    with Store.open(db, create=False) as store:
        run = store.get_run(store.latest_run_id() or 0)
    replayed = next(i for i in run["items"] if i["stage"] == "generate" and i["case_name"] == "cnn")
    assert replayed["recorded"] is True
    # the figures are those the tool wrote on the other machine, read from its c_info
    footprint = json.loads((folder / "network_c_info.json").read_text())["memory_footprint"]
    assert replayed["metrics"]["activations_bytes"] == footprint["activations"]
    assert replayed["metrics"]["weights_bytes"] == footprint["weights"]
    assert replayed["result"]["tool"]["version"] == "4.0.1"

    # the normal use: two workers, each handed the recordings (a stored one carries a
    # datetime, which execnet could not send: the session died with INTERNALERROR)
    parallel = pytester.runpytest_subprocess(
        str(corpus), "--stedge-version", "4.0.1", "--stedge-db", str(db), "-n", "2",
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
    )
    parallel.assert_outcomes(passed=3, skipped=1)
    parallel.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_ingest_refuses_a_folder_without_tool_output_and_writes_nothing(
    make_corpus: CorpusFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello\n")
    db = tmp_path / "db.duckdb"
    assert main(["ingest", str(empty), "--version", "4.0.1", "--case", "cnn",
                 "--corpus", str(corpus), "--db", str(db)]) == 2
    assert str(empty) in capsys.readouterr().err
    assert not db.exists()


def test_ingest_names_the_cases_it_knows(
    make_corpus: CorpusFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    assert main(["ingest", str(tmp_path), "--version", "4.0.1", "--case", "nope",
                 "--corpus", str(corpus), "--db", str(tmp_path / "db.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "no case 'nope'" in err and "cases: cnn" in err


@pytest.mark.parametrize(("version", "target"), [("2.2.0", "stm32h7"), ("4.0.1", "stm32n6")])
def test_an_install_and_a_recording_of_the_same_outputs_give_the_same_result(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path, version: str, target: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run with the install; ingest that run's output folder as a recording; replay it where
    the install is absent: the two stored runs agree, and both agree with the tool's c_info."""
    from fake_stedgeai import make_install

    from pytest_stedge.result import flat_metrics

    installs = tmp_path / "installs"
    make_install(installs / version[:3], version)
    text = SIMPLE_CASE.replace('"stm32n6"', f'"{target}"')
    if target != "stm32n6":
        text = text.replace('[neural_art]\n    profile = "default"\n', "")
    corpus = make_corpus({"cnn": text})
    db = tmp_path / "db.duckdb"
    pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db), "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}",
    ).assert_outcomes(passed=2)
    folder = next((pytester.path / ".stedge" / "work").glob("run-1-*/cnn/generate-*")) / "st_ai_output"
    assert main(["ingest", str(folder), "--version", version, "--case", "cnn",
                 "--corpus", str(corpus), "--db", str(db)]) == 0
    capsys.readouterr()
    # no --stedge-root: the install is not there, the recording is
    pytester.runpytest_subprocess(
        str(corpus), "--stedge-version", version, "--stedge-db", str(db), "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}", "--stedge-report", "none",
    ).assert_outcomes(passed=2)
    with Store.open(db, create=False) as store:
        ran = next(i for i in store.get_run(1)["items"] if i["stage"] == "generate")
        replayed = next(i for i in store.get_run(store.latest_run_id() or 0)["items"]
                        if i["stage"] == "generate")
    assert replayed["recorded"] is True and not ran["recorded"]
    assert ran["result"]["target"] == replayed["result"]["target"] == target
    ran_figures = {k: v for k, v in flat_metrics(ran["result"]).items() if k not in ORACLE_METRICS}
    assert ran_figures == {
        k: v for k, v in flat_metrics(replayed["result"]).items() if k not in ORACLE_METRICS
    }
    footprint = json.loads((folder / "network_c_info.json").read_text())["memory_footprint"]
    assert ran_figures["activations_bytes"] == footprint["activations"]
    assert ran_figures["weights_bytes"] == footprint["weights"]

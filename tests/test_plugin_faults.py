"""Bad input: malformed cases, a failing, hanging or garbage-writing tool, Ctrl-C, a busy store."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.store.database import Store


def _run(pytester: pytest.Pytester, corpus: Path, installs: Path, db: Path, *args: str):
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-db", str(db),
        "--stedge-version", "4.0.1", "-p", "no:cacheprovider", f"--rootdir={pytester.path}", *args,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model = 'model.onnx'\ntarget = [", "*bad/case.toml: not valid TOML*"),
        (
            "model = 'model.onnx'\ntarget = 'stm32n6'\ncolour = 'blue'",
            "*bad/case.toml: [[]colour]: unknown key 'colour'; accepted keys: *model*",
        ),
        (
            "model = 'model.onnx'\ntarget = 'stm32n6'\nstages = 'generate'",
            "*bad/case.toml: [[]stages]: expected a list drawn from generate, analyze*",
        ),
        (
            "model = '../../outside.onnx'\ntarget = 'stm32n6'",
            "*bad/case.toml: [[]model]: path '../../outside.onnx' leaves the corpus*",
        ),
        (
            "model = 'missing.onnx'\ntarget = 'stm32n6'",
            "*bad/case.toml: [[]model]: model file 'missing.onnx' not found*",
        ),
        (
            "model = 'model.onnx'\ntarget = 'stm32n6'\n[expect]\nactivations = { max = 1 }",
            ("*bad/case.toml: [[]expect.activations]: unknown metric 'activations' (did you mean "
            "'activations_*'?); accepted: *activations_bytes*"),
        ),
        (
            "model = 'model.onnx'\ntarget = 'stm32n6'\n[expect]\nmacc = { max = 'lots' }",
            "*bad/case.toml: [[]expect.macc.max]: expected a number, got 'lots'",
        ),
    ],
    ids=["bad-toml", "unknown-key", "wrong-type", "leaves-corpus", "missing-model", "unknown-metric", "bad-bound"],
)
def test_malformed_case_is_a_collection_error_and_others_run(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    text: str, expected: str,
) -> None:
    corpus = make_corpus({"good": SIMPLE_CASE, "bad": "model = 'model.onnx'\ntarget = 'x'\n"})
    (corpus / "bad" / "case.toml").write_text(text)
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([expected])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_model_that_changed_under_its_sha256_pin_fails_collection(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    import hashlib

    corpus = make_corpus({"good": SIMPLE_CASE, "pinned": SIMPLE_CASE})
    model = corpus / "pinned" / "model.onnx"
    pinned = hashlib.sha256(model.read_bytes()).hexdigest()
    toml = corpus / "pinned" / "case.toml"
    toml.write_text(f'sha256 = "{pinned}"\n' + toml.read_text())
    _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb").assert_outcomes(passed=4)

    model.write_bytes(model.read_bytes() + b"\0")  # the model changed, the pin did not
    actual = hashlib.sha256(model.read_bytes()).hexdigest()
    result = _run(pytester, corpus, fake_installs, tmp_path / "db.duckdb")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [(f"*pinned/case.toml: [[]sha256]: the model model.onnx has sha256 {actual}, "
          f"the case pins {pinned}: the model changed*")]
    )


def _fault_install(root: Path, config: dict) -> Path:
    from fake_stedgeai import make_install

    make_install(root / "4.0", "4.0.1", config=config)
    return root


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            {"error": "E103(ModelError): Unsupported layer type: GridSample", "exit_code": 2},
            ["exited with status 2: E103(ModelError): Unsupported layer type: GridSample",
             "--- last lines of output ---"],
        ),
        ({"crash": True}, ["exited with status 1", "Traceback (most recent call last)"]),
        ({"no_output": True}, ["unreadable output: ", "st_ai_output"]),
        ({"garbage": ["network_c_info.json", "network_generate_report.txt"]},
         ["unreadable output: ", "network_c_info.json"]),
    ],
    ids=["error", "crash", "no-output", "garbage"],
)
def test_tool_failure_fails_one_item_and_the_session_goes_on(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path, fault: dict, expected: list[str]
) -> None:
    installs = _fault_install(tmp_path / "installs", {"broken": fault})
    corpus = make_corpus({"fine": SIMPLE_CASE, "broken": SIMPLE_CASE})
    # the fake applies faults per model stem: give the broken case its own model name
    (corpus / "broken" / "model.onnx").rename(corpus / "broken" / "broken.onnx")
    (corpus / "broken" / "case.toml").write_text(
        (corpus / "broken" / "case.toml").read_text().replace("model.onnx", "broken.onnx")
    )
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, installs, db)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*Command '*stedgeai generate --model *broken.onnx*"])
    for fragment in expected:
        assert fragment in result.stdout.str()
    with Store.open(db, create=False) as store:
        run = store.get_run(1)
    failed = [i for i in run["items"] if i["outcome"] == "failed"]
    assert [i["case_name"] for i in failed] == ["broken"]
    assert "stedgeai generate" in failed[0]["message"]
    assert run["status"] == "failed"


def test_a_hanging_tool_is_killed_after_the_timeout(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    installs = _fault_install(tmp_path / "installs", {"*": {"hang": True}})
    # the case allows 120 s; the command line wins, and the message says which limit it was
    corpus = make_corpus({"cnn": "    timeout = 120\n" + SIMPLE_CASE})
    result = _run(pytester, corpus, installs, tmp_path / "db.duckdb", "--stedge-timeout", "2")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*Command '*stedgeai generate*' timed out after 2 s: the limit set by --stedge-timeout 2"]
    )
    assert result.duration < 60


class _Config:
    def __init__(self, option: float | None, ini: str) -> None:
        self.option, self.ini = option, ini

    def getoption(self, name: str) -> object:
        return {"stedge_timeout": self.option}.get(name)

    def getini(self, name: str) -> object:
        return self.ini if name == "stedge_timeout" else ""


@pytest.mark.parametrize(
    ("option", "case_timeout", "ini", "expected"),
    [
        (3.0, 120.0, "900", (3.0, "--stedge-timeout 3")),
        (None, 120.0, "900", (120.0, "timeout = 120 in ")),
        (None, None, "900", (900.0, "ini stedge_timeout = 900")),
        (None, None, "", (600.0, "the default of 600 s")),
    ],
    ids=["command-line-wins", "case-key", "ini", "default"],
)
def test_timeout_precedence(
    option: float | None, case_timeout: float | None, ini: str, expected: tuple[float, str],
    tmp_path: Path,
) -> None:
    from pytest_stedge.case.model import Case
    from pytest_stedge.state import RunSettings

    case = Case(name="cnn", path=tmp_path / "case.toml", corpus_root=tmp_path,
                model=tmp_path / "m.onnx", target="stm32n6", timeout=case_timeout)
    settings = RunSettings.__new__(RunSettings)
    settings.config = _Config(option, ini)  # type: ignore[assignment]
    seconds, source = settings.timeout_and_source(case)
    assert seconds == expected[0] and source.startswith(expected[1])



@pytest.mark.parametrize("ini", ["nan", "inf", "0", "-5", "1e30", "soon"])
def test_an_ini_timeout_that_never_expires_stops_the_session_before_a_run(
    ini: str, pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path,
    tmp_path: Path,
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    inifile = pytester.makeini(f"[pytest]\nstedge_timeout = {ini}\n")
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, fake_installs, db, "-c", str(inifile))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(f"*ini stedge_timeout: '{ini}': expected a positive number "
                                  "of seconds, at most 86,400 (one day)*")])
    assert "Traceback" not in result.stderr.str()
    assert not db.exists()  # no run recorded

def test_ctrl_c_keeps_what_finished_and_marks_the_run_interrupted(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"a": SIMPLE_CASE, "b": SIMPLE_CASE})
    (corpus / "conftest.py").write_text(
        textwrap.dedent(
            """
            def pytest_stedge_result(config, item, result):
                if item.case.name == "b" and item.stage == "generate":
                    raise KeyboardInterrupt
            """
        )
    )
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, fake_installs, db)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    with Store.open(db, create=False) as store:
        run = store.get_run(1)
    assert run["status"] == "interrupted"
    stored = {(i["case_name"], i["stage"]) for i in run["items"]}
    assert ("a", "generate") in stored and ("a", "oracle") in stored
    assert ("b", "generate") not in stored


def test_a_second_session_on_a_busy_store_fails_clearly(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    db = tmp_path / "db.duckdb"
    _run(pytester, corpus, fake_installs, db).assert_outcomes(passed=2)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)",
         str(db)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = _run(pytester, corpus, fake_installs, db, "-o", "stedge_db_wait=1")
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*store *db.duckdb is in use by another pytest-stedge session (waited 1 s)*--stedge-db PATH*"]
    )
    with Store.open(db, create=False) as store:
        runs = store.list_runs()
    assert [r["run_id"] for r in runs] == [1] and runs[0]["passed"] == 2


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    from pytest_stedge.errors import StoreVersionError

    db = tmp_path / "db.duckdb"
    with Store.open(db) as store, store.attached(write=True) as con:
        con.execute("INSERT INTO _stedge_migrations VALUES ('0099_future', now())")
    with pytest.raises(StoreVersionError, match=r"newer pytest-stedge \(unknown migrations: 0099_future\)\. Upgrade"):
        Store.open(db)


def test_migrations_are_named_and_applied_once(tmp_path: Path) -> None:
    from pytest_stedge.store.migrations import MIGRATIONS

    db = tmp_path / "db.duckdb"
    with Store.open(db) as store:
        first = store.applied_migrations()
    with Store.open(db) as store:
        second = store.applied_migrations()
    assert [name for name, _ in first] == [m.name for m in MIGRATIONS]
    assert first == second


def test_memory_store_round_trip() -> None:
    from pytest_stedge.store.database import ItemRow

    with Store.open(":memory:") as store:
        run_id = store.begin_run(argv=["pytest"], versions=["4.0.1"])
        store.add_items(
            run_id,
            [ItemRow(nodeid="c::generate[4.0.1]", case_name="c", stage="generate", version="4.0.1",
                     outcome="passed", result={"schema": "stedge.result/1"},
                     metrics={"activations_bytes": 10.0})],
        )
        store.finish_run(run_id, status="passed", exitstatus=0)
        run = store.get_run(run_id)
    assert run["items"][0]["metrics"] == {"activations_bytes": 10.0}
    assert json.dumps(run, default=str)


def test_a_session_stopped_by_collection_errors_stores_no_result(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every collection error used to store an empty failed run (0 items) that `stedge
    runs`, `report latest` and the dashboard then showed as a result."""
    from pytest_stedge.cli.main import main

    corpus = make_corpus({"bad": "model = 'model.onnx'\ntarget = ["})
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, fake_installs, db)
    result.assert_outcomes(errors=1)
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "no runs stored"
    assert "1 run(s) stopped by collection errors before any item ran are not listed" in err
    assert main(["runs", "--db", str(db), "--all", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["status"], run["items"]) == ("collection-error", 0)
    assert main(["report", "latest", "--db", str(db)]) == 2
    assert "no runs" in capsys.readouterr().err
    # a good case beside the bad one runs: that run is a result as before
    make_corpus({"good": SIMPLE_CASE}, root=corpus)
    _run(pytester, corpus, fake_installs, db).assert_outcomes(passed=2, errors=1)
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    assert [(r["run_id"], r["status"]) for r in json.loads(capsys.readouterr().out)] == [(2, "failed")]

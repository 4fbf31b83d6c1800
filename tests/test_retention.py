"""The work folder keeps the newest runs' outputs, failures longer; `stedge clean`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.cli.main import main
from pytest_stedge.tool.retention import RUN_MARKER, run_folders, to_remove


def _run(root: Path, name: str, status: str | None, when: float, size: int = 10) -> Path:
    folder = root / name / "cnn" / "generate-4.0.1"
    folder.mkdir(parents=True)
    (folder / "network_c_info.json").write_bytes(b"x" * size)
    if status is not None:
        (root / name / RUN_MARKER).write_text(json.dumps({"status": status, "finished": when}))
    os.utime(root / name, (when, when))
    return root / name


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    # oldest first: run-1 failed, run-2..run-5 passed, run-6 never finished (killed)
    _run(root, "run-1", "failed", 1000)
    for i in range(2, 6):
        _run(root, f"run-{i}", "passed", 1000 + i)
    _run(root, "run-6", None, 1006)
    (root / "notes").mkdir()  # not a run folder: never touched
    return root


def test_the_newest_runs_stay_and_failures_longer(work: Path) -> None:
    runs = run_folders(work)
    assert [r.path.name for r in runs] == ["run-6", "run-5", "run-4", "run-3", "run-2", "run-1"]
    assert runs[0].status == "unfinished" and runs[-1].status == "failed"
    assert runs[0].size_bytes == 10
    # keep 2: run-6 and run-5; failed/unfinished within the newest 6 stay: run-1
    assert [r.path.name for r in to_remove(runs, 2, 6)] == ["run-4", "run-3", "run-2"]
    # failures kept within the newest 5 only: run-1 (6th) goes too
    assert [r.path.name for r in to_remove(runs, 2, 5)] == ["run-4", "run-3", "run-2", "run-1"]
    assert to_remove(runs, None, 1) == []  # keep 'all'
    assert [r.path.name for r in to_remove(runs, 1, None)] == ["run-5", "run-4", "run-3", "run-2"]


def test_stedge_clean(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean", "--workdir", str(work), "--keep", "2", "--keep-failed", "5",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 4 run folder(s)" in out and "; 2 kept" in out
    assert "would remove " + str(work / "run-1") + " (failed, " in out
    assert len(list(work.iterdir())) == 7  # nothing removed
    assert main(["clean", "--workdir", str(work), "--keep", "2", "--keep-failed", "5"]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["notes", "run-5", "run-6"]
    assert main(["clean", "--workdir", str(work), "--all"]) == 0
    assert [p.name for p in work.iterdir()] == ["notes"]
    assert main(["clean", "--workdir", str(work), "--keep", "none"]) == 2
    assert "stedge: error: --keep: expected a whole number" in capsys.readouterr().err


def test_each_session_prunes_the_work_folder(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE}, root=pytester.path / "corpus")
    pytester.makefile(
        ".ini", pytest='[pytest]\nstedge_keep_runs = 2\nstedge_keep_failed_runs = 3\n'
    )
    work = pytester.path / ".stedge" / "work"

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "corpus", "--stedge-root", str(fake_installs), "--stedge-version", "4.0.1",
            "--stedge-db", str(tmp_path / "db.duckdb"), "-p", "no:cacheprovider", *args,
        )

    toml = corpus / "cnn" / "case.toml"
    passing = toml.read_text()
    toml.write_text(passing + "[expect]\nactivations_bytes = { max = 1 }\n")
    run().assert_outcomes(passed=1, failed=1)  # run 1 fails
    toml.write_text(passing)
    for _ in range(3):  # runs 2, 3, 4 pass
        result = run()
        result.assert_outcomes(passed=2)
    names = sorted(p.name for p in work.iterdir())
    assert len(names) == 2 and all(n.startswith("run-") for n in names)  # run 1 left at 4
    status = json.loads((work / names[-1] / RUN_MARKER).read_text())["status"]
    assert status == "passed"
    result.stdout.fnmatch_lines(["work folder: removed * old run folder(s)*"])

"""Reports of a real pytest session with the fake stedgeai, through the commands."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE
from test_html_reports import Page

from pytest_stedge.cli import report as commands_report
from pytest_stedge.errors import StoreError
from pytest_stedge.report import render_diff_page
from pytest_stedge.store.database import Store
from pytest_stedge.verdict.store_diff import diff_store


def _stedge(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="stedge")
    commands_report.add_commands(parser.add_subparsers(required=True))
    args = parser.parse_args(list(argv))
    return int(args.handler(args))


@pytest.fixture(scope="module")
def session_store(
    tmp_path_factory: pytest.TempPathFactory, fake_installs: Path
) -> tuple[Path, Path]:
    """A store written by `pytest corpus --stedge-version 3.0.0 --stedge-version 4.0.1`."""
    import subprocess
    import sys
    import textwrap

    from conftest import make_conv_model

    root = tmp_path_factory.mktemp("session")
    corpus = root / "corpus"
    (corpus / "profiles").mkdir(parents=True)
    for index, (name, extra) in enumerate(
        {"cnn": "", "tight": "[expect]\nactivations_bytes = { max = 1 }\n"}.items()
    ):
        (corpus / name).mkdir()
        make_conv_model(corpus / name / "model.onnx", channels=4 + 4 * index, size=8 + 4 * index)
        (corpus / name / "case.toml").write_text(
            textwrap.dedent(SIMPLE_CASE) + extra, encoding="utf-8"
        )
    db = root / "results.duckdb"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(corpus), "-p", "no:cacheprovider", "-q",
         "--stedge-root", str(fake_installs), "--stedge-db", str(db),
         "--stedge-version", "3.0.0", "--stedge-version", "4.0.1"],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
    )
    assert db.is_file(), proc.stdout + proc.stderr
    assert "2 failed" in proc.stdout, proc.stdout
    return db, corpus


def test_report_command_writes_every_item_of_the_run(
    session_store: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = session_store
    monkeypatch.chdir(tmp_path)
    assert _stedge("report", "latest", "--db", str(db)) == 0
    path = next((tmp_path / "reports").glob("run-1-*.html"))
    page = Page(path)
    with Store.open(db, create=False) as store:
        run = store.get_run(1)
    text = page.all_text()
    for item in run["items"]:
        assert item["nodeid"] in text
        for value in item["metrics"].values():
            if value == int(value):
                assert f"{int(value):,}" in text
    assert "Failures (2)" in text
    assert "activations_bytes" in text and "<= 1 B missed" in text


def test_report_command_refuses_an_unknown_run(session_store: tuple[Path, Path]) -> None:
    db, _ = session_store
    with pytest.raises(StoreError, match="no run 99 .* stored runs: 1"):
        _stedge("report", "99", "--db", str(db))


def test_diff_and_dashboard_of_the_session(session_store: tuple[Path, Path], tmp_path: Path) -> None:
    db, corpus = session_store
    with Store.open(db, create=False) as store:
        report = diff_store(store, "3.0.0", "4.0.1")
        diff = Page(render_diff_page(report, store, tmp_path / "diff.html"))
    assert diff.count("table") >= 1 + 2  # overview + one per case
    assert diff.count("svg") == 3
    assert _stedge("dashboard", "--db", str(db), "--out", str(tmp_path / "site"),
                   "--corpus", str(corpus)) == 0
    index = Page(tmp_path / "site" / "index.html")
    assert "3.0.0, 4.0.1" in index.all_text()
    cases = sorted((tmp_path / "site" / "cases").glob("*.html"))
    assert [p.name.split("-")[0] for p in cases] == ["cnn", "tight"]
    assert Page(cases[0]).count("svg") >= 2

"""The dashboard reads one view of the store: a version another machine commits between
the site's reads (the version list, then the item table) must not show in either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.report import site
from pytest_stedge.store.database import ItemRow, Store


def _row(case: str, version: str) -> ItemRow:
    return ItemRow(nodeid=f"corpus/{case}/case.toml::generate[{version}]", case_name=case,
                   stage="generate", version=version, outcome="passed",
                   metrics={"macc": 1.0, "activations_bytes": 1000.0}, result={})


def test_the_dashboard_is_one_snapshot_while_a_session_adds_a_version(
    postgres_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(postgres_store) as writer:
        first = writer.begin_run(argv=["pytest"], versions=["3.0.0"])
        writer.add_items(first, [_row("b", "3.0.0")])
        real = site.case_table
        committed = []

        def between(store: Store, versions: Any) -> Any:
            # what 8 sessions writing the server did at random: a new version, committed
            # after the site read the version list and before it read the items
            run = writer.begin_run(argv=["pytest"], versions=["4.0.1"])
            writer.add_items(run, [_row("a", "4.0.1"), _row("b", "4.0.1")])
            committed.append(run)
            return real(store, versions)

        monkeypatch.setattr(site, "case_table", between)
        with Store.open(postgres_store, read_only=True) as reader:
            index = site.write_site(reader, tmp_path / "site", bugs_dir=None)
        assert committed  # the commit happened mid-site
    text = index.read_text()
    assert "3.0.0" in text and "4.0.1" not in text  # the site is the store before it
    pages = {p.name for p in (tmp_path / "site").glob("**/*.html")}
    assert {site.slug("b") + ".html", "index.html"} <= pages
    assert site.slug("a") + ".html" not in pages  # case a came with the later commit


ADD_VERSION = r"""
import sys
from pytest_stedge.store.database import ItemRow, Store
with Store.open(sys.argv[1], wait_s=1) as store:
    run = store.begin_run(argv=["pytest"], versions=["4.0.1"])
    store.add_items(run, [ItemRow(nodeid=f"corpus/{c}/case.toml::generate[4.0.1]", case_name=c,
                                  stage="generate", version="4.0.1", outcome="passed",
                                  metrics={"macc": 1.0}, result={}) for c in ("a", "b")])
print("committed")
"""


def test_a_file_store_dashboard_is_one_view_and_lets_sessions_write_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file store cannot be read in a transaction other processes write through: the site
    is read from a copy taken under one brief hold. Holding the file for the whole site
    made 8 sessions starting meanwhile wait out their 5 s (exit 4)."""
    import subprocess
    import sys

    db = tmp_path / "results.duckdb"
    with Store.open(db) as writer:
        first = writer.begin_run(argv=["pytest"], versions=["3.0.0"])
        writer.add_items(first, [_row("b", "3.0.0")])
    real = site.case_table
    done = []

    def between(store: Store, versions: Any) -> Any:
        # a session writes the file while the site renders: it must not wait for the site
        done.append(subprocess.run([sys.executable, "-c", ADD_VERSION, str(db)],
                                   capture_output=True, text=True, timeout=60, check=False))
        return real(store, versions)

    monkeypatch.setattr(site, "case_table", between)
    with Store.open(db, read_only=True) as reader:
        index = site.write_site(reader, tmp_path / "site", bugs_dir=None)
    assert done and done[0].returncode == 0, done[0].stderr[-2000:]
    text = index.read_text()
    assert "3.0.0" in text and "4.0.1" not in text  # the site is the store before it
    with Store.open(db, read_only=True) as store:
        assert {r["run_id"] for r in store.list_runs()} == {1, 2}  # the write went in

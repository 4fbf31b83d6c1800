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

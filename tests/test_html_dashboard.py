"""The dashboard's case pages and changes page from a small store whose figures are set by
hand: which stage a case page shows, bands, not-comparable moves, the kept largest
changes and their counts, stored NaNs; and the store's memory setting after a dashboard."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_html_reports import Page

from pytest_stedge.report import render_dashboard
from pytest_stedge.report.changes import release_changes
from pytest_stedge.report.history import case_table
from pytest_stedge.store.database import ItemRow, Store

BANDED_TOML = """\
model = "model.onnx"
target = "stm32n6"
[baseline]
activations_bytes = "+5%"
"""


def _item(case: str, version: str, metrics: dict[str, float], *, stage: str = "generate",
          sha: str = "sha-1", case_path: str | None = None, outcome: str = "passed") -> ItemRow:
    return ItemRow(
        nodeid=f"corpus/{case}/case.toml::{stage}[{version}]", case_name=case, stage=stage,
        version=version, outcome=outcome, model_sha256=sha, options_hash="opt",
        metrics=metrics, case={"case_path": case_path, "model_path": "model.onnx", "target": "stm32n6"},
    )


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("dash")
    banded = root / "corpus" / "banded"
    banded.mkdir(parents=True)
    (banded / "model.onnx").write_bytes(b"not a real model")
    (banded / "case.toml").write_text(BANDED_TOML, encoding="utf-8")
    db = root / "results.duckdb"
    per_version = {
        "1.0.0": [
            _item("multi", "1.0.0", {"activations_bytes": 1000.0, "epochs_sw": 2.0}),
            _item("multi", "1.0.0", {"activations_bytes": 5000.0, "weights_bytes": 7.0,
                                     "epochs_sw": 9.0}, stage="validate-host"),
            _item("banded", "1.0.0", {"activations_bytes": 1000.0, "weights_bytes": 100.0},
                  case_path=str(banded / "case.toml")),
            _item("swapped", "1.0.0", {"activations_bytes": 300.0, "weights_bytes": 50.0}),
            _item("nan", "1.0.0", {"activations_bytes": 10.0, "weights_bytes": 4.0}),
        ],
        "2.0.0": [
            _item("multi", "2.0.0", {"activations_bytes": 1100.0, "epochs_sw": 0.0}),
            _item("multi", "2.0.0", {"activations_bytes": 4000.0, "weights_bytes": 8.0,
                                     "epochs_sw": 9.0}, stage="validate-host"),
            _item("banded", "2.0.0", {"activations_bytes": 1040.0, "weights_bytes": 120.0},
                  case_path=str(banded / "case.toml")),
            _item("swapped", "2.0.0", {"activations_bytes": 300.0, "weights_bytes": 60.0},
                  sha="sha-2"),
            _item("nan", "2.0.0", {"activations_bytes": float("nan"), "weights_bytes": 2.0}),
            _item("nan", "2.0.0", {"activations_bytes": 99.0}, stage="analyze", outcome="skipped"),
        ],
    }
    with Store.open(db) as store:
        for version, rows in per_version.items():
            run_id = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run_id, rows)
            store.finish_run(run_id, status="passed", exitstatus=0)
        limits = [_limit(store)]
        site = render_dashboard(store, root / "site", bugs_dir=None).parent
        limits.append(_limit(store))
        store.db.execute("SET memory_limit = '100MB'")  # below the dashboard's own bound
        limits.append(_limit(store))
        changes = release_changes(store, case_table(store, ["1.0.0", "2.0.0"]), keep=1)
        limits.append(_limit(store))
    return {"db": db, "site": site, "limits": limits, "kept": changes}


def _limit(store: Store) -> str:
    row = store.db.execute("SELECT current_setting('memory_limit')").fetchone()
    return str(row[0]) if row else ""


def _case(site: Path, name: str) -> Page:
    return Page(next((site / "cases").glob(f"{name}-*.html")))


def _rows(page: Page) -> list[str]:
    body = page.html.split("<tbody>")[1].split("</tbody>")[0]
    return [" ".join(re.sub(r"<[^>]+>", " ", r).split()) for r in body.split("</tr>") if "<tr" in r]


def test_case_page_shows_the_generate_stage_on_every_row(store_path: dict[str, Any]) -> None:
    rows = _rows(_case(store_path["site"], "multi"))
    # version, stage, run, outcome, activations, bound, ratio, weights, HW, EC, SW, hybrid:
    # generate's activations and SW epochs on both rows of a version; the weights only
    # validate-host measured come from it
    assert rows == [
        "1.0.0 generate 1 passed 1,000 B — — 7 B — — 2 —",
        "1.0.0 validate-host 1 passed 1,000 B — — 7 B — — 2 —",
        "2.0.0 generate 2 passed 1,100 B — — 8 B — — 0 —",
        "2.0.0 validate-host 2 passed 1,100 B — — 8 B — — 0 —",
    ]


def test_a_stored_nan_is_not_a_figure_and_a_skipped_item_not_a_row(store_path: dict[str, Any]) -> None:
    page = _case(store_path["site"], "nan")
    assert _rows(page) == [
        "1.0.0 generate 1 passed 10 B — — 4 B — — — —",
        "2.0.0 generate 2 passed — — — 2 B — — — —",
    ]
    assert "reported activations · 2.0.0" not in page.html  # no point for the NaN
    assert "reported activations · 1.0.0: 10 B" in page.html


def test_changes_page_applies_bands_and_identity(store_path: dict[str, Any]) -> None:
    text = Page(store_path["site"] / "changes.html").all_text()
    # multi: activations 1,000 -> 1,100 B regressed (+10%, band 0) on generate and
    # 5,000 -> 4,000 B improved on validate-host; SW epochs 2 -> 0 improved
    assert "multi generate activations_bytes 1,000 B 1,100 B +100 B (+10.0%) 0 1 → 2" in text
    assert "multi validate-host activations_bytes 5,000 B 4,000 B -1,000 B (-20.0%) 0" in text
    # banded: +4% activations is inside its "+5%" band, +20% weights is not (default band 0)
    assert "banded generate activations_bytes" not in text
    assert "banded generate weights_bytes 100 B 120 B +20 B (+20.0%) 0" in text
    # swapped: another model file: its moved weights and its unchanged activations are
    # both not comparable, never regressions
    assert "swapped generate weights_bytes 50 B 60 B +10 B (+20.0%) 0" in text
    assert "swapped generate activations_bytes 300 B 300 B +0 B (+0.0%) 0" in text
    # the pair's summary (regressed, newly failing, improved, fixed, changed, not
    # comparable): regressed multi's activations, its validate-host weights 7 -> 8 and
    # banded's weights; improved multi's validate-host activations, its SW epochs and nan's
    # weights 4 -> 2; not comparable swapped's two and nan's activations, a stored NaN in
    # 2.0.0: measured on one side only, as `stedge diff` says
    assert "1.0.0 2.0.0 3 0 3 0 0 3" in text
    assert "nan generate activations_bytes 10 B — — 0 1 → 2 not measured in head" in text
    assert "swapped generate weights_bytes 50 B 60 B +10 B (+20.0%) 0 1 → 2 model differs: sha256 sha-1… -> sha256 sha-2…" in text


def test_the_kept_changes_are_the_largest_and_the_counts_are_all(store_path: dict[str, Any]) -> None:
    changes, counts = store_path["kept"]
    assert counts == {("1.0.0", "2.0.0", "regressed"): 3, ("1.0.0", "2.0.0", "improved"): 3,
                      ("1.0.0", "2.0.0", "not comparable"): 3}
    by_kind = {c.kind.value: (c.case_name, c.stage, c.metric) for c in changes}
    assert len(changes) == 3  # keep=1 per kind
    assert by_kind["regressed"] == ("banded", "generate", "weights_bytes")  # +20% beats +14%, +10%
    assert by_kind["improved"] == ("multi", "generate", "epochs_sw")  # -100% first
    assert by_kind["not comparable"] == ("swapped", "generate", "weights_bytes")  # +20% before 0%


def test_the_store_keeps_its_memory_limit_after_a_dashboard(store_path: dict[str, Any]) -> None:
    default, after, own, after_own = store_path["limits"]
    assert after == default  # DuckDB's default, however large the machine
    assert own == after_own == "95.3 MiB"  # 100 MB: a lower limit is left alone

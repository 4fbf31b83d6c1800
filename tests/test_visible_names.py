"""Names with bidi controls and invisible characters (issue 16) are shown as escapes in the
terminal summary, failure tables and every HTML page, so one name cannot pass for another.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory
from test_html_reports import _row, _synthetic

from pytest_stedge.report import render_dashboard, render_diff_page, render_run_report
from pytest_stedge.report.table import format_table
from pytest_stedge.report.visible import visible
from pytest_stedge.store.database import Store
from pytest_stedge.verdict.compare import ChangeKind, DiffReport, MetricChange
from pytest_stedge.verdict.store_diff import diff_store

# Reads "invoice-exe.pdf" on screen: U+202E reverses what follows it.
SPOOF = "invoice-\u202efdp.exe"
SHOWN = "invoice-\\u202efdp.exe"
HIDDEN = ["\u202e", "\u2066", "\u200b", "\u200f", "\ufeff", "\x1b", "\u3164"]


@pytest.mark.parametrize(("raw", "shown"), [
    (SPOOF, SHOWN),
    ("a\u2066b\u2069", "a\\u2066b\\u2069"),  # isolate controls
    ("ad\u200bmin", "ad\\u200bmin"),  # zero width space
    ("\ufeffname", "\\ufeffname"),  # byte order mark
    ("red\x1b[31mtext", "red\\x1b[31mtext"),  # a terminal escape
    ("over\rwrite", "over\\x0dwrite"),  # a carriage return repaints the line
    ("tag\U000e0041", "tag\\U000e0041"),  # tag characters hide text
    ("\u3164", "\\u3164"),  # Hangul filler: a letter that draws nothing
    ("10\u00a0000", "10\\xa0000"),  # a space that is not U+0020
])
def test_hidden_characters_become_escapes(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_ordinary_text_is_untouched() -> None:
    for text in ("mobilenetv2/int8", "Añejo — 日本語 «ok» ∑ 🙂", "a b", ""):
        assert visible(text) == text
    assert visible("line 1\r\nline\t2", keep_newlines=True) == "line 1\nline\t2"
    assert visible("a\nb") == "a\\x0ab"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("visible")
    with Store.open(root / "results.duckdb") as store:
        for index, version in enumerate(("2.2.0", "3.0.0")):
            run_id = store.begin_run(argv=["pytest"], versions=[version])
            diag = [{"level": "error", "code": "E1", "kind": "K",
                     "message": f"layer {SPOOF} \x1b[2J failed"}]
            store.add_items(run_id, [
                _row(SPOOF, version, _synthetic(1000 + 500 * index, 10, index, diagnostics=diag),
                     outcome="failed", message=f"{SPOOF} generate: 1 metric missed",
                     findings=[{"bug_id": "bug\u200bid", "status": "reproduced",
                                "evidence": {"epochs_sw": index}}]),
                _row("ad\u200bmin", version, _synthetic(64, 9, 0)),
            ])
            store.finish_run(run_id, status="failed", exitstatus=1)
        out = root / "reports"
        run = render_run_report(store, run_id, out / "run.html")
        diff = render_diff_page(diff_store(store, "2.2.0", "3.0.0"), store, out / "diff.html")
        render_dashboard(store, out / "site", bugs_dir=root / "bugs")
    return [run, diff, *sorted((out / "site").rglob("*.html"))]


def test_every_page_shows_the_escapes_and_never_the_characters(pages: list[Path]) -> None:
    assert len(pages) >= 5  # run, diff, index, matrix, case and bug pages
    for path in pages:
        html = path.read_text(encoding="utf-8")
        for ch in HIDDEN:
            assert ch not in html, (path.name, f"U+{ord(ch):04X}")
    texts = {p.name: p.read_text(encoding="utf-8") for p in pages}
    assert SHOWN in texts["run.html"] and SHOWN in texts["diff.html"]
    assert "ad\\u200bmin" in texts["run.html"]
    assert "layer invoice-\\u202efdp.exe \\x1b[2J failed" in texts["run.html"]  # diagnostics
    assert any("bug\\u200bid" in t for t in texts.values())  # the finding's bug id
    svgs = re.findall(r"<svg.*?</svg>", texts["diff.html"], flags=re.DOTALL)
    assert any(SHOWN in s for s in svgs)  # chart labels built in Python, not a template


def test_change_table_shows_the_escapes() -> None:
    change = MetricChange(SPOOF, "generate", "activations_bytes", 1000.0, 1500.0, 500.0, 50.0,
                          ChangeKind.REGRESSED, "+3%", True, "B", "lower", note="\u200bnote")
    text = format_table(DiffReport(base="2.2.0", head="3.0.0", changes=[change],
                                   only_base=[(SPOOF, "generate")]))
    assert f"{SHOWN} [generate]" in text and f"only in 2.2.0: {SHOWN} [generate]" in text
    assert "\\u200bnote" in text
    assert not any(ch in text for ch in HIDDEN)


def test_terminal_summary_and_failure_table_show_the_escapes(
        pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path,
        tmp_path: Path) -> None:
    failing = SIMPLE_CASE + "    [expect]\n    activations_bytes = { max = 1 }\n"
    corpus = make_corpus({SPOOF: failing})
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(fake_installs), "--stedge-db",
        str(tmp_path / "db.duckdb"), "--stedge-version", "4.0.1", "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}")
    out = result.stdout.str()
    summary = out[out.index("stedge summary"):]
    assert SHOWN in summary and "\u202e" not in summary  # case table, failed items, and
    assert re.search(rf"FAILED \S*{re.escape(SHOWN)}/case.toml::generate\[4.0.1\]", summary)
    failure = out[out.index("= FAILURES ="):out.index("stedge summary")]
    assert f"{SHOWN} generate[4.0.1]: 1 metric missed their expectations." in failure
    assert "\u202e" not in failure

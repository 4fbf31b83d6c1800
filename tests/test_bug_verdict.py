"""One verdict per (bug, version): only the bug's evidence decides (its reproducers, the cases
that list it, its scope); a signature matching elsewhere is a similar signature, listed
apart. The terminal, the run report, the matrix and the bug pages say the same thing."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_stedge.bugs.registry import load_bug
from pytest_stedge.bugs.verdict import bug_verdict, what_would_fill
from pytest_stedge.report import render_dashboard, render_run_report
from pytest_stedge.store.database import Store

PROJECT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class F:
    bug_id: str
    status: str
    case_name: str
    stage: str = "generate"
    version: str = "4.0.0"
    run_id: int = 1
    group_run: int = 0
    reproducer: bool = False


def test_only_the_evidence_decides_and_similar_matches_are_apart() -> None:
    findings = [
        F("b", "not-reproduced", "repro"),
        F("b", "reproduced", "blazeface"),  # a match on another model
        F("b", "reproduced", "mobilenet"),
        F("b", "not-reproduced", "other"),  # a non-match elsewhere says nothing
    ]
    verdict = bug_verdict(findings, ["repro"])
    assert verdict.status == "not-reproduced" and verdict.text == "not reproduced"
    assert verdict.deciding is not None and verdict.deciding.case_name == "repro"
    assert verdict.similar_cases() == ["blazeface", "mobilenet"]
    # the bug page: 44 "reproduced" rows elsewhere never make the version reproduced
    assert bug_verdict([F("b", "reproduced", f"m{i}") for i in range(44)], ["repro"]).status == "not-run"


def test_a_case_in_the_bugs_scope_is_evidence_and_the_newest_run_decides() -> None:
    findings = [
        F("b", "reproduced", "x", run_id=1, reproducer=True),  # stored in scope
        F("b", "not-reproduced", "x", run_id=2, reproducer=True),
        F("b", "reproduced", "y", run_id=2),  # similar, in the deciding run
        F("b", "reproduced", "z", run_id=1),  # similar, an older run: not listed
    ]
    verdict = bug_verdict(findings, [])
    assert (verdict.status, verdict.run_id, verdict.similar_cases()) == ("not-reproduced", 2, ["y"])
    # reproduced wins over not reproduced in one run; shards of one pipeline are one run
    both = [F("b", "not-reproduced", "a", run_id=3, group_run=5, reproducer=True),
            F("b", "reproduced", "c", run_id=5, reproducer=True),
            F("b", "unknown", "d", run_id=4, reproducer=True)]
    verdict = bug_verdict(both, [])
    assert (verdict.status, verdict.run_id) == ("reproduced", 5)
    assert [f.case_name for f in verdict.evidence] == ["a", "c"]
    assert verdict.deciding is not None and verdict.deciding.case_name == "c"  # the reproduced one
    nothing = bug_verdict([], ["r"])
    assert (nothing.status, nothing.run_id, nothing.deciding) == ("not-run", 0, None)
    only_unknown = bug_verdict([F("b", "unknown", "a", reproducer=True)], [])
    assert only_unknown.status == "unknown" and only_unknown.deciding is not None


def test_not_run_says_what_would_fill_it() -> None:
    text = what_would_fill(["mtcnn-rnet/int8", "mtcnn-onet/int8"], "2.1.0")
    assert "run mtcnn-rnet/int8, mtcnn-onet/int8 with stedgeai 2.1.0" in text
    assert "stedge ingest DIR --version 2.1.0 --case mtcnn-rnet/int8" in text
    four = what_would_fill(["a", "b", "c", "d"], "4.0.1")
    assert "run a, b, c (or 1 more) with stedgeai 4.0.1" in four
    assert "run a, b, c with" in what_would_fill(["a", "b", "c"], "4.0.1")
    assert "no reproducer case is named" in what_would_fill([], "4.0.1")


def test_scope_names_a_model_family_in_the_bug_file(tmp_path: Path) -> None:
    bug = tmp_path / "b.toml"
    bug.write_text(
        'id = "b"\ntitle = "t"\nsource = "s"\naffected = "unknown"\nstatus = "open"\n'
        'reproducers = ["r"]\nsignature = "epochs_sw > 0"\n'
        'scope = { cases = ["n6-micro-*"], markers = ["prelu"] }\n'
        'links = [{ title = "t", url = "https://example.org/t" }]\n', encoding="utf-8")
    loaded = load_bug(bug)
    assert loaded.in_scope("r") and loaded.in_scope("n6-micro-conv2d-1x1/devcloud")
    assert loaded.in_scope("mtcnn", ["prelu"]) and not loaded.in_scope("mtcnn", ["n6"])
    assert not loaded.in_scope("n6-blazeface-128/allmems-o3")


# -- the four views of one store agree ------------------------------------------------------


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """`pytest corpus/real` replayed (no install) into a fresh store: its terminal, its run
    report and the dashboard built from that store."""
    root = tmp_path_factory.mktemp("verdict")
    db = root / "results.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROJECT / "corpus" / "real"), "--stedge-db", str(db),
         "-p", "no:cacheprovider", f"--rootdir={root}", "--stedge-report", str(root / "run.html")],
        capture_output=True, text=True, cwd=root, timeout=600, check=False,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    assert done.returncode == 0, done.stdout[-3000:]
    with Store.open(db, create=False) as store:
        render_run_report(store, 1, root / "run-again.html")
        render_dashboard(store, root / "site", bugs_dir=PROJECT / "corpus" / "bugs")
    return {"terminal": done.stdout, "run": root / "run.html", "site": root / "site"}


def _terminal_statuses(out: str) -> dict[tuple[str, str], str]:
    section = out[out.index("known bugs (only a bug's reproducers decide"):]
    lines = section.splitlines()[2:]
    statuses = {}
    for line in lines:
        if not line.startswith("  "):
            break
        match = re.match(r"  (\S+)\s+(\S+)\s+(reproduced|not reproduced|unknown|not run)\b", line)
        assert match, line
        statuses[(match[1], match[2])] = match[3].replace(" ", "-")
    return statuses


def _marked(page: str, pattern: str) -> dict[tuple[str, str], str]:
    return {(html.unescape(b), html.unescape(v)): s for b, v, s in re.findall(pattern, page)}


def test_terminal_run_report_matrix_and_bug_pages_agree(replayed: dict[str, object]) -> None:
    terminal = _terminal_statuses(str(replayed["terminal"]))
    run = _marked(Path(str(replayed["run"])).read_text(encoding="utf-8"),
                  r'<tr data-bug="([^"]+)" data-version="([^"]+)" data-status="([^"]+)">')
    site = Path(str(replayed["site"]))
    cell = r'<td class="cell [^"]*" data-bug="([^"]+)" data-version="([^"]+)" data-status="([^"]+)"'
    matrix = _marked((site / "matrix.html").read_text(encoding="utf-8"), cell)
    pages: dict[tuple[str, str], str] = {}
    for page in (site / "bugs").glob("*.html"):
        pages.update(_marked(page.read_text(encoding="utf-8"), cell))
    # the figures: the 1x1 bug is not reproduced in 2.2.0 and reproduced in 4.0.0
    assert terminal[("n6-conv1x1-activations-4.0.0", "2.2.0")] == "not-reproduced"
    assert terminal[("n6-conv1x1-activations-4.0.0", "4.0.0")] == "reproduced"
    assert terminal[("n6-conv7x7-board-timeout-4.0.0", "2.2.0")] == "not-reproduced"
    assert run == {k: v for k, v in terminal.items()}
    assert pages == matrix
    for key, status in matrix.items():
        assert terminal.get(key, "not-run") == status, key
    assert set(terminal) <= set(matrix)
    # a version where only other models matched is not run on every page
    assert matrix[("dw-stride2-stall", "4.0.0")] == "not-run"
    assert "similar signature" in str(replayed["terminal"])


def test_similar_signatures_are_collapsed_apart_on_the_bug_page(replayed: dict[str, object]) -> None:
    site = Path(str(replayed["site"]))
    page = next((site / "bugs").glob("npu-hang-activ-conv-*.html")).read_text(encoding="utf-8")
    evidence = page[page.index('id="history"'):page.index('<details class="similar"')]
    assert "n6-micro-conv2d-32f-7x7" not in evidence  # the 7x7 timeouts are not its evidence
    similar = page[page.index('<details class="similar"'):page.index("</details>")]
    assert "n6-micro-conv2d-32f-7x7/devcloud" in similar
    assert "<details class=\"similar\" id=\"similar\">" in page  # collapsed: no `open`
    run = Path(str(replayed["run"])).read_text(encoding="utf-8")
    assert run.count('<span class="badge k-not-comparable">matched elsewhere</span>') == 0
    assert '<details class="similar">' in run

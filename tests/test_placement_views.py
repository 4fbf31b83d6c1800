"""Software and hybrid epochs wherever they appear (issue 27b): the operator atlas, the
case pages, the diff page, the changes page and the terminal's baseline section.

Figures are the real tool's, recounted here straight from the report files of
../shared (a regex over their epoch rows, not the product's parsers), so the pages are
checked against the reports, not against themselves. No two versions in ../shared move
an operator of one model, so the moves use the two real blazeface Results of 2.2.0
under two Neural-ART profiles as base and head (DequantizeLinear: SW 4 -> 3, hybrid
0 -> 1, epoch 76), as tests/test_placement.py does for ``stedge diff``.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.parsers.epoch_kinds import HYBRID_TEXT

PROJECT = Path(__file__).resolve().parents[1]
SHARED = PROJECT.parent / "shared"
REAL = SHARED / "real-cases"
BLAZEFACE = REAL / "n6-blazeface-2profiles"
YOLO = REAL / "n6-yolo-micro-onnx"

pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason="../shared/real-cases is absent: the pages are checked against "
    "the real epoch tables there")


def _text(page: Path) -> str:
    """The page's visible text, tags dropped, entities decoded, spaces collapsed."""
    raw = page.read_text(encoding="utf-8")
    raw = re.sub(r"<(style|script)\b.*?</\1>", " ", raw, flags=re.DOTALL)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


def _v2_sw_rows(report: Path, op: str) -> int:
    """``epoch N -SW- (op)`` rows of a 2.x text report."""
    text = report.read_text(encoding="utf-8", errors="replace")
    return len(re.findall(rf"epoch\s+\d+\s+-SW-\s+\(\s*{re.escape(op)}\s*\)", text))


def _v4_rows(report: Path, kind: str, op: str) -> int:
    """``| epoch_N | Kind | op |`` rows of a 4.x boxed table."""
    text = report.read_text(encoding="utf-8", errors="replace")
    return len(re.findall(rf"\|\s*epoch_\d+\s*\|\s*{kind}\s*\|\s*{re.escape(op)}\s*\|", text))


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pytest corpus/real` replayed into a fresh store, then the dashboard."""
    from pytest_stedge.report import render_dashboard
    from pytest_stedge.store.database import Store

    root = tmp_path_factory.mktemp("atlas")
    db = root / "results.duckdb"
    subprocess.run(
        # the hand-chosen real cases, whose reports the counts below are read from (the
        # public replays under corpus/real/public add runs of other models)
        [sys.executable, "-m", "pytest", str(PROJECT / "corpus" / "real"), "--stedge-db", str(db),
         f"--ignore={PROJECT / 'corpus' / 'real' / 'public'}",
         "-p", "no:cacheprovider", f"--rootdir={root}", "--stedge-report", "none", "-q"],
        capture_output=True, text=True, cwd=root, check=True,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    with Store.open(db, create=False) as store:
        return render_dashboard(store, root / "site", bugs_dir=PROJECT / "corpus" / "bugs").parent


def _atlas_cells(site: Path) -> dict[str, list[str]]:
    """operator -> its cells' text, one per version column (the table as a reader sees it)."""
    raw = (site / "atlas.html").read_text(encoding="utf-8")
    table = raw[raw.index('<table class="sortable atlas"'):raw.index("</table>")]
    heads = [html.unescape(h) for h in re.findall(r"<th>([^<]*)</th>", table)]
    out = {"": heads[1:]}
    for row in re.findall(r"<tr><td><b>(.*?)</b></td>(.*?)</tr>", table, flags=re.DOTALL):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row[1], flags=re.DOTALL)
        out[html.unescape(row[0])] = [
            re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", c))).strip() for c in cells]
    return out


def test_atlas_counts_are_the_real_reports(real_site: Path) -> None:
    cells = _atlas_cells(real_site)
    versions = cells[""]
    assert versions == ["2.1.0", "2.2.0", "3.0.0", "4.0.1"]

    def cell(op: str, version: str) -> str:
        return cells[op][versions.index(version)]

    # blazeface 2.2.0, two profiles: each report lists 22 `-SW- (Transpose)` rows
    transposes = sum(_v2_sw_rows(report, "Transpose") for report in (
        BLAZEFACE / "2.2.0-n6-allmems-O3-cubemx" / "network_generate_report.txt",
        BLAZEFACE / "2.2.0-profile-default-cli" / "generate-2025-08-25"
        / "network_generate_report.txt"))
    assert transposes == 44
    assert f"SW {transposes}" in cell("Transpose", "2.2.0")
    # yolov8n and yolov11n 4.0.1: Concat only in hybrid epochs (5 + 3 rows `| Hybrid | Concat |`)
    concat = sum(_v4_rows(p, "Hybrid", "Concat") for p in YOLO.glob("*/4.0.1-aistudio/*.txt"))
    assert concat == 8 and cell("Concat", "4.0.1") == f"hybrid {concat}"
    softmax = sum(_v4_rows(p, "SW", "Softmax") for p in YOLO.glob("*/4.0.1-aistudio/*.txt"))
    assert f"SW {softmax}" in cell("Softmax", "4.0.1") and softmax == 3
    # the float Sub is its own row, apart from the integer Sub of the c_info HW epochs
    assert cell("Sub(float)", "4.0.1") == "SW 2" and "HW" in cell("Sub", "2.2.0")
    assert cell("Concat", "2.2.0") == "—"
    text = _text(real_site / "atlas.html")
    assert HYBRID_TEXT in text
    assert 'a missing HW count means "not named", not "never on the NPU"' in text


def test_atlas_links_reach_the_evidence_rows(real_site: Path) -> None:
    raw = (real_site / "atlas.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+)"', raw)
    local = [h for h in links if not h.startswith("https://")]
    public = [h for h in links if h.startswith("https://")]
    assert len(local) > 40 and public
    for href in local:
        path, _, anchor = href.partition("#")
        target = real_site / path if path else real_site / "atlas.html"
        assert target.is_file(), href
        if anchor:
            assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), href
    # a replayed run links the public file it was read from (repository at a commit)
    assert all(re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", u) for u in public)
    # Concat 4.0.1: the two yolo runs, each linked to its 4.0.1 row on its case page
    section = raw[raw.index('>Concat <span class="muted">· 4.0.1'):]
    section = section[:section.index("</ul>")]
    assert [html.unescape(n) for n in re.findall(r'<a href="cases/[^"]+">([^<]+)</a>', section)] \
        == ["n6-yolo11n-micro-224", "n6-yolov8n-micro-224"]
    assert "yolov8n_micro_224.txt</a>" in section


def test_case_page_lists_software_and_hybrid_operators_apart(real_site: Path) -> None:
    page = next((real_site / "cases").glob("n6-yolov8n-micro-224-*.html"))
    text = _text(page)
    report = YOLO / "yolov8n_micro_224" / "4.0.1-aistudio" / "yolov8n_micro_224.txt"
    hybrid_ids = [int(i) for i in re.findall(r"\|\s*epoch_(\d+)\s*\|\s*Hybrid\s*\|",
                                               report.read_text(encoding="utf-8"))]
    assert hybrid_ids == [52, 53, 62, 64, 94, 108, 111, 113]
    # the generate run of the AI Studio log (its validate run prints no epoch table)
    row = re.search(r"4\.0\.1 generate 5 (.*?) 8 (.*?) ([\d, ]+) \?\? =", text)
    assert row is not None, text[-800:]
    assert row.group(1) == "DequantizeLinear, QuantizeLinear, Softmax, Sub"
    assert row.group(2) == "Concat, DepthToSpace, Transpose"
    assert [int(i) for i in row.group(3).split(",")] == hybrid_ids
    assert f"?? = {HYBRID_TEXT}" in text


def _blazeface_store(db: Path, *, head_options: str = "o1") -> dict[str, Any]:
    """The two real blazeface Results stored as versions 2.2.0 (profile-default) and
    2.2.1 (n6-allmems-O3)."""
    from pytest_stedge.parsers import parse_path
    from pytest_stedge.result import flat_metrics
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.rows import ItemRow

    results = {
        "2.2.0": dict(parse_path(BLAZEFACE / "2.2.0-profile-default-cli" / "generate-2025-08-25")),
        "2.2.1": dict(parse_path(BLAZEFACE / "2.2.0-n6-allmems-O3-cubemx")),
    }
    with Store.open(db) as store:
        for version, result in results.items():
            run = store.begin_run(argv=["pytest"], versions=[version])
            store.add_items(run, [ItemRow(
                nodeid=f"corpus/blazeface::generate[{version}]", case_name="blazeface <b>",
                stage="generate", version=version, outcome="passed", model_sha256="m1",
                options_hash="o1" if version == "2.2.0" else head_options,
                metrics=flat_metrics(result), result=result)])
            store.finish_run(run, status="passed", exitstatus=0)
    return results


def test_diff_page_lists_moves_by_operator_and_explains_hybrid(tmp_path: Path) -> None:
    from pytest_stedge.report import render_diff_page
    from pytest_stedge.store.database import Store
    from pytest_stedge.verdict.store_diff import diff_store

    _blazeface_store(tmp_path / "db.duckdb")
    with Store.open(tmp_path / "db.duckdb", create=False) as store:
        page = render_diff_page(diff_store(store, "2.2.0", "2.2.1"), store, tmp_path / "d.html")
    raw = page.read_text(encoding="utf-8")
    assert "blazeface <b>" not in raw and "blazeface &lt;b&gt;" in raw
    text = _text(page)
    assert ("software <-> hybrid DequantizeLinear blazeface <b> generate 4 → 3 0 → 1"
            in text)
    # the moved row links the case's table on the same page
    anchor = re.search(r'<td><b>DequantizeLinear</b></td><td><a href="#([^"]+)">', raw)
    assert anchor and f'id="{anchor.group(1)}"' in raw
    # SW and hybrid operators apart, with the hybrid epoch's id (c_info: epoch 76)
    assert ("2.2.1 26 DequantizeLinear, QuantizeLinear, Transpose 1 DequantizeLinear 76"
            in text)
    assert "2.2.0 27 DequantizeLinear, QuantizeLinear, Transpose 0" in text
    assert f"?? = {HYBRID_TEXT}" in text


def test_changes_page_lists_moves_between_consecutive_versions(tmp_path: Path) -> None:
    from pytest_stedge.report import render_dashboard
    from pytest_stedge.store.database import Store

    _blazeface_store(tmp_path / "db.duckdb", head_options="o2")
    with Store.open(tmp_path / "db.duckdb", create=False) as store:
        site = render_dashboard(store, tmp_path / "site", bugs_dir=None).parent
    raw = (site / "changes.html").read_text(encoding="utf-8")
    text = _text(site / "changes.html")
    # options hash differs: listed, and marked not comparable as the metrics are
    assert ("software <-> hybrid DequantizeLinear blazeface <b> generate 4 → 3 0 → 1 "
            "not comparable: options differ (hash o1 -> o2; the options are not stated)") in text
    href = re.search(r'<td><b>DequantizeLinear</b></td><td><a href="([^"]+)">', raw)
    assert href is not None
    path, _, anchor = href.group(1).partition("#")
    target = (site / path).read_text(encoding="utf-8")
    assert re.search(rf'<tr id="{anchor}"><td>2\.2\.1</td><td>generate</td>', target)
    # the case page: both versions' rows, hybrid epoch 76 named
    assert "2.2.1 generate 26 DequantizeLinear, QuantizeLinear, Transpose 1 DequantizeLinear 76" \
        in _text(site / path)


def test_terminal_baseline_section_lists_moves_by_operator(pytester: pytest.Pytester) -> None:
    from pytest_stedge.parsers import parse_path

    results = {
        "2.2.0": parse_path(BLAZEFACE / "2.2.0-profile-default-cli" / "generate-2025-08-25"),
        "2.2.1": parse_path(BLAZEFACE / "2.2.0-n6-allmems-O3-cubemx"),
    }
    case = pytester.path / "corpus" / "blazeface"
    case.mkdir(parents=True)
    sha = "e803bb4e93b10f7a19d4243bcc39698599a723f3128e19d3f90e0b1c0bc88dd8"
    (case / "case.toml").write_text(
        'target = "stm32n6"\nstages = ["generate"]\n'
        f'model = {{ file = "blazeface.tflite", sha256 = "{sha}", source = '
        '"https://github.com/muazzamaqeel/BA-EmbeddedAI" }\n', encoding="utf-8")
    runs = [{"case": "blazeface", "stage": "generate", "version": v, "model_sha256": sha,
             "options": [], "options_hash": "o1", "result": dict(r),
             "provenance": {"files": []}} for v, r in results.items()]
    (case / "recordings.json").write_text(json.dumps(
        {"schema": "stedge.recordings/1", "runs": runs}), encoding="utf-8")
    result = pytester.runpytest_subprocess(
        str(pytester.path / "corpus"), "--stedge-db", str(pytester.path / "db.duckdb"),
        "--stedge-report", "none", "-p", "no:cacheprovider", f"--rootdir={pytester.path}")
    out = result.stdout.str()
    assert ("operators moved between the NPU and the Cortex-M55 against baseline 2.2.0 "
            "(2.2.1):") in out
    assert ("  software <-> hybrid: DequantizeLinear: blazeface generate (SW 4 -> 3, "
            "hybrid 0 -> 1)") in out
    # beside the metric table of the same pair, which the gate classifies as ever
    assert "stedge diff 2.2.0 -> 2.2.1" in out
    assert out.index("stedge diff 2.2.0 -> 2.2.1") < out.index("operators moved between")
    # a second session gating 2.2.1 against the baseline stored by the first
    again = pytester.runpytest_subprocess(
        str(pytester.path / "corpus"), "--stedge-db", str(pytester.path / "db.duckdb"),
        "--stedge-report", "none", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        "--stedge-version", "2.2.1", "--stedge-baseline", "2.2.0").stdout.str()
    assert ("  software <-> hybrid: DequantizeLinear: blazeface generate (SW 4 -> 3, "
            "hybrid 0 -> 1)") in again


def test_unnamed_hybrid_epochs_never_read_as_a_move() -> None:
    """A 2.x text report alone prints its hybrid epoch as a bare ``??``; its c_info names
    it DequantizeLinear. Read with and without the c_info, the same run must not show an
    operator moving to software unremarked."""
    from pytest_stedge.parsers import parse_file, parse_path
    from pytest_stedge.parsers.epoch_kinds import UNNAMED, op_counts, placement_moves
    from pytest_stedge.verdict.placement import counted_moves

    folder = BLAZEFACE / "2.2.0-n6-allmems-O3-cubemx"
    text_only = dict(parse_file(folder / "network_generate_report.txt"))["epochs"]
    both = dict(parse_path(folder))["epochs"]
    assert op_counts(text_only)[UNNAMED] == {"sw": 0, "hybrid": 1}
    moves = placement_moves(text_only, both)
    assert {(m["op"], m["kind"]) for m in moves} == {
        ("DequantizeLinear", "to software"), (UNNAMED, "to hardware")}
    change = counted_moves("c", "generate", {"model_sha256": "m", "options_hash": "o",
                                             "counts": op_counts(text_only)},
                           {"model_sha256": "m", "options_hash": "o", "counts": op_counts(both)})
    assert change is not None
    assert change["unnamed"] == "base: 1 SW/hybrid epoch names no operator"
    # no epoch table on one side: nothing can have moved
    assert placement_moves(None, both) == [] and placement_moves(both, {}) == []


def test_atlas_escapes_names_and_links_only_https(tmp_path: Path) -> None:
    from pytest_stedge.report.atlas import build_atlas
    from pytest_stedge.report.render import render
    from pytest_stedge.store.placement_reads import EpochRow, _sources

    evil = '<img src=x onerror="alert(1)">'
    row = EpochRow(run_id=1, case_name=f"case {evil}", stage="generate", version="2.2.0",
                   model_sha256=None, options_hash=None, recorded=True,
                   epochs={"sw": 1, "list": [{"id": 1, "kind": "sw", "ops": [evil]}]},
                   sources=_sources(json.dumps({"files": [
                       {"url": "javascript:alert(1)"}, {"url": "https://example.org/r.txt"}]})))
    page = build_atlas([(row, "cases/x.html#v-1")], {"2.2.0": 0})
    out = render("atlas.html.j2", tmp_path / "atlas.html", page=page, title="t", root="")
    raw = out.read_text(encoding="utf-8")
    assert "<img" not in raw and "&lt;img src=x" in raw
    assert "javascript:" not in raw and 'href="https://example.org/r.txt"' in raw
    assert page.rows[0].cells[0] is not None and page.rows[0].cells[0].counts["sw"] == 1

"""The public runs shipped as data (corpus/real): recorded from ../shared, replayed by
`pytest corpus` version after version, and shown on the dashboard.

Figures checked here come from ../shared/real-cases/INDEX.md and the tool's own logs
(the issue quotes them), not from the recordings themselves.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_html_reports import Page

from pytest_stedge.case.load import load_cases
from pytest_stedge.errors import CaseError
from pytest_stedge.report import render_dashboard, render_run_report
from pytest_stedge.store.database import Store

PROJECT = Path(__file__).resolve().parents[1]
REAL = PROJECT / "corpus" / "real"


def _runs(case: str) -> list[dict[str, Any]]:
    return json.loads((REAL / case / "recordings.json").read_text(encoding="utf-8"))["runs"]


def test_the_recordings_are_what_the_script_writes_from_shared(shared_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REAL / "record.py"), "--shared", str(shared_dir), "--check"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 21 hand-chosen cases of real-cases and 89 of public-runs and stedgeai-samples, two files each
    assert "220 of 220 files up to date" in proc.stdout


def test_recordings_hold_figures_and_provenance_not_the_tools_prose() -> None:
    runs = {(r["case"], r["version"]): r for r in _runs("n6-mobilenetv2-128-qdq")}
    # INDEX.md: c_info weights 367,233 / 367,201 / 212,609 B, activations 245,760 B
    weights = [runs[("n6-mobilenetv2-128-qdq", v)]["result"]["memory"]["weights_bytes"]
               for v in ("2.1.0", "2.2.0", "3.0.0")]
    assert weights == [367_233, 367_201, 212_609]
    first = runs[("n6-mobilenetv2-128-qdq", "2.1.0")]
    files = first["provenance"]["files"]
    assert {f["repository"] for f in files} == {"https://github.com/AlexGraefe/STM32N6Example"}
    assert all(f["commit"] == "8becbb20eb0643f4fff7197f44ec6bf554ae4e9b" for f in files)
    assert all(len(f["md5"]) == 32 for f in files)
    # the source model was never published: only the md5 the tool printed identifies it
    assert first["model_sha256"] == "md5:dae521fe100a352ff90af6e09847bc7f"
    for case in REAL.glob("*/recordings.json"):
        for run in json.loads(case.read_text(encoding="utf-8"))["runs"]:
            assert "sources" not in run["result"]
            assert all("message" not in d for d in run["result"].get("diagnostics", []))


def test_a_record_only_case_names_its_model_by_hash_and_source() -> None:
    cases = {c.name: c for c in load_cases(REAL / "n6-micro-conv2d-1x1" / "case.toml")}
    case = cases["n6-micro-conv2d-1x1/devcloud"]
    assert case.record_only and not case.model.exists()
    assert case.model_source is not None
    assert case.model_source.md5 == "c85b2bb91859d1e1ee80a4c3da77ff3d"  # the logs' model_hash
    assert case.model_source.source.startswith("https://github.com/Magnus3327/")
    assert case.model_sha256() == case.model_source.sha256


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('{ file = "m.onnx", source = "https://x.org/m" }', "model"),
        ('{ file = "m.onnx", md5 = "xyz", source = "https://x.org/m" }', "model.md5"),
        ('{ file = "m.onnx", md5 = "' + "a" * 32 + '", source = "ftp://x/m" }', "model.source"),
        ('{ file = "../m.onnx", md5 = "' + "a" * 32 + '", source = "https://x.org/m" }', "model.file"),
        ('{ file = "m.onnx", md5 = "' + "a" * 32 + '", source = "https://x.org/m", url = 1 }',
         "model.url"),
    ],
)
def test_a_malformed_model_table_names_the_file_and_key(tmp_path: Path, table: str, key: str) -> None:
    folder = tmp_path / "corpus" / "c"
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(f'target = "stm32n6"\nmodel = {table}\n', encoding="utf-8")
    with pytest.raises(CaseError) as err:
        load_cases(folder / "case.toml")
    assert err.value.key == key and str(folder / "case.toml") in str(err.value)


def _replay(pytester: pytest.Pytester, db: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        str(REAL), "--stedge-db", str(db), "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        "--stedge-report", str(db.parent / "run.html"), "-rsx", *args,
    )


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`pytest corpus/real` on a machine without any install, into a fresh store."""
    root = tmp_path_factory.mktemp("replay")
    db = root / "results.duckdb"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(REAL), "--stedge-db", str(db), "-p", "no:cacheprovider",
         f"--rootdir={root}", "--stedge-report", str(root / "run.html"), "-rsx"],
        capture_output=True, text=True, cwd=root, check=False,
        env={**__import__("os").environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    return {"root": root, "db": db, "out": proc.stdout, "rc": proc.returncode}


def test_replay_reports_the_conv1x1_activation_regression_with_its_figures(
    replayed: dict[str, Any],
) -> None:
    out = replayed["out"]
    assert replayed["rc"] == 0, out[-3000:]  # every regression is a known finding: xfailed
    assert "stedge diff 2.2.0 -> 4.0.0:" in out
    # Each Developer Cloud log holds a generate and the validate on the board: the memory
    # figures are the generate run's, replayed as its own stage.
    block = out[out.index("n6-micro-conv2d-1x1/devcloud [generate]"):]
    first = block.splitlines()[2]
    # Developer Cloud logs: 12,320 B (2.2.0-20266) -> 143,360 B (4.0.0-20500), x11.6
    assert first.split() == ["activations_bytes", "12,320", "143,360", "+131,040", "(+1063.6%)",
                             "REGRESSED", "0"]
    assert ("n6-micro-conv2d-1x1/case.toml::generate[devcloud-4.0.0]"
            " - known bug n6-conv1x1-activations-4.0.0") in out
    # improvements are listed too: depthwise 3x3 activations 24,576 -> 12,291 B, 3 -> 1 epochs
    depthwise = out[out.index("n6-micro-depthwise-3x3/devcloud [generate]"):]
    lines = [line.split() for line in depthwise.splitlines()[:12]]
    assert ["activations_bytes", "24,576", "12,291", "-12,285", "(-50.0%)", "improved", "0"] in lines
    assert ["epochs_total", "3", "1", "-2", "(-66.7%)", "improved", "0"] in lines


def test_replay_gates_only_comparable_pairs(replayed: dict[str, Any]) -> None:
    out = replayed["out"]
    # MobileNetV2 224: another file revision (ir_version byte) and another profile in 4.0.1
    block = out[out.index("n6-mobilenetv2-224-int8 [generate]"):]
    weights = next(line for line in block.splitlines() if line.strip().startswith("weights_bytes"))
    assert "4,137,361" in weights and "3,669,793" in weights and "not comparable" in weights
    # which model and which options, in words
    assert ("model differs: sha256 fbf0937b… -> sha256 37455b0b…; options differ: --c-api (none) "
            "-> st-ai; --st-neural-art n6-extflash -> user_profile") in weights
    # 2.1.0 -> 2.2.0 of the 128 QDQ MobileNetV2: the same profile, weights -32 B
    assert "stedge diff 2.1.0 -> 2.2.0: 1 improved" in out


def test_record_only_oracle_skips_saying_what_to_download(replayed: dict[str, Any]) -> None:
    out = replayed["out"]
    assert "record-only case: the corpus does not ship its model model_npu_int8.onnx" in out
    assert "--stedge-models DIR" in out


def test_record_only_oracle_runs_on_the_model_found_by_hash(
    pytester: pytest.Pytester, shared_dir: Path, tmp_path: Path
) -> None:
    result = pytester.runpytest_subprocess(
        str(REAL / "n6-m55-tcn-text"), "--stedge-models", str(shared_dir / "real-cases"),
        "--stedge-db", str(tmp_path / "db.duckdb"), "--stedge-report", "none",
        "-p", "no:cacheprovider", f"--rootdir={pytester.path}", "-v",
    )
    result.stdout.fnmatch_lines(["*case.toml::oracle PASSED*"])
    with Store.open(tmp_path / "db.duckdb", create=False) as store:
        run = store.get_run(1)
    generate = next(i for i in run["items"] if i["stage"] == "generate")
    # 4.0.0 reports 23,936 B for the TCN (INDEX.md); the oracle's bound of the real model
    # now sits beside it, so the ratio exists and a correct tool is at or above the floor
    assert generate["metrics"]["activations_bytes"] == 23_936
    assert generate["metrics"]["activations_ratio"] >= 1.0


def test_dashboard_and_run_report_agree_on_every_finding(replayed: dict[str, Any], tmp_path: Path) -> None:
    with Store.open(replayed["db"], create=False) as store:
        index = render_dashboard(store, tmp_path / "site", bugs_dir=PROJECT / "corpus" / "bugs")
        run = render_run_report(store, 1, tmp_path / "run.html")
    html = (index.parent / "matrix.html").read_text(encoding="utf-8")
    head = re.search(r"<thead><tr><th>bug</th>(.*?)</tr></thead>", html)
    assert head is not None
    versions = re.findall(r"<th>([^<]+)</th>", head.group(1))
    cells: dict[tuple[str, str], str] = {}
    for bug_id, row in re.findall(r'<tr><th><a href="bugs/[^"]+">([^<]+)</a>(.*?)</tr>', html, re.DOTALL):
        statuses = re.findall(r'data-status="([^"]+)"', row)
        assert len(statuses) == len(versions)
        cells.update({(bug_id, v): s for v, s in zip(versions, statuses)})
    assert cells[("n6-conv1x1-activations-4.0.0", "2.2.0")] == "not-reproduced"
    assert cells[("n6-conv1x1-activations-4.0.0", "4.0.0")] == "reproduced"
    assert cells[("n6-conv7x7-board-timeout-4.0.0", "4.0.0")] == "reproduced"
    report = Page(run).html
    table = report[report.index('id="bug-status"'):report.index("</table>", report.index('id="bug-status"'))]
    for line in table.split("<tr>")[2:]:
        cols = [c.split("<", 1)[0] for c in line.split("<td>")[1:]]
        bug_id, version = cols[0], cols[1]
        status = line.split('class="badge k-', 1)[1].split('"', 1)[0]
        assert cells[(bug_id, version)] == status, (bug_id, version)


def test_changes_page_lists_real_changes_largest_first(replayed: dict[str, Any], tmp_path: Path) -> None:
    with Store.open(replayed["db"], create=False) as store:
        index = render_dashboard(store, tmp_path / "site", bugs_dir=PROJECT / "corpus" / "bugs")
    page = Page(index.parent / "changes.html").all_text()
    regressions = page[page.index("2.2.0 → 4.0.0: regressed"):page.index("2.2.0 → 4.0.0: improved")]
    # the 1x1 conv's x11.6 is the largest regression of the release, listed first
    assert regressions.split("why", 1)[1].split()[:6] == [
        "n6-micro-conv2d-1x1/devcloud", "generate", "activations_bytes",
        "12,320", "B", "143,360"]
    bug = Page(next((index.parent / "bugs").glob("n6-conv1x1-activations-4.0.0-*.html")))
    assert "https://github.com/Magnus3327/stm32n6-edge-ai-benchmarks/blob/" in " ".join(bug.links())
    assert "n6-micro-conv2d-1x1/devcloud 4.0.0 143,360 B 225 B" in bug.all_text()


def test_replayed_runs_stand_beside_the_floor_of_their_own_deployment(
    shared_dir: Path, tmp_path: Path
) -> None:
    """With the models found by hash, every replayed run has its floor, from the
    deployment its command line states: no correct tool is below it."""
    db = tmp_path / "results.duckdb"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(REAL), "--stedge-db", str(db), "-p", "no:cacheprovider",
         f"--rootdir={tmp_path}", "--stedge-report", "none", "-W", "default",
         "--stedge-models", str(shared_dir / "real-cases")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
        env={**__import__("os").environ, "STEDGEAI_CORE_DIR": str(tmp_path / "no-install")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "deployed otherwise than its recordings" not in proc.stdout  # the cases say it
    with Store.open(db, create=False) as store:
        items = store.get_run(1)["items"]
    ratios = {
        (i["case_name"], i["version"]): i["metrics"]["activations_ratio"]
        for i in items
        if i["stage"] != "oracle" and "activations_ratio" in i["metrics"]
    }
    assert len(ratios) >= 45
    assert min(ratios.values()) >= 1.0, {k: v for k, v in ratios.items() if v < 1}
    # the N6 NPU floor of the 1x1 conv (input 12,288 B + output 32 B), not the software
    # path's: 2.2.0 reaches it, 4.0.0 allocates 143,360 B (INDEX.md, the Developer Cloud logs)
    assert ratios[("n6-micro-conv2d-1x1/devcloud", "2.2.0")] == 1.0
    assert ratios[("n6-micro-conv2d-1x1/devcloud", "4.0.0")] == pytest.approx(143_360 / 12_320)

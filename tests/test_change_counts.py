"""One change classification: on the replayed public runs, the terminal summary, `stedge
diff`, the run report and the dashboard's changes page count the same changes for the same
pairs of versions, and every "not comparable" says why in words."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import Store
from pytest_stedge.verdict.identity import not_comparable_reason, option_map

PROJECT = Path(__file__).resolve().parents[1]
KINDS = ("regressed", "newly failing", "improved", "fixed", "changed", "not comparable")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("counts")
    db = root / "results.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROJECT / "corpus" / "real"), "--stedge-db", str(db),
         "-p", "no:cacheprovider", f"--rootdir={root}", "--stedge-report", str(root / "run.html")],
        capture_output=True, text=True, cwd=root, timeout=600, check=False,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    assert done.returncode == 0, done.stdout[-3000:]
    site = root / "site"
    assert main(["dashboard", "--db", str(db), "--out", str(site),
                 "--corpus", str(PROJECT / "corpus")]) == 0
    return {"db": db, "terminal": done.stdout, "run": root / "run.html", "site": site}


def _terminal(out: str) -> dict[tuple[str, str], Counter[str]]:
    """``stedge diff A -> B: 4 regressed, 8 improved, ...`` lines of the summary."""
    counts: dict[tuple[str, str], Counter[str]] = {}
    for base, head, text in re.findall(r"^stedge diff (\S+) -> (\S+): (.*)$", out, re.MULTILINE):
        counts[(base, head)] = Counter({
            kind: int(n) for n, kind in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", text) if kind in KINDS
        })
    for base, head in re.findall(r"^baseline (\S+): \d+ metrics unchanged in (\S+)$", out, re.MULTILINE):
        counts[(base, head)] = Counter()
    return counts


def _table(page: Path) -> dict[tuple[str, str], Counter[str]]:
    text = page.read_text(encoding="utf-8")
    counts = {}
    for base, head, cells in re.findall(
        r'<tr data-base="([^"]+)" data-head="([^"]+)">(.*?)</tr>', text, re.DOTALL
    ):
        found = re.findall(r'<td class="n" data-kind="([^"]+)">(\d+)</td>', cells)
        counts[(html.unescape(base), html.unescape(head))] = Counter(
            {html.unescape(k): int(n) for k, n in found if int(n)})
    return counts


def _consecutive(db: Path) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(base, head) -> the (case, stage) whose stored versions follow each other there,
    read from the store's items (newest non-skipped), in release order."""
    from packaging.version import Version

    with Store.open(db, create=False, read_only=True) as store:
        rows = store.dicts(
            "SELECT DISTINCT case_name, stage, version FROM items "
            "WHERE version IS NOT NULL AND outcome <> 'skipped'"
        )
    by_key: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        by_key.setdefault((row["case_name"], row["stage"]), []).append(row["version"])
    pairs: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for key, versions in by_key.items():
        ordered = sorted(versions, key=Version)
        for base, head in itertools.pairwise(ordered):
            pairs.setdefault((base, head), set()).add(key)
    return pairs


def _diff(db: Path, base: str, head: str, keys: set[tuple[str, str]],
          capsys: pytest.CaptureFixture[str]) -> tuple[Counter[str], list[dict[str, object]]]:
    capsys.readouterr()
    main(["diff", base, head, "--db", str(db), "--json", "--corpus", str(PROJECT / "corpus")])
    doc = json.loads(capsys.readouterr().out)
    mine = [c for c in doc["changes"] if (c["case_name"], c["stage"]) in keys]
    return Counter(c["kind"] for c in mine if c["kind"] != "unchanged"), mine


def test_terminal_diff_run_report_and_dashboard_count_the_same_changes(
    replayed: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    db = Path(str(replayed["db"]))
    terminal = _terminal(str(replayed["terminal"]))
    dashboard = _table(Path(str(replayed["site"])) / "changes.html")
    run = _table(Path(str(replayed["run"])))
    consecutive = _consecutive(db)
    assert set(dashboard) <= set(consecutive)
    assert {p for p, keys in consecutive.items()} == set(terminal) == set(run)
    total = Counter[str]()
    for pair, keys in consecutive.items():
        diff, _ = _diff(db, *pair, keys, capsys)
        assert +terminal[pair] == diff, pair
        assert run[pair] == diff, pair
        assert dashboard.get(pair, Counter()) == diff, pair
        total += diff
    # the pairs: 2.2.0 -> 4.0.0 has regressions, improvements, HW/EC moves and
    # not-comparable metrics, all now on the dashboard too
    assert {k for k, n in dashboard[("2.2.0", "4.0.0")].items() if n} >= {
        "regressed", "improved", "changed", "not comparable"}
    assert total["regressed"] == 4
    # which: the figures of the recorded logs (Magnus3327/stm32n6-edge-ai-benchmarks, Developer
    # Cloud 2.2.0 and 4.0.0): 12,320 -> 143,360 B and 0.153 -> 0.288 ms, 1,323,008 ->
    # 1,585,152 B, 65 -> 129 B
    _, changes = _diff(db, "2.2.0", "4.0.0", consecutive[("2.2.0", "4.0.0")], capsys)
    assert sorted((c["case_name"], c["metric"], c["old"], c["new"]) for c in changes
                  if c["kind"] == "regressed") == [
        ("n6-micro-conv2d-1x1/devcloud", "activations_bytes", 12320, 143360),
        ("n6-micro-conv2d-1x1/devcloud", "duration_ms", 0.153, 0.288),
        ("n6-micro-conv2d-32f-7x7/devcloud", "activations_bytes", 1323008, 1585152),
        ("n6-micro-depthwise-3x3/devcloud", "weights_bytes", 65, 129),
    ]


def test_noisy_bands_keep_a_validation_wobble_out_of_the_regressions(
    replayed: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """1x1 conv, Developer Cloud 2.2.0 -> 4.0.0: val_cos 1 -> 0.999999 is inside the
    built-in +0.001 band: unchanged on every page (changes.html used band 0 for it)."""
    db = Path(str(replayed["db"]))
    keys = {("n6-micro-conv2d-1x1/devcloud", "validate-target"),
            ("n6-micro-conv2d-1x1/devcloud", "generate")}  # the log's two runs
    _counts, changes = _diff(db, "2.2.0", "4.0.0", keys, capsys)
    kinds = {(c["stage"], c["metric"]): c["kind"] for c in changes}
    assert kinds[("generate", "activations_bytes")] == "regressed"
    assert kinds[("validate-target", "val_cos")] == "unchanged"
    page = (Path(str(replayed["site"])) / "changes.html").read_text(encoding="utf-8")
    assert not re.search(r"n6-micro-conv2d-1x1/devcloud</a></td><td>validate-target</td><td>val_cos</td>", page)


def test_not_comparable_says_which_options_or_model(
    replayed: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    db = Path(str(replayed["db"]))
    # MobileNetV2-224: another file (ir_version 9 vs 10) and other options (CubeMX vs AI Studio)
    keys = {("n6-mobilenetv2-224-int8", "validate-target")}
    _, changes = _diff(db, "2.2.0", "4.0.1", keys, capsys)
    notes = {str(c["note"]) for c in changes}
    assert len(notes) == 1
    (note,) = notes
    assert note.startswith("model differs: sha256 ")
    assert "options differ: " in note and "--st-neural-art n6-extflash -> user_profile" in note
    assert "--c-api (none) -> st-ai" in note
    page = (Path(str(replayed["site"])) / "changes.html").read_text(encoding="utf-8")
    assert html.escape(note, quote=False) in page or note.replace("->", "-&gt;") in page
    # the terminal says the same words
    assert note in str(replayed["terminal"])


def test_the_reason_names_each_option_old_to_new() -> None:
    base = {"model_sha256": "a" * 64, "options_hash": "h1", "version": "2.2.0",
            "options": ["--target", "stm32n6", "--st-neural-art", "n6-allmems-O3", "--mode", "target"]}
    head = {"model_sha256": "a" * 64, "options_hash": "h2", "version": "3.0.0",
            "options": ["--target", "stm32n6", "--st-neural-art", "default", "--enable-epoch-controller"]}
    assert not_comparable_reason(base, head) == (
        "options differ: --enable-epoch-controller (none) -> (set); --mode target -> (none); "
        "--st-neural-art n6-allmems-O3 -> default"
    )
    assert not_comparable_reason({**base, "model_sha256": "md5:c85b2bb9" + "0" * 24}, base) == (
        "model differs: md5 c85b2bb9… -> sha256 aaaaaaaa…"
    )
    assert not_comparable_reason(base, {**base, "options_hash": None}) == (
        "the options are not recorded in 2.2.0"
    )
    assert not_comparable_reason(base, base) == ""
    assert option_map(["--hsp", "4096", "-O", "time", "--no-check"]) == {
        "--hsp": "4096", "-O": "time", "--no-check": ""}

"""Every public run in ../shared is a replayed record-only case (or is said not to be, and
why), its figures are what pytest-stedge's parsers read from the public files, and its case
page links those files."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
REAL = PROJECT / "corpus" / "real"


@pytest.fixture(scope="module")
def public(shared_dir: Path) -> tuple[list[object], list[tuple[str, str]]]:
    sys.path[:0] = [str(REAL)]
    try:
        from public_runs import public_cases

        return public_cases(shared_dir)  # type: ignore[return-value]
    finally:
        del sys.path[:1]


def test_every_public_run_folder_is_recorded_or_said_not_to_be(
    shared_dir: Path, public: tuple[list[object], list[tuple[str, str]]]
) -> None:
    cases, skipped = public
    folders = {f"public-runs/{p.name}" for p in (shared_dir / "public-runs").iterdir() if p.is_dir()}
    assert len(folders) == 80  # INDEX.md: 80 run folders from 51 repositories
    recorded = {f.rsplit("/", 1)[0] for c in cases for r in c.runs for f in r.files}  # type: ignore[attr-defined]
    left_out = {folder.split(" (")[0] for folder, _reason in skipped}
    assert folders <= recorded | left_out
    assert len(folders - recorded) == 3  # two YAMNet analyze runs and a failed 5.0.0 run
    for folder, reason in skipped:
        assert reason, folder
    # the stedgeai-samples runs held nowhere else are recorded too
    assert any(f.startswith("stedgeai-samples/") for c in cases for r in c.runs for f in r.files)  # type: ignore[attr-defined]


def test_one_case_holds_every_version_of_one_model(
    public: tuple[list[object], list[tuple[str, str]]]
) -> None:
    """INDEX.md: hash 0x32410247... in 7.1.0, 8.0.0 and 8.1.0 (three repositories)."""
    cases, _ = public
    (case,) = [c for c in cases if c.name.endswith("-32410247")]  # type: ignore[attr-defined]
    assert sorted(r.version for r in case.runs) == ["7.1.0", "8.0.0", "8.1.0"]  # type: ignore[attr-defined]
    assert case.variants == {}  # type: ignore[attr-defined]


def test_recorded_figures_are_the_public_files_read_by_the_parsers(shared_dir: Path) -> None:
    """A public run's recording against its own report, by hand: SOURCE.txt names the
    report of jeesang7/medicbox (5.2.0, model 9df26260...), whose header prints the figures."""
    folder = next(p for p in (REAL / "public").iterdir() if p.name.endswith("-9df26260"))
    (run,) = json.loads((folder / "recordings.json").read_text(encoding="utf-8"))["runs"]
    report = (shared_dir / "public-runs" / "stm32-5.2.0-generate-model" / "network_generate_report.txt").read_text()
    weights = int(re.search(r"weights \(ro\)\s*:\s*([\d,]+)", report).group(1).replace(",", ""))  # type: ignore[union-attr]
    activations = int(re.search(r"activations \(rw\)\s*:\s*([\d,]+)", report).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert run["result"]["memory"]["weights_bytes"] == weights
    assert run["result"]["memory"]["activations_bytes"] == activations
    # the model file is committed with the run (a verified pair): its sha256 is the identity
    model = (shared_dir / "public-runs" / "stm32-5.2.0-generate-model" / "model.h5").read_bytes()
    assert run["version"] == "5.2.0"
    assert run["model_sha256"] == hashlib.sha256(model).hexdigest()
    assert hashlib.md5(model).hexdigest() == "9df262603fbb2db4bb0958a2dfd8abd3"
    (source,) = run["provenance"]["files"]
    assert source["url"] == ("https://github.com/jeesang7/medicbox/blob/3bf698fe3b52afc4b265735d7b14405176f578fc/"
                             "X-CUBE-AI/App/network_generate_report.txt")
    assert source["md5"] == "fa5b3fec5afbfe464b68858db74780e8"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_stedge.cli.main import main

    root = tmp_path_factory.mktemp("public-site")
    db = root / "results.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(REAL), "--stedge-db", str(db), "-p", "no:cacheprovider",
         f"--rootdir={root}", "--stedge-report", "none", "-q"],
        capture_output=True, text=True, cwd=root, timeout=600, check=False,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert main(["dashboard", "--db", str(db), "--out", str(root / "site"),
                 "--corpus", str(PROJECT / "corpus")]) == 0
    return root / "site"


def test_each_public_case_page_links_its_public_sources(site: Path) -> None:
    pages = list((site / "cases").glob("*.html"))
    assert len(pages) >= 100
    linked = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if 'id="public-sources"' not in text:
            continue
        linked += 1
        block = text[text.index('id="public-sources"'):].split("</ul>")[0]
        urls = re.findall(r'href="([^"]+)"', block)
        assert urls, page.name
        for url in urls:
            assert re.match(r"^https://github\.com/[^/]+/[^/]+/(blob|tree)/[0-9a-f]{40}(/\S+)?$", url), (page.name, url)
    assert linked >= 100  # every replayed case (the built cases have no recorded runs)


def test_not_run_cells_say_what_would_fill_them(site: Path) -> None:
    matrix = (site / "matrix.html").read_text(encoding="utf-8")
    cells = re.findall(r'data-bug="([^"]+)" data-version="([^"]+)" data-status="not-run" title="([^"]+)"', matrix)
    assert cells
    for bug, version, title in cells:
        assert f"no reproducer ran with {version}: run " in title, (bug, version)
        assert f"with stedgeai {version}" in title

"""The pages in a real headless Chromium: tables and charts in the DOM, no console errors.

Skipped when Debian's ``chromium`` is not installed (``apt-get install -y chromium``).
Screenshots are kept under reports/screenshots/ for the notes (STEDGE_SCREENSHOTS=1 refreshes
them; otherwise they go to a temporary folder).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_html_reports import build_store

from pytest_stedge.report import render_dashboard, render_diff_page, render_run_report
from pytest_stedge.store.database import Store
from pytest_stedge.verdict.store_diff import diff_store

PROJECT = Path(__file__).resolve().parents[1]
SCREENSHOTS = PROJECT / "reports" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


def _console(stderr: str) -> list[str]:
    """Console messages (errors, CSP violations, uncaught exceptions) Chromium logged."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    facts: dict[str, Any] = build_store(root / "results.duckdb", shared_dir, root)
    out = root / "reports"
    with Store.open(root / "results.duckdb", create=False) as store:
        pages = {
            "run": render_run_report(store, facts["runs"]["3.0.0"], out / "run.html"),
            "diff": render_diff_page(
                diff_store(store, "2.2.0", "3.0.0"), store, out / "diff.html"
            ),
            "index": render_dashboard(store, out / "site", bugs_dir=facts["corpus"] / "bugs"),
        }
    pages["matrix"] = out / "site" / "matrix.html"
    pages["bug"] = next((out / "site" / "bugs").glob("softmax-sw-*.html"))
    pages["case"] = next((out / "site" / "cases").glob("mobilenetv2-*.html"))
    return pages


# page -> (tables, charts) the rendered DOM must hold
EXPECTED = {
    "run": (3, 2),
    "diff": (5, 3),
    "index": (3, 0),
    "matrix": (1, 0),
    "bug": (2, 0),
    "case": (1, 4),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_page_renders_in_chromium_without_console_errors(
    rendered: dict[str, Path], name: str, tmp_path: Path
) -> None:
    proc = _chromium(rendered[name], tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    tables, svgs = EXPECTED[name]
    assert dom.count("<table") >= tables
    assert dom.count("<svg") == svgs
    assert "&lt;script&gt;" in dom or name in ("bug", "matrix", "case", "index")
    assert _console(proc.stderr) == []
    sortable = len(re.findall(r'<table class="[^"]*sortable', dom))
    if sortable:  # the sorting script ran under the page's CSP and added its buttons
        assert '<th><button type="button"' in dom or '<th aria-sort' in dom
    # the committed screenshots are refreshed only when asked: a test run leaves the tree clean
    folder = SCREENSHOTS if os.environ.get("STEDGE_SCREENSHOTS") else tmp_path / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    proc = _chromium(
        rendered[name], tmp_path / "profile2", "--window-size=1280,2000", f"--screenshot={shot}"
    )
    assert proc.returncode == 0 and shot.stat().st_size > 10_000
    assert _console(proc.stderr) == []


def test_tables_read_fully_with_scripts_off(rendered: dict[str, Path], tmp_path: Path) -> None:
    """The script only adds sort buttons: every row is in the file as served."""
    static = rendered["diff"].read_text(encoding="utf-8")
    proc = _chromium(rendered["diff"], tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0
    assert proc.stdout.count("<tr") == static.count("<tr") > 30
    assert "212,609 B" in static


# -- the public site, built from the committed recordings of corpus/real -------------------


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pytest corpus/real` replayed into a fresh store, then `stedge dashboard`."""
    import sys

    root = tmp_path_factory.mktemp("real-site")
    db = root / "results.duckdb"
    subprocess.run(
        [sys.executable, "-m", "pytest", str(PROJECT / "corpus" / "real"), "--stedge-db", str(db),
         "-p", "no:cacheprovider", f"--rootdir={root}", "--stedge-report", "none", "-q"],
        capture_output=True, text=True, cwd=root, check=True,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    with Store.open(db, create=False) as store:
        return render_dashboard(store, root / "site", bugs_dir=PROJECT / "corpus" / "bugs").parent


REAL_PAGES = {  # screenshot name -> (page, tables at least, charts exactly)
    "site-index": ("index.html", 3, 0),
    "site-matrix": ("matrix.html", 1, 0),
    "site-changes": ("changes.html", 4, 0),
    "site-atlas": ("atlas.html", 1, 0),
    "site-case-yolov8n": ("cases/n6-yolov8n-micro-224-*.html", 2, 4),
    "site-bug-conv1x1": ("bugs/n6-conv1x1-activations-4.0.0-*.html", 3, 0),
    "site-bug-hang-similar": ("bugs/npu-hang-activ-conv-*.html", 2, 0),
    "site-case-public-model4": ("cases/model-4-32410247-*.html", 1, 3),  # no epochs on an MCU
    "site-case-conv1x1": ("cases/n6-micro-conv2d-1x1-devcloud-*.html", 1, 4),
    "site-case-mobilenetv2-qdq": ("cases/n6-mobilenetv2-128-qdq-*.html", 1, 4),
}


@pytest.mark.parametrize("name", sorted(REAL_PAGES))
def test_public_site_from_real_recordings_in_chromium(
    real_site: Path, name: str, tmp_path: Path
) -> None:
    pattern, tables, svgs = REAL_PAGES[name]
    page = next(real_site.glob(pattern))
    proc = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert dom.count("<table") >= tables
    assert dom.count("<svg") == svgs
    assert _console(proc.stderr) == []
    # every relative link resolves to a file (and its anchor) of the site
    for href in re.findall(r'<a href="([^"]+)"', dom):
        if href.startswith(("https://", "http://")):
            continue
        path, _, anchor = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.is_file(), f"{page.name}: {href}"
        if anchor:
            assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), f"{page.name}: {href}"
    folder = SCREENSHOTS if os.environ.get("STEDGE_SCREENSHOTS") else tmp_path / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    proc = _chromium(page, tmp_path / "profile2", "--window-size=1280,2200", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.stat().st_size > 10_000
    assert _console(proc.stderr) == []


def test_public_site_makes_no_network_request(real_site: Path, tmp_path: Path) -> None:
    """Chromium's own log of requests: only file:// pages, nothing else fetched."""
    log = tmp_path / "net.json"
    page = next(real_site.glob("cases/n6-micro-conv2d-1x1-devcloud-*.html"))
    proc = _chromium(page, tmp_path / "profile", f"--log-net-log={log}", "--dump-dom")
    assert proc.returncode == 0
    urls = set(re.findall(r'"url":"([^"]+)"', log.read_text(encoding="utf-8", errors="replace")))
    # Chromium itself asks its vendor's services (clock, accounts) whatever the page: those
    # hosts are not the page's; any other address would be
    own = re.compile(r"^https?://([a-z0-9-]+\.)*(google\.com|googleapis\.com|gvt1\.com)/")
    fetched = [u for u in urls if u.startswith(("http://", "https://", "ws")) and not own.match(u)]
    assert fetched == [], fetched
    assert urls  # the log works: it holds at least Chromium's own requests


# -- one verdict, public sources: the built site and the run report as Chromium shows them --


@pytest.fixture(scope="module")
def replayed_site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`pytest corpus/real` replayed with its run report, then `stedge dashboard`."""
    import sys

    root = tmp_path_factory.mktemp("agree")
    db = root / "results.duckdb"
    subprocess.run(
        [sys.executable, "-m", "pytest", str(PROJECT / "corpus" / "real"), "--stedge-db", str(db),
         "-p", "no:cacheprovider", f"--rootdir={root}", "--stedge-report", str(root / "run.html"), "-q"],
        capture_output=True, text=True, cwd=root, check=True,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(root / "no-install")},
    )
    with Store.open(db, create=False) as store:
        index = render_dashboard(store, root / "site", bugs_dir=PROJECT / "corpus" / "bugs")
    return {"site": index.parent, "run": root / "run.html"}


def _statuses(dom: str, pattern: str) -> dict[tuple[str, str], str]:
    import html

    return {(html.unescape(b), html.unescape(v)): s for b, v, s in re.findall(pattern, dom)}


CELL = r'data-bug="([^"]+)" data-version="([^"]+)" data-status="([^"]+)"'


def test_matrix_bug_pages_and_run_report_agree_in_chromium(
    replayed_site: dict[str, Path], tmp_path: Path
) -> None:
    site = replayed_site["site"]
    matrix = _statuses(_chromium(site / "matrix.html", tmp_path / "p0", "--dump-dom").stdout, CELL)
    assert len(matrix) >= 8 * 10  # every bug x every replayed version
    on_pages: dict[tuple[str, str], str] = {}
    for k, page in enumerate(sorted((site / "bugs").glob("*.html"))):
        proc = _chromium(page, tmp_path / f"p{k + 1}", "--dump-dom")
        assert proc.returncode == 0 and _console(proc.stderr) == []
        on_pages.update(_statuses(proc.stdout, CELL))
    assert on_pages == matrix
    run = _statuses(_chromium(replayed_site["run"], tmp_path / "pr", "--dump-dom").stdout,
                    r'<tr data-bug="([^"]+)" data-version="([^"]+)" data-status="([^"]+)"')
    assert run, "the run report lists the bugs' statuses"
    for key, status in run.items():
        assert matrix[key] == status, key
    reproduced = {k for k, s in matrix.items() if s == "reproduced"}
    assert ("n6-conv1x1-activations-4.0.0", "4.0.0") in reproduced
    assert ("n6-conv1x1-activations-4.0.0", "2.2.0") not in reproduced


def test_every_link_of_the_site_is_public_or_a_page_that_exists(
    replayed_site: dict[str, Path], tmp_path: Path
) -> None:
    """Every page as written (all of them), and the bug pages and a public case page as
    Chromium shows them: each link is an http(s) URL or a page (and anchor) of the site."""
    site = replayed_site["site"]
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 100
    shown = [*sorted((site / "bugs").glob("*.html")), next((site / "cases").glob("model-4-32410247-*.html"))]
    for k, page in enumerate(pages + shown):
        if k < len(pages):
            text = page.read_text(encoding="utf-8")
        else:
            proc = _chromium(page, tmp_path / f"l{k}", "--dump-dom")
            assert proc.returncode == 0
            text = proc.stdout
        for href in re.findall(r'<a href="([^"]+)"', text):
            if href.startswith(("https://", "http://")):
                continue
            assert not re.match(r"^[a-z][a-z0-9+.-]*:", href), f"{page.name}: {href}"  # no file:, javascript:
            path, _, anchor = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            assert target.is_file() and site.resolve() in target.parents, f"{page.name}: {href}"
            if anchor:
                assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), f"{page.name}: {href}"
    case = next((site / "cases").glob("model-4-32410247-*.html")).read_text(encoding="utf-8")
    assert case.count("https://github.com/") >= 3  # three repositories' reports of one model

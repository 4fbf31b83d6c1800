"""``stedge bug-report``: a folder and a .zip ST can reproduce from (issue 28, point 4).

The fake tool 4.0.1 returns uncorrelated outputs only with --Ocache-opt and the epoch
controller (the public report's question), 3.0.0 is fine. The report must hold all a
reader needs, with relative paths only, and its commands must reproduce the failure
from the unzipped folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import zipfile
from pathlib import Path

import pytest
from fake_stedgeai import make_install
from test_bisect import PAIR_FAULT, corpus

from pytest_stedge.cli.main import main

pytestmark = pytest.mark.slow
BOARD = "serial:COM9:921600"


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("installs")
    make_install(root / "4.0", "4.0.1", config=PAIR_FAULT)
    make_install(root / "3.0", "3.0.0")
    return root


def report(case: Path, installs: Path, out: Path, capsys: pytest.CaptureFixture[str],
           *extra: str) -> dict:
    code = main(["bug-report", str(case), "--version", "4.0.1", "--stage", "validate-target",
                 "--board", BOARD, "--loader", "true", "--root", str(installs), "--out",
                 str(out), "--json", *extra])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    return json.loads(printed.out)


def machine_paths(folder: Path, *roots: Path) -> list[str]:
    """Every file of ``folder`` that names one of ``roots`` (or holds a symlink)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_symlink():
            found.append(f"{path}: symlink")
        elif path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {root}" for root in roots if str(root).encode() in data]
    return found


def test_the_report_is_complete_self_contained_and_reproduces(
        installs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = corpus(tmp_path)
    out = tmp_path / "reports" / "tcn-4.0.1"
    summary = report(case, installs, out, capsys, "--passing-version", "3.0.0", "--bisect")
    assert Path(summary["zip"]) == out.parent / (out.name + ".zip")
    # complete: model, case, profile and mpool, commands, both runs' outputs, figures, post
    assert (out / "model/model.onnx").read_bytes() == (case / "model.onnx").read_bytes()
    assert (out / "case.toml").read_text() == (case / "case.toml").read_text()
    profile = json.loads((out / "profile/neural_art.json").read_text())
    assert profile["Profiles"]["default"]["memory_pool"] == "./stm32n6.mpool"
    assert (out / "profile/stm32n6.mpool").is_file()
    for version in ("4.0.1", "3.0.0"):
        assert (out / f"runs/{version}/st_ai_output/network_validate_report.txt").is_file()
        assert (out / f"runs/{version}/stedgeai.log").is_file()
    figures = json.loads((out / "figures.json").read_text())
    assert figures["failing"]["figures"]["val_cos"] == pytest.approx(0.091)
    assert figures["failing"]["misses"] == ["val_cos: expected >= 0.99, measured 0.091"]
    assert figures["passing"]["passed"] and figures["passing"]["figures"]["val_cos"] >= 0.99
    bisect = json.loads((out / "bisect.json").read_text())
    assert bisect["culprits"] == ["--Ocache-opt", "--enable-epoch-controller"]
    assert not (out / "bisect-runs").exists()  # the runs' figures are kept, not their folders
    post = (out / "POST.md").read_text()
    for heading in ("## Setup", "## What happens", "## How to reproduce",
                    "## What was ruled out"):
        assert heading in post
    assert "- Tool build: stedgeai 4.0.1" in post and "stedgeai 3.0.0" in post
    assert re.search(r"\| val_cos \| 0\.091 \| (1|0\.9\d+) \|", post)
    assert "`--Ocache-opt` and `--enable-epoch-controller`" in post
    assert "same files pass with stedgeai 3.0.0" in post
    # self-contained: no path of this machine, in the folder or the zip
    assert machine_paths(out, tmp_path, installs, Path.home()) == []
    with zipfile.ZipFile(out.parent / (out.name + ".zip")) as archive:
        names = archive.namelist()
        assert all(n.startswith("tcn-4.0.1/") and ".." not in n for n in names)
        files = {p.relative_to(out.parent).as_posix() for p in out.rglob("*") if p.is_file()}
        assert files <= set(names)
    # reproducible: the commands, run from the unzipped folder, fail as reported
    unzipped = tmp_path / "st-side"
    with zipfile.ZipFile(out.parent / (out.name + ".zip")) as archive:
        archive.extractall(unzipped)
    folder = unzipped / "tcn-4.0.1"
    exe = next(installs.glob("4.0/Utilities/*/stedgeai"))
    lines = (folder / "commands.txt").read_text().split("# stedgeai 3.0.0")[0].splitlines()
    commands = [shlex.split(line) for line in lines if line.startswith("stedgeai ")]
    assert [c[1] for c in commands] == ["generate", "validate"]
    for argv in commands:
        done = subprocess.run([str(exe), *argv[1:]], cwd=folder, capture_output=True, check=False,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:]
    text = (folder / "runs/4.0.1/st_ai_output/network_validate_report.txt").read_text()
    assert "0.091" in text


def test_a_record_only_model_is_named_by_hash_and_source_not_shipped(
        installs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = corpus(tmp_path)
    digest = hashlib.sha256((case / "model.onnx").read_bytes()).hexdigest()
    text = (case / "case.toml").read_text().replace(
        'model = "model.onnx"', 'model = { file = "model.onnx", source = '
        f'"https://example.org/tcn.onnx", sha256 = "{digest}" }}')
    (case / "case.toml").write_text(text)
    out = tmp_path / "rec"
    report(case, installs, out, capsys)
    assert not (out / "model/model.onnx").exists()
    source = (out / "model/SOURCE.md").read_text()
    assert digest in source and "https://example.org/tcn.onnx" in source
    assert "record-only" in (out / "POST.md").read_text()
    with zipfile.ZipFile(out.parent / (out.name + ".zip")) as archive:
        assert not any(n.endswith("model/model.onnx") for n in archive.namelist())


def test_without_the_failing_version_installed_it_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bug-report", str(corpus(tmp_path)), "--version", "4.0.1", "--stage",
                 "generate", "--root", str(tmp_path / "none")])
    assert code == 2
    assert "stedgeai 4.0.1 is not installed here" in capsys.readouterr().err


def test_a_passing_version_not_installed_gives_its_stored_figures(
        installs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_stedge.store.database import Store
    from pytest_stedge.store.rows import ItemRow

    db = tmp_path / "results.duckdb"
    with Store.open(db) as store:
        run = store.begin_run(argv=["pytest"], versions=["2.2.0"])
        store.add_items(run, [ItemRow(
            nodeid="corpus/tcn/case.toml::validate-target[2.2.0]", case_name="tcn",
            stage="validate-target", version="2.2.0", outcome="passed", model_sha256="m",
            options_hash="o", metrics={"val_cos": 0.9995, "activations_bytes": 16384.0})])
    out = tmp_path / "stored"
    report(corpus(tmp_path), installs, out, capsys, "--passing-version", "2.2.0",
           "--db", str(db))
    figures = json.loads((out / "figures.json").read_text())
    assert figures["passing"]["figures"] == {"activations_bytes": 16384.0, "val_cos": 0.9995}
    assert figures["passing"]["source"].startswith("its newest stored figures")
    assert not (out / "runs/2.2.0").exists()
    post = (out / "POST.md").read_text()
    assert re.search(r"\| val_cos \| 0\.091 \| 0\.9995 \|", post)
    assert machine_paths(out, tmp_path, installs) == []

"""Parquet bundles: results travel between machines and merge without duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.store.database import ItemRow, Store


def _fill(path: Path, versions: list[str]) -> None:
    with Store.open(path) as store:
        for version in versions:
            run = store.begin_run(argv=["pytest", "corpus"], versions=[version])
            store.add_items(
                run,
                [ItemRow(nodeid=f"corpus/cnn/case.toml::generate[{version}]", case_name="cnn",
                         stage="generate", version=version, outcome="passed", model_sha256="m" * 64,
                         options_hash="o" * 16, case={"case_path": "corpus/cnn/case.toml"},
                         result={"schema": "stedge.result/1"},
                         metrics={"activations_bytes": 1000.0 + len(version)},
                         findings=[{"bug_id": "b", "status": "reproduced", "evidence": {"x": 1}}])],
            )
            store.finish_run(run, status="passed", exitstatus=0)


def test_export_then_import_twice_merges_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab, ci = tmp_path / "lab.duckdb", tmp_path / "ci.duckdb"
    _fill(lab, ["3.0.0", "4.0.1"])
    _fill(ci, ["2.2.0"])  # the CI store has a run 1 of its own
    assert main(["export", "--out", str(tmp_path / "bundle"), "--db", str(lab)]) == 0
    assert "2 runs, 2 items, 2 metrics, 2 findings, 1 cases" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "bundle"), "--db", str(ci)]) == 0
    assert "imported 2 run(s)" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "bundle"), "--db", str(ci)]) == 0
    out = capsys.readouterr().out
    assert "imported 0 run(s)" in out and "2 already there" in out
    with Store.open(ci, create=False) as store:
        runs = {r["run_id"]: r["versions"] for r in store.list_runs()}
        assert runs == {1: ["2.2.0"], 2: ["3.0.0"], 3: ["4.0.1"]}
        item = store.get_run(3)["items"][0]
        assert item["metrics"] == {"activations_bytes": 1005.0}
        assert item["result"] == {"schema": "stedge.result/1"}
        assert {(f["run_id"], f["status"]) for f in store.findings()} >= {(3, "reproduced")}


def test_a_bundle_from_a_newer_version_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab.duckdb"
    _fill(lab, ["4.0.1"])
    bundle = tmp_path / "bundle"
    assert main(["export", "--out", str(bundle), "--db", str(lab), "--run", "1"]) == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["migrations"].append("0099_future")
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert main(["import", str(bundle), "--db", str(tmp_path / "ci.duckdb")]) == 2
    assert "newer pytest-stedge (unknown migrations: 0099_future)" in capsys.readouterr().err
    assert not (tmp_path / "ci.duckdb").exists()
    assert main(["import", str(tmp_path), "--db", str(tmp_path / "ci.duckdb")]) == 2
    assert "not a pytest-stedge bundle" in capsys.readouterr().err
    assert main(["export", "--out", str(bundle), "--db", str(lab), "--run", "9"]) == 2
    assert "no run 9" in capsys.readouterr().err

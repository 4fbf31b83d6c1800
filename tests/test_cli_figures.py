"""`stedge show` and `stedge ingest` print whole numbers whole, with thousands separators."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_stedge.cli.main import main
from pytest_stedge.cli.shared import fmt_figure
from pytest_stedge.store.database import Store
from pytest_stedge.store.rows import ItemRow


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2107392.0, "2,107,392"),  # printed 2.10739e+06 before: digits lost
        (2107392, "2,107,392"),
        (312_031_800.0, "312,031,800"),
        (0.0, "0"),
        (-131136.0, "-131,136"),
        (0.9974530339241028, "0.997453"),
        (math.inf, "inf"),
        (None, "-"),
    ],
)
def test_fmt_figure(value: float | None, text: str) -> None:
    assert fmt_figure(value) == text


def test_stedge_show_prints_every_digit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "db.duckdb"
    with Store.open(db) as store:
        run = store.begin_run(argv=["pytest", "corpus"], versions=["4.0.1"])
        store.add_items(run, [ItemRow(
            nodeid="corpus/mnv2/case.toml::generate[4.0.1]", case_name="mnv2", stage="generate",
            version="4.0.1", outcome="passed",
            metrics={"activations_bytes": 2107392.0, "weights_bytes": 3669793.0, "val_cos": 0.997453},
            case={"case_path": "corpus/mnv2/case.toml", "model_path": "m.onnx", "target": "stm32n6",
                  "description": ""},
        )])
        store.finish_run(run, status="passed", exitstatus=0)
    assert main(["show", "latest", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "activations_bytes = 2,107,392" in out
    assert "weights_bytes = 3,669,793" in out and "val_cos = 0.997453" in out


def test_stedge_ingest_prints_every_digit(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = shared_dir / "real-cases" / "n6-mobilenetv2-qdq-3versions" / "3.0.0"
    footprint = json.loads((run / "network_c_info.json").read_text())["memory_footprint"]
    case = tmp_path / "corpus" / "mnv2"
    case.mkdir(parents=True)
    # the run's own model: ingest checks the MD5 the tool printed against the case's model
    (case / "model.onnx").write_bytes(
        (run / "mobilenet_v2_128_0.5_QDQ_quant_OE_3_3_1.onnx").read_bytes())
    (case / "case.toml").write_text('model = "model.onnx"\ntarget = "stm32n6"\n')
    # the run holds only its intermediate model (the tool hashed the original): --force
    assert main(["ingest", str(run), "--version", "3.0.0", "--case", "mnv2", "--force",
                 "--corpus", str(tmp_path / "corpus"), "--db", str(tmp_path / "db.duckdb")]) == 0
    out = capsys.readouterr().out
    assert f"activations_bytes={footprint['activations']:,}" in out  # 245,760
    assert f"weights_bytes={footprint['weights']:,}" in out  # 212,609

"""A replayed run is set beside the floor of the deployment its command line states.

A corpus case that names target stm32n6 without [neural_art] means the software path;
when its recordings were made with --st-neural-art, the oracle's floor follows each
recording, and collection warns that the case says otherwise than its runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_stedge.store.database import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))
from tflite_nets import micro_conv

INPUT, NPU_OUT = 64 * 64 * 3, 16  # int8 64x64x3 input, 16 B MEAN output


def _corpus(root: Path, case_extra: str) -> Path:
    folder = root / "corpus" / "micro"
    folder.mkdir(parents=True)
    micro_conv(folder / "micro.tflite")
    (folder / "case.toml").write_text(
        'description = "micro conv"\nmodel = "micro.tflite"\ntarget = "stm32n6"\n'
        'stages = ["generate"]\n' + case_extra,
        encoding="utf-8",
    )
    run: dict[str, Any] = {
        "case": "micro", "stage": "generate", "version": "4.0.0",
        "model_sha256": "0" * 64, "options": ["--st-neural-art", "custom"],
        "options_hash": "0" * 16, "provenance": {"command": "generate"},
        "result": {
            "schema": "stedge.result/1", "command": "generate", "stage": "generate",
            "target": "stm32n6", "neural_art": True, "tool": {"version": "4.0.0"},
            "memory": {"activations_bytes": INPUT + NPU_OUT},
        },
    }
    document = {"schema": "stedge.recordings/1", "written_by": "test", "runs": [run]}
    (folder / "recordings.json").write_text(json.dumps(document), encoding="utf-8")
    return root / "corpus"


def _run(pytester: pytest.Pytester, corpus: Path, db: Path) -> Any:
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-db", str(db), "-p", "no:cacheprovider", "-W", "default",
        f"--rootdir={pytester.path}", "--stedge-report", "none", "-v",
        "--stedge-root", str(pytester.path / "no-install"),
    )


def _items(db: Path) -> dict[str, dict[str, Any]]:
    with Store.open(db, create=False) as store:
        run = store.get_run(store.latest_run_id() or 0)
    return {item["stage"]: item for item in run["items"]}


def test_a_replayed_npu_run_gets_the_npu_floor_and_a_warning(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEDGEAI_CORE_DIR", str(tmp_path / "none"))
    corpus = _corpus(tmp_path, "")
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, db)
    warned = (
        "*PytestCollectionWarning*case 'micro' is deployed otherwise than its recordings*"
        "software path: stedgeai without --st-neural-art*vs Neural-ART NPU*"
    )
    result.stdout.fnmatch_lines([warned])
    items = _items(db)
    # the oracle item of a case this session only replays: the recordings' NPU deployment,
    # the conv streamed into MEAN: input + output (the software path would give 12,288 B)
    assert items["oracle"]["result"]["oracle"]["lower_bound_bytes"] == INPUT + NPU_OUT
    generate = items["generate"]
    assert generate["recorded"] is True
    assert generate["metrics"]["activations_lower_bound_bytes"] == INPUT + NPU_OUT
    assert generate["metrics"]["activations_ratio"] == 1.0


def test_a_case_that_says_what_its_runs_did_is_not_warned(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEDGEAI_CORE_DIR", str(tmp_path / "none"))
    corpus = _corpus(tmp_path, '\n[neural_art]\nprofile = "custom"\n')
    db = tmp_path / "db.duckdb"
    result = _run(pytester, corpus, db)
    result.stdout.no_fnmatch_line("*deployed otherwise than its recordings*")
    assert _items(db)["generate"]["metrics"]["activations_ratio"] == 1.0

"""A c_info.json of the wrong shape beside a good report: the report's figures stand, and a
diagnostic names the c_info file and each key that could not be read (it was dropped
silently: the item passed with no word of it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_stedge.parsers import parse_path

SAMPLE = "stedgeai-samples/n6-v2.2.0-generate-blazeface"

MUTATIONS = {
    "footprint-a-string": (lambda d: d.__setitem__("memory_footprint", "lots"),
                           "[memory_footprint] is a string, expected an object"),
    "graphs-an-object": (lambda d: d.__setitem__("graphs", {"nodes": []}),
                         "[graphs] is an object, expected a list"),
    "weights-text": (lambda d: d["memory_footprint"].__setitem__("weights", "12 KiB"),
                     "[memory_footprint.weights] is '12 KiB', expected a whole number"),
    "nodes-numbers": (lambda d: d["graphs"][0].__setitem__("nodes", [1, 2, 3]),
                      "[graphs.0.nodes]: 3 of 3 entries are not objects"),
    "tools-a-string": (lambda d: d["environment"].__setitem__("tools", "stedgeai"),
                       "[environment.tools] is a string, expected a list of objects"),
}


def _shape_warnings(result: dict) -> list[str]:
    return [d["message"] for d in result.get("diagnostics") or [] if d.get("code") == "c-info-shape"]


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_misshapen_c_info_beside_a_good_report_is_said(
    shared_dir: Path, tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "out"
    shutil.copytree(shared_dir / SAMPLE, folder)
    good = parse_path(folder)
    assert _shape_warnings(good) == []  # the real file has the shape
    path = folder / "network_c_info.json"
    doc = json.loads(path.read_text())
    mutate, expected = MUTATIONS[name]
    mutate(doc)
    path.write_text(json.dumps(doc))
    result = parse_path(folder)
    warnings = _shape_warnings(result)
    assert len(warnings) == 1, result.get("diagnostics")
    assert warnings[0].startswith("network_c_info.json: ") and expected in warnings[0]
    # the report beside it still gives the figures it prints
    assert result["memory"]["activations_bytes"] > 0
    assert result["memory"]["weights_bytes"] > 0


def test_no_real_c_info_is_called_misshapen(shared_dir: Path) -> None:
    from pytest_stedge.parsers.c_info_shape import shape_problems

    checked = 0
    for path in sorted(shared_dir.glob("**/*c_info*.json")):
        try:
            doc = json.loads(path.read_bytes())
        except ValueError:
            continue
        if isinstance(doc, dict) and "json_schema_version" in doc:
            checked += 1
            assert shape_problems(doc) == [], path
    assert checked >= 100  # 106 real c_info files under ../shared when this was written

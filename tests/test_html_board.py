"""Board timings and the first divergence of validate-target items in the HTML run report."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from test_html_reports import Page

from pytest_stedge.report import board as report_board
from pytest_stedge.report import render_run_report
from pytest_stedge.report.board import board_view
from pytest_stedge.result import flat_metrics, new_result
from pytest_stedge.store.database import ItemRow, Store

SCRIPT = "<script>alert(1)</script>"
TIMINGS = [("epoch_1", 3.25), (f"epoch_2 {SCRIPT}", 12.5), ("epoch_3", 0.75)]


def _target_result() -> dict[str, Any]:
    result = new_result(
        "validate",
        tool={"version": "3.0.0"},
        validation={"mode": "target", "device": "STM32N6", "samples": 10,
                    "duration_ms": 17.031, "outputs": []},
        board={"port": "/dev/ttyACM0", "baud": 921600, "chosen_because": "",
               "device": "STM32N6", "protocol": "3.2", "runtime": "atonn-v1.1.1",
               "network": "network"},
    )
    result["board_timings"] = [{"name": n, "duration_ms": ms} for n, ms in TIMINGS]
    result["extra_metrics"] = {f"board_ms:{n}": ms for n, ms in TIMINGS}
    result["divergence"] = {
        "first_diverging": f"epoch_2 {SCRIPT}", "cos": 0.4321, "l2r": 0.87,
        "tensor": "conv2_out", "onnx_node": "conv2", "dump": "board-dump.npz",
        "table": [
            {"node": "conv1", "op_type": "Conv", "tensor": "conv1_out", "cos": 0.9998,
             "l2r": 0.012, "rmse": 0.003, "ok": True, "board_node": "epoch_1"},
            {"node": "conv2", "op_type": "Conv", "tensor": "conv2_out", "cos": 0.4321,
             "l2r": 0.87, "rmse": 0.41, "ok": False, "board_node": f"epoch_2 {SCRIPT}"},
        ],
    }
    return result


def _row(stage: str, result: dict[str, Any]) -> ItemRow:
    return ItemRow(
        nodeid=f"corpus/kws/case.toml::{stage}[3.0.0]", case_name="kws", stage=stage,
        version="3.0.0", outcome="passed", model_sha256="sha-1", options_hash="opt-1",
        message=None, result=result, metrics=flat_metrics(result),
        case={"case_path": None, "model_path": "model.onnx", "target": "stm32n6"}, findings=[],
    )


def _render(tmp_path: Path, rows: list[ItemRow]) -> Page:
    with Store.open(tmp_path / "results.duckdb") as store:
        run_id = store.begin_run(argv=["pytest", "corpus", "--stedge-board", "auto"],
                                 versions=["3.0.0"])
        store.add_items(run_id, rows)
        store.finish_run(run_id, status="passed", exitstatus=0)
        path = render_run_report(store, run_id, tmp_path / "run.html")
    return Page(path)


def _table_rows(page: Page, css_class: str) -> list[list[str]]:
    """Cell texts of each body row of the table with class ``css_class``."""
    body = re.search(rf'<table class="{css_class}[^"]*">.*?<tbody>(.*?)</tbody>', page.html,
                     re.DOTALL)
    assert body, f"no table.{css_class}"
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.DOTALL)]


def test_run_report_shows_board_timings_and_the_first_divergence(tmp_path: Path) -> None:
    page = _render(tmp_path, [_row("validate-target", _target_result()),
                              _row("generate", new_result("generate", tool={"version": "3.0.0"}))])
    text = page.all_text()
    assert "On the board" in text
    assert "/dev/ttyACM0" in text and "protocol 3.2 · runtime atonn-v1.1.1" in text
    assert "17.031 ms per sample" in text  # validation.duration_ms
    assert "16.5 ms summed over 3 epoch blocks" in text
    assert f"epoch_2 {SCRIPT} · cos 0.4321 · l2r 0.87" in text
    # timings in execution order, with their share of the total
    timings = _table_rows(page, "board-timings")
    assert [r[1:3] for r in timings] == [["epoch_1", "3.25"],
                                         ["epoch_2 &lt;script&gt;alert(1)&lt;/script&gt;", "12.5"],
                                         ["epoch_3", "0.75"]]
    assert timings[1][3] == "75.8%"
    divergence = _table_rows(page, "board-divergence")
    assert [r[0] for r in divergence] == ["epoch_1", "epoch_2 &lt;script&gt;alert(1)&lt;/script&gt;"]
    assert divergence[1][4:] == ["0.4321", "0.87", "0.41", "no"]
    # the per-block metrics are not repeated (unordered) in the metrics table
    metrics = [r[0] for r in _table_rows(page, "metrics")]
    assert "duration_ms" in metrics and not any(m.startswith("board_ms:") for m in metrics)
    # one board section: the generate item measured nothing on a board
    assert text.count("On the board") == 1
    # the chart: one bar per block, each with a tooltip; names escaped everywhere
    svg = re.search(r'<svg[^>]*class="chart bars"[^>]*><title>Time per epoch block on the '
                    r"board: kws · 3.0.0</title>(.*?)</svg>", page.html, re.DOTALL)
    assert svg, "no timing chart"
    tips = re.findall(r"<rect [^>]*><title>([^<]*)</title></rect>", svg.group(1))
    assert tips == ["epoch_1 · time on the board: 3.25 ms",
                    "epoch_2 &lt;script&gt;alert(1)&lt;/script&gt; · time on the board: 12.5 ms",
                    "epoch_3 · time on the board: 0.75 ms"]
    assert SCRIPT not in page.html


def test_timings_come_from_the_metrics_when_the_result_has_no_list() -> None:
    metrics = {"board_ms:epoch_2": 4.0, "board_ms:epoch_1": 1.0, "duration_ms": 5.5}
    view = board_view({"validation": {"duration_ms": 5.5}}, metrics, title="t")
    assert view is not None
    assert [(t.name, t.duration_ms) for t in view.timings] == [("epoch_2", 4.0),
                                                               ("epoch_1", 1.0)]
    assert view.total_ms == 5.0 and view.validation_ms == 5.5 and len(view.charts) == 1
    assert not view.divergence and view.first_diverging == ""


def test_items_without_board_data_have_no_board_view() -> None:
    plain = new_result("validate", validation={"mode": "host", "duration_ms": 2.0})
    assert board_view(plain, flat_metrics(plain), title="t") is None


def test_a_search_that_found_no_divergence_says_so(tmp_path: Path) -> None:
    result = _target_result()
    result["divergence"] = {"first_diverging": None, "table": [], "dump": "d.npz"}
    page = _render(tmp_path, [_row("validate-target", result)])
    assert "first diverging none: every compared tensor is within the tolerance" in (
        page.all_text())


def test_board_contexts_are_documented() -> None:
    classes = [c for c in vars(report_board).values()
               if dataclasses.is_dataclass(c) and c.__module__ == report_board.__name__]
    assert len(classes) == 3
    for cls in classes:
        assert cls.__doc__
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help"

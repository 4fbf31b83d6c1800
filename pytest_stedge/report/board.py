"""Run-report context of what a validate-target item measured on its board.

A validate-target Result may carry ``board`` (the port and firmware used),
``board_timings`` ([{name, duration_ms}] per epoch block, in execution order),
``validation.duration_ms`` and ``divergence`` ({first_diverging, cos, l2r, table}); its
flat metrics may carry ``board_ms:<node>``. :func:`board_view` turns these into one
documented context (see :mod:`pytest_stedge.report.data`) with an inline SVG chart.
Every name here comes from the board or the model and is untrusted: the template and
:mod:`pytest_stedge.report.charts` escape it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from . import charts
from .charts import Series

BOARD_METRIC_PREFIX = "board_ms:"
CHART_ROWS = 60  # one chart per 60 epoch blocks keeps labels legible


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class BoardTiming:
    """Time one epoch block (board node) took in the per-layer run."""

    name: str = field(metadata=_h("board node / epoch block name (untrusted text)"))
    duration_ms: float | None = field(default=None, metadata=_h("milliseconds on the board; None when not known"))
    share: float | None = field(default=None, metadata=_h("percent of the summed known timings, None when not known"))


@dataclass
class DivergenceRow:
    """One compared tensor of the divergence search, in execution order."""

    board_node: str = field(metadata=_h("board node that produced the tensor (untrusted text)"))
    node: str = field(default="", metadata=_h("ONNX node name (untrusted text)"))
    op_type: str = field(default="", metadata=_h("ONNX operator type"))
    tensor: str = field(default="", metadata=_h("tensor name compared (untrusted text)"))
    cos: float | None = field(default=None, metadata=_h("cosine similarity to the reference; None when not defined"))
    l2r: float | None = field(default=None, metadata=_h("relative L2 error to the reference; None when not defined"))
    rmse: float | None = field(default=None, metadata=_h("root mean square error to the reference"))
    ok: bool | None = field(default=None, metadata=_h("within the tolerance; None when not stated"))
    epoch: str = field(default="", metadata=_h("N6: the c_info epoch that wrote the buffer, empty otherwise"))
    kind: str = field(default="", metadata=_h("N6: the epoch's kind (HW, EC, SW, hybrid)"))
    buffer: str = field(default="", metadata=_h("N6: the c_info buffer compared (untrusted text)"))


@dataclass
class BoardView:
    """The board part of one item: where it ran, timings and the first divergence."""

    port: str = field(default="", metadata=_h("serial port or socket used, empty when not stored"))
    device: str = field(default="", metadata=_h("device the firmware reported, e.g. STM32N6"))
    firmware: str = field(default="", metadata=_h("validation protocol and runtime the firmware reported"))
    chosen_because: str = field(default="", metadata=_h("why --stedge-board auto chose this port, or empty"))
    validation_ms: float | None = field(default=None, metadata=_h("validation.duration_ms: inference time per sample reported by validate"))
    timings: list[BoardTiming] = field(default_factory=list, metadata=_h("per epoch block timings, in execution order when the Result lists them"))
    total_ms: float | None = field(default=None, metadata=_h("sum of the known per-block timings"))
    divergence: bool = field(default=False, metadata=_h("a divergence search ran (--stedge-per-layer)"))
    first_diverging: str = field(default="", metadata=_h("first board node that diverges from the reference, empty when none"))
    cos: float | None = field(default=None, metadata=_h("cosine similarity at the first divergence"))
    l2r: float | None = field(default=None, metadata=_h("relative L2 error at the first divergence"))
    first_kind: str = field(default="", metadata=_h("N6: kind of the first diverging epoch (HW, EC, SW, hybrid)"))
    first_describe: str = field(default="", metadata=_h("N6: the first diverging epoch with its operators (untrusted text)"))
    first_model_nodes: list[str] = field(default_factory=list, metadata=_h("N6: the model's nodes the first diverging epoch computes"))
    per_epoch: bool = field(default=False, metadata=_h("the search mapped N6 epoch records through the c_info"))
    rows: list[DivergenceRow] = field(default_factory=list, metadata=_h("the divergence table up to the first divergent tensor"))
    charts: list[Markup] = field(default_factory=list, metadata=_h("inline SVG bars of milliseconds per epoch block"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _timings(result: Mapping[str, Any], metrics: Mapping[str, float]) -> list[BoardTiming]:
    raw = result.get("board_timings")
    if isinstance(raw, list) and raw:
        pairs = [(str(t.get("name") or ""), _number(t.get("duration_ms")))
                 for t in raw if isinstance(t, dict)]
    else:  # only the flat metrics were stored: no execution order, keep the metric order
        pairs = [(name[len(BOARD_METRIC_PREFIX):], _number(value))
                 for name, value in metrics.items() if name.startswith(BOARD_METRIC_PREFIX)]
    known = [v for _, v in pairs if v is not None]
    total = sum(known)
    return [BoardTiming(name=n, duration_ms=v,
                        share=100.0 * v / total if v is not None and total > 0 else None)
            for n, v in pairs]


def _row(raw: Mapping[str, Any]) -> DivergenceRow:
    ok = raw.get("ok")
    return DivergenceRow(
        board_node=str(raw.get("board_node") or raw.get("node") or ""),
        node=str(raw.get("node") or ""),
        op_type=str(raw.get("op_type") or ""),
        tensor=str(raw.get("tensor") or ""),
        cos=_number(raw.get("cos")),
        l2r=_number(raw.get("l2r")),
        rmse=_number(raw.get("rmse")),
        ok=ok if isinstance(ok, bool) else None,
        epoch=str(raw.get("epoch") or ""),
        kind=str(raw.get("kind") or ""),
        buffer=str(raw.get("buffer") or ""),
    )


def timing_charts(title: str, timings: list[BoardTiming]) -> list[Markup]:
    """Horizontal bars of milliseconds per epoch block (several charts for long networks)."""
    out = []
    parts = [timings[i: i + CHART_ROWS] for i in range(0, len(timings), CHART_ROWS)]
    for n, part in enumerate(parts, 1):
        suffix = f" (part {n} of {len(parts)})" if len(parts) > 1 else ""
        out.append(charts.bar_chart(
            title + suffix, [t.name for t in part],
            [Series("time on the board", [t.duration_ms for t in part], "board")],
            unit="ms", quantity="time per epoch block"))
    return out


def board_view(result: Mapping[str, Any], metrics: Mapping[str, float], *,
               title: str) -> BoardView | None:
    """The board context of one item, or None when it measured nothing on a board.

    :param title: the timing chart's title (untrusted text is fine: it is escaped).
    """
    board = _mapping(result.get("board"))
    validation = _mapping(result.get("validation"))
    divergence = result["divergence"] if isinstance(result.get("divergence"), dict) else None
    timings = _timings(result, metrics)
    validation_ms = _number(validation.get("duration_ms")) if (board or timings) else None
    if not (board or timings or divergence):
        return None
    known = [t.duration_ms for t in timings if t.duration_ms is not None]
    firmware = " · ".join(f"{k} {board[k]}" for k in ("protocol", "runtime") if board.get(k))
    div = _mapping(divergence)
    table = div["table"] if isinstance(div.get("table"), list) else []
    return BoardView(
        port=str(board.get("port") or ""),
        device=str(board.get("device") or ""),
        firmware=firmware,
        chosen_because=str(board.get("chosen_because") or ""),
        validation_ms=validation_ms,
        timings=timings,
        total_ms=sum(known) if known else None,
        divergence=divergence is not None,
        first_diverging=str(div.get("first_diverging") or ""),
        cos=_number(div.get("cos")),
        l2r=_number(div.get("l2r")),
        first_kind=str(div.get("kind") or ""),
        first_describe=str(div.get("describe") or ""),
        first_model_nodes=[str(n) for n in div.get("model_nodes") or []
                           if isinstance(n, str)],
        per_epoch=bool(div.get("per_epoch")),
        rows=[_row(r) for r in table if isinstance(r, dict)],
        charts=timing_charts(title, timings) if known else [],
    )

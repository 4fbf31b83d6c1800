"""Page contexts of the run report and the diff page, built from the store.

Each page renders one dataclass (its fields documented with ``metadata={"help": ...}``,
checked by a test), so a template reads only what is listed here. Charts are built
here too, as inline SVG from :mod:`pytest_stedge.report.charts`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from pytest_stedge.result import METRICS

from . import charts
from .board import BOARD_METRIC_PREFIX, BoardView, board_view
from .charts import EPOCH_KINDS, EPOCH_LABELS, Series

if TYPE_CHECKING:
    from pytest_stedge.store.database import Store

    from ..case.model import Case
    from ..verdict.bands import BandSettings

FAILING = ("failed", "error")
CHART_ROWS = 60  # split long charts so each stays legible


def _h(text: str) -> dict[str, str]:
    """Field metadata carrying a context field's help text (the template contract)."""
    return {"help": text}


def slug(text: str, prefix: str = "") -> str:
    """A file- and id-safe name for untrusted text, unique by a hash suffix."""
    clean = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:48] or "x"
    return f"{prefix}{clean}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def version_key(version: str) -> tuple[Any, ...]:
    """Sort key of toolchain versions: numeric when PEP 440, else by text after those."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version), "")
    except InvalidVersion:
        return (1, Version("0"), version)


def sorted_versions(versions: Iterable[str]) -> list[str]:
    """Versions in release order (2.2.0 before 10.0.0)."""
    return sorted(set(versions), key=version_key)


def chunks(rows: Sequence[Any], size: int = CHART_ROWS) -> list[Sequence[Any]]:
    """``rows`` in consecutive pieces of at most ``size``."""
    return [rows[i : i + size] for i in range(0, len(rows), size)] or [rows]


# -- run report ----------------------------------------------------------------------


@dataclass
class Diagnostic:
    """One diagnostic the tool printed (E103 ...), or one the harness added."""

    level: str = field(default="error", metadata=_h("error or warning"))
    code: str = field(default="", metadata=_h("the tool's code such as E103, or empty"))
    kind: str = field(default="", metadata=_h("the tool's kind such as NotImplemented, or empty"))
    message: str = field(default="", metadata=_h("the message as printed"))


@dataclass
class MetricLine:
    """One measured (or expected but not measured) metric of an item."""

    metric: str = field(metadata=_h("flat metric name, e.g. activations_bytes"))
    unit: str = field(default="", metadata=_h("unit of the value (B, dB, epochs ...)"))
    value: float | None = field(default=None, metadata=_h("the measured value; None when not measured"))
    expected: str = field(default="", metadata=_h("the case.toml expectation as text, or empty when none"))
    status: str = field(default="", metadata=_h("met, missed, or empty when there is no expectation"))
    help: str = field(default="", metadata=_h("what the metric means"))


@dataclass
class FindingView:
    """A known-bug finding of one item."""

    bug_id: str = field(metadata=_h("known-bug id (corpus/bugs/<id>.toml)"))
    status: str = field(metadata=_h("reproduced, not-reproduced or unknown"))
    case_name: str = field(metadata=_h("the case it was found on"))
    stage: str = field(metadata=_h("the stage"))
    version: str = field(default="", metadata=_h("toolchain version"))
    run_id: int = field(default=0, metadata=_h("the run that stored it"))
    group_run: int = field(default=0, metadata=_h("newest run of its run group (shards of one pipeline are one run)"))
    evidence: list[tuple[str, str]] = field(default_factory=list, metadata=_h("(metric, value) pairs the signature read"))
    signature: str = field(default="", metadata=_h("the signature evaluated, empty when not stored"))
    reproducer: bool = field(default=False, metadata=_h("the case reproduces this bug (its statuses decide), else a match elsewhere"))


@dataclass
class ItemView:
    """One stored item (case, stage, version) of a run."""

    nodeid: str = field(metadata=_h("pytest node id"))
    case_name: str = field(metadata=_h("case name (untrusted text)"))
    stage: str = field(metadata=_h("oracle, generate, analyze, validate-host or validate-target"))
    version: str = field(default="", metadata=_h("toolchain version, empty for the oracle"))
    outcome: str = field(default="", metadata=_h("passed, failed, error, skipped, xfailed or xpassed"))
    recorded: bool = field(default=False, metadata=_h("replayed from a recorded run of the tool"))
    duration_s: float | None = field(default=None, metadata=_h("wall time of the item in seconds"))
    message: str = field(default="", metadata=_h("failure or skip message, empty when none"))
    metrics: list[MetricLine] = field(default_factory=list, metadata=_h("every metric with its expectation"))
    activations: float | None = field(default=None, metadata=_h("the tool's activation bytes"))
    lower_bound: float | None = field(default=None, metadata=_h("the oracle's liveness lower bound in bytes"))
    ratio: float | None = field(default=None, metadata=_h("activations / lower bound"))
    epochs: dict[str, float | None] = field(default_factory=dict, metadata=_h("epochs by kind: total, hw, ec, sw, hybrid"))
    software_ops: list[str] = field(default_factory=list, metadata=_h("operator types that ran in SW/hybrid epochs"))
    sw_ops: list[str] = field(default_factory=list, metadata=_h("operator types of pure software epochs (the Cortex-M55)"))
    hybrid_ops: list[str] = field(default_factory=list, metadata=_h("operator types of hybrid ('??') epochs"))
    hybrid_epochs: list[int] = field(default_factory=list, metadata=_h("ids of the hybrid ('??') epochs"))
    diagnostics: list[Diagnostic] = field(default_factory=list, metadata=_h("the tool's diagnostics"))
    findings: list[FindingView] = field(default_factory=list, metadata=_h("known-bug findings of this item that are the bug's evidence (a reproducer, or in its scope)"))
    similar: list[FindingView] = field(default_factory=list, metadata=_h("similar signatures: bugs whose signature matched this item, which is not their evidence"))
    tool: str = field(default="", metadata=_h("tool version/build as the Result states it"))
    board: BoardView | None = field(default=None, metadata=_h("what a validate-target item measured on its board, None when nothing"))
    changes: list[Any] = field(default_factory=list, metadata=_h("MetricChange list: what moved against the baseline the gate used, unchanged left out"))


@dataclass
class CaseView:
    """The items of one case in a run."""

    name: str = field(metadata=_h("case name (untrusted text)"))
    anchor: str = field(metadata=_h("HTML id of the case's section"))
    case_path: str = field(default="", metadata=_h("stored case.toml path, empty when unknown"))
    note: str = field(default="", metadata=_h("why expectations are missing (case.toml gone or invalid), or empty"))
    items: list[ItemView] = field(default_factory=list, metadata=_h("the case's items, by stage and version"))


@dataclass
class RunPage:
    """Context of run.html.j2: one pytest session."""

    run_id: int = field(metadata=_h("run id in the store"))
    status: str = field(metadata=_h("running, passed, failed, interrupted or error"))
    started_at: str = field(default="", metadata=_h("start time (UTC)"))
    finished_at: str = field(default="", metadata=_h("end time (UTC), empty while running"))
    host: str = field(default="", metadata=_h("machine that ran it"))
    versions: list[str] = field(default_factory=list, metadata=_h("toolchain versions run"))
    baseline: str = field(default="", metadata=_h("--stedge-baseline version, empty when none"))
    argv: str = field(default="", metadata=_h("the command line"))
    counts: list[tuple[str, int]] = field(default_factory=list, metadata=_h("items by outcome"))
    cases: list[CaseView] = field(default_factory=list, metadata=_h("cases with their items"))
    failing: list[ItemView] = field(default_factory=list, metadata=_h("failed and errored items"))
    findings: list[FindingView] = field(default_factory=list, metadata=_h("the run's findings that are their bug's evidence"))
    similar: list[FindingView] = field(default_factory=list, metadata=_h("similar signatures on other models: matches outside a bug's evidence, listed apart"))
    charts: list[Markup] = field(default_factory=list, metadata=_h("inline SVG charts (activations vs bound, epochs)"))
    bug_status: list[tuple[str, str, str, str, str, str]] = field(default_factory=list, metadata=_h("(bug, version, status, status text, deciding case, similar signatures aside) as the dashboard decides it"))
    change_pairs: list[tuple[str, str, list[int]]] = field(default_factory=list, metadata=_h("(baseline, version, count of each of change_kinds) as the gate classified them"))
    change_kinds: list[str] = field(default_factory=list, metadata=_h("the kinds counted, regressions first (unchanged is not)"))


def build_run_page(store: Store, run_id: int, bands: BandSettings | None = None) -> RunPage:
    """Collect one run's items, expectations, findings, changes and charts.

    :param bands: the bands changes are classified with (the session's; default built-in).
    """
    from pytest_stedge.bugs.verdict import is_evidence
    from pytest_stedge.store.queries import run_case_paths, run_findings

    from .run_bugs import bug_status, registry_reproducers

    run = store.get_run(run_id)
    paths = run_case_paths(store, run_id)
    reproducers = registry_reproducers(paths.values())
    findings: dict[str, list[FindingView]] = {}
    all_findings = []
    for row in run_findings(store, run_id):
        finding = _finding_view(row)
        finding.reproducer = is_evidence(finding, reproducers.get(finding.bug_id, ()))
        findings.setdefault(row["nodeid"], []).append(finding)
        all_findings.append(finding)
    loaded: dict[str, tuple[dict[str, Case], str]] = {}
    cases: dict[str, CaseView] = {}
    for item in run["items"]:
        name = item["case_name"]
        case_path = paths.get(name, "")
        if case_path not in loaded:
            loaded[case_path] = _load_case_file(case_path)
        known, note = loaded[case_path]
        view = cases.setdefault(
            name, CaseView(name=name, anchor=slug(name, "c-"), case_path=case_path, note=note)
        )
        case = known.get(name)
        if case is None and not view.note and case_path:
            view.note = f"case {name!r} is no longer defined in {case_path}"
        view.items.append(_item_view(item, case, findings.get(item["nodeid"], [])))
    from .changes import SHOWN_KINDS
    from .run_changes import run_changes

    by_name = {name: case for known, _note in loaded.values() for name, case in known.items()}
    pairs, moved = run_changes(store, run, {c: by_name.get(c) for c in cases}, bands)
    for view in cases.values():
        for item_view in view.items:
            item_view.changes = moved.get(item_view.nodeid, [])
    counts = Counter(i.outcome for c in cases.values() for i in c.items)
    items = [i for c in cases.values() for i in c.items]
    # a session without an install replays recorded versions: those are its versions too
    ran = sorted({i.version for i in items if i.version and i.outcome != "skipped"}, key=version_key)
    versions = list(run.get("versions") or []) or ran
    return RunPage(
        run_id=run_id,
        status=str(run["status"]),
        started_at=str(run.get("started_at") or ""),
        finished_at=str(run.get("finished_at") or ""),
        host=str(run.get("host") or ""),
        versions=versions,
        baseline=str(run.get("baseline") or ""),
        argv=" ".join(str(a) for a in run.get("argv") or []),
        counts=sorted(counts.items()),
        cases=list(cases.values()),
        failing=[i for i in items if i.outcome in FAILING],
        findings=[f for f in all_findings if f.reproducer],
        similar=[f for f in all_findings if not f.reproducer and f.status == "reproduced"],
        charts=_run_charts(items),
        bug_status=bug_status(all_findings, reproducers),
        change_pairs=pairs,
        change_kinds=[k.value for k in SHOWN_KINDS],
    )


def _load_case_file(case_path: str) -> tuple[dict[str, Case], str]:
    from pytest_stedge.errors import StedgeError

    from ..case.load import load_cases

    if not case_path:
        return {}, "the store does not say where this case's case.toml is"
    if not Path(case_path).is_file():
        return {}, f"{case_path} is gone: expectations are not known"
    try:
        return {c.name: c for c in load_cases(Path(case_path))}, ""
    except (StedgeError, OSError) as exc:
        return {}, f"{case_path} no longer loads: {exc}"


def _finding_view(row: Mapping[str, Any]) -> FindingView:
    evidence = row.get("evidence")
    pairs: list[tuple[str, str]] = []
    if isinstance(evidence, dict) and isinstance(evidence.get("values"), dict):
        # pytest_stedge.bugs.registry: {"signature", "values": {metric: value}, "reproducer", ...}
        pairs = [(str(k), _plain(v)) for k, v in sorted(evidence["values"].items())]
    elif isinstance(evidence, dict):
        pairs = [(str(k), _plain(v)) for k, v in sorted(evidence.items())]
    elif evidence is not None:
        pairs = [("evidence", _plain(evidence))]
    return FindingView(
        bug_id=str(row["bug_id"]),
        status=str(row["status"]),
        case_name=str(row["case_name"]),
        stage=str(row["stage"]),
        version=str(row.get("version") or ""),
        run_id=int(row.get("run_id") or 0),
        group_run=int(row.get("group_run") or row.get("run_id") or 0),
        evidence=pairs,
        signature=str(evidence.get("signature") or "") if isinstance(evidence, dict) else "",
        reproducer=bool(evidence.get("reproducer")) if isinstance(evidence, dict) else False,
    )


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return charts.fmt_num(value)
    return str(value)


def _item_view(item: Mapping[str, Any], case: Case | None, findings: list[FindingView]) -> ItemView:
    from ..verdict.expect import Miss, check

    result = item.get("result") or {}
    metrics: dict[str, float] = dict(item.get("metrics") or {})
    bounds = case.bounds_for(item["stage"], metrics) if case is not None else ()
    missed = {m.metric for m in check(bounds, metrics)}
    expected: dict[str, list[str]] = {}
    for bound in bounds:
        expected.setdefault(bound.metric, []).append(Miss(bound, None).expected_text())
    board = board_view(result, metrics, title=f"Time per epoch block on the board: "
                       f"{item['case_name']} · {item.get('version') or ''}")
    lines = []
    for name in sorted(set(metrics) | set(expected)):
        in_board = board is not None and board.timings and name.startswith(BOARD_METRIC_PREFIX)
        if in_board and name not in expected:
            continue  # shown in the item's board timings, in execution order
        spec = METRICS.get(name)
        status = "" if name not in expected else ("missed" if name in missed else "met")
        if status and item["outcome"] == "skipped":
            status = "not run"  # a skipped item measured nothing: it missed nothing
        lines.append(
            MetricLine(
                metric=name,
                unit=spec.unit if spec else "",
                value=metrics.get(name),
                expected=" and ".join(expected.get(name, [])),
                status=status,
                help=spec.help if spec else "",
            )
        )
    oracle = result.get("oracle") or {}
    lower = metrics.get("activations_lower_bound_bytes", _number(oracle.get("lower_bound_bytes")))
    epochs_raw = result.get("epochs") or {}
    epochs = {k: metrics.get(f"epochs_{k}", _number(epochs_raw.get(k))) for k in ("total", *EPOCH_KINDS)}
    tool = result.get("tool") or {}
    return ItemView(
        nodeid=str(item["nodeid"]),
        case_name=str(item["case_name"]),
        stage=str(item["stage"]),
        version=str(item.get("version") or ""),
        outcome=str(item["outcome"]),
        recorded=bool(item.get("recorded")),
        duration_s=item.get("duration_s"),
        message=str(item.get("message") or ""),
        metrics=lines,
        activations=metrics.get("activations_bytes"),
        lower_bound=lower,
        ratio=metrics.get("activations_ratio"),
        epochs=epochs if any(v is not None for v in epochs.values()) else {},
        software_ops=[str(op) for op in result.get("software_ops") or []],
        **_ops_apart(result.get("epochs")),
        diagnostics=[_diagnostic(d) for d in result.get("diagnostics") or [] if isinstance(d, dict)],
        findings=[f for f in findings if f.reproducer],
        similar=[f for f in findings if not f.reproducer and f.status == "reproduced"],
        tool=" ".join(str(tool[k]) for k in ("version", "build", "revision") if tool.get(k)),
        board=board,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _diagnostic(raw: Mapping[str, Any]) -> Diagnostic:
    return Diagnostic(
        level=str(raw.get("level") or "error"),
        code=str(raw.get("code") or ""),
        kind=str(raw.get("kind") or ""),
        message=str(raw.get("message") or ""),
    )


def _run_charts(items: Sequence[ItemView]) -> list[Markup]:
    out: list[Markup] = []
    sized = [i for i in items if i.activations is not None and i.version]
    for part in chunks(sized):
        if not part:
            continue
        labels = [f"{i.case_name} · {i.version} {i.stage}" for i in part]
        out.append(
            charts.bar_chart(
                "Activation RAM: the tool's figure beside the oracle's lower bound",
                labels,
                [
                    Series("reported activations", [i.activations for i in part], "activations"),
                    Series("oracle lower bound", [i.lower_bound for i in part], "lower_bound"),
                ],
                unit="B",
                quantity="activation memory",
            )
        )
    split = [i for i in items if i.epochs and i.version]
    for part in chunks(split):
        if part:
            out.append(
                epochs_chart(
                    "Epochs by kind, per case and version",
                    [(i.case_name, f"{i.version} {i.stage}") for i in part],
                    [i.epochs for i in part],
                )
            )
    return out


def epochs_chart(
    title: str, rows: Sequence[tuple[str, str]], epochs: Sequence[Mapping[str, float | None]]
) -> Markup:
    """Stacked HW / EC / SW / hybrid epoch bars, one per (case, version) row."""
    parts = [
        Series(EPOCH_LABELS[k], [e.get(k) for e in epochs], k) for k in EPOCH_KINDS
    ]
    return charts.stacked_chart(title, rows, parts, unit="epochs", quantity="number of epochs")


CHART_METRICS = (
    "activations_bytes",
    "weights_bytes",
    "activations_lower_bound_bytes",
    "activations_ratio",
    *(f"epochs_{k}" for k in EPOCH_KINDS),
)


def chart_values(
    store: Store, versions: Sequence[str] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """``case -> version -> metric -> value`` for the charted metrics.

    When a case has several stages, the generate stage is charted (else the first
    stage, by name, that measured the metric).
    """
    from pytest_stedge.store.queries import latest_metrics

    staged: dict[tuple[str, str, str], dict[str, float]] = {}
    for row in latest_metrics(store, CHART_METRICS, versions):
        if row["value"] is None or math.isnan(row["value"]):
            continue
        key = (row["case_name"], row["version"], row["metric"])
        staged.setdefault(key, {})[row["stage"]] = float(row["value"])
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (case_name, version, metric), by_stage in staged.items():
        stage = "generate" if "generate" in by_stage else min(by_stage)
        out.setdefault(case_name, {}).setdefault(version, {})[metric] = by_stage[stage]
    return out


def _ops_apart(epochs: Any) -> dict[str, Any]:
    """Software and hybrid operators apart, and the hybrid epochs' ids."""
    from pytest_stedge.parsers.epoch_kinds import ops_by_kind

    split = ops_by_kind(epochs if isinstance(epochs, dict) else None)
    return {"sw_ops": split["sw"], "hybrid_ops": split["hybrid"],
            "hybrid_epochs": [int(i) for i in split["hybrid_epochs"]]}

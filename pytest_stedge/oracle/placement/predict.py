"""Where each operator runs on the STM32N6, predicted from the model alone, with its reason.

For every compute node of the model: HW (or EC with ``--enable-epoch-controller``), SW
(the Cortex-M55), hybrid (an epoch the NPU and the Cortex-M55 share, printed ``??`` in
2.x reports), folded (no epoch: weights, Q/DQ pairs, dimension renames) or unknown. Each
SW or hybrid node names its rule and evidence. Rules, most certain first:

- ``float-conversion``: a float <-> integer conversion. Neural-ART computes on 8/16-bit
  integers, so the conversion runs in software (every real run's boundary conversions);
- ``float-tensor``: the operator computes in float (not quantized, or fed a float
  constant): the Cortex-M55 runs it (4.x prints it ``Sub(float)``);
- ``activation-operands``: a MatMul of two activations: the NPU's convolution units
  take a constant kernel, so the product runs in software;
- ``not-mapped``: every real epoch table of this version line placed the operator in
  software (Softmax without ``--expand-softmax``);
- ``hybrid``: every real table of this version line shows it in a hybrid epoch;
- ``attribute``: an operator in a form the NPU unit may not take (a dilated convolution,
  a per-channel PReLU slope, a SpaceToDepth/DepthToSpace pair around a convolution:
  :mod:`.attributes`), decided only by real runs of that form, else unknown;
- ``front-end-layout``: an operator the front end inserts (the Transposes around a
  channel Pad), placed as that operator is in this version;
- ``mapped``: the real tables of this version line show it in hardware only;
- ``unknown``: the data of this version line does not decide (no run shows the
  operator, or runs disagree): said so, never guessed.

The rules' tables come from :mod:`.table` (``load_table``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.graph import Graph, is_compute
from .frontend import Deployed, deployed_ops
from .table import Evidence, load_table, lookup, version_line

HYBRID_TEXT = ("hybrid epoch: the NPU and the Cortex-M55 share it; the tool prints it `??` "
               "in 2.x reports")
_EC_OPTIONS = ("--enable-epoch-controller", "--eec")


@dataclass
class Placed:
    """One deployed operator of one model node, placed."""

    node: str
    op_type: str
    tool_op: str
    kind: str  # HW | EC | SW | hybrid | unknown
    rule: str
    reason: str
    count: int
    inserted: str = ""
    evidence: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {"node": self.node, "op_type": self.op_type,
                               "tool_op": self.tool_op, "kind": self.kind, "rule": self.rule,
                               "reason": self.reason, "epochs": self.count}
        if self.inserted:
            out["inserted"] = self.inserted
        if self.evidence:
            out["evidence"] = self.evidence
        return out


def _place(op: Deployed, version: str, table: dict[str, Any], hw: str) -> Placed:
    def placed(kind: str, rule: str, reason: str, ev: Evidence | None = None,
               cite_kind: str | None = None) -> Placed:
        cites = ev.cite(cite_kind) if ev is not None else []
        return Placed(op.name, op.op_type, op.tool_op, kind, rule, reason, op.count,
                      op.inserted, cites)

    variant = op.facts.get("variant")
    ev = lookup(table, version, op.key)
    if not ev.seen:  # an attribute form is looked up as that form only, never as the plain op
        ev = lookup(table, version, f"{op.tool_op}({variant})" if variant else op.tool_op)
    if op.form == "convert":
        return placed("SW", "float-conversion",
                      f"{op.tool_op} converts between float and integer: Neural-ART computes on "
                      f"integers only, so the Cortex-M55 runs it", ev, "sw")
    if op.form == "float":
        return placed("SW", "float-tensor",
                      f"{op.tool_op} is not quantized (it reads or writes a float tensor"
                      f"{': a float constant operand' if op.facts.get('float_constant') else ''}"
                      f"): the Cortex-M55 runs it in float", ev, "sw")
    if op.facts.get("activation_operands"):
        return placed("SW", "activation-operands",
                      f"{op.op_type} of two activations: the NPU's convolution units take a "
                      f"constant operand, so the product runs on the Cortex-M55 "
                      f"(printed {op.tool_op})", ev, "sw")
    if variant:
        return _attribute(op, ev, hw, str(variant), str(op.facts.get("variant_detail") or ""))
    if op.inserted:
        return _from_table(op, ev, hw, "front-end-layout",
                           f"{op.tool_op} inserted by the front end {op.inserted}; ")
    return _from_table(op, ev, hw, "", "")


def _attribute(op: Deployed, ev: Evidence, hw: str, variant: str, detail: str) -> Placed:
    """An operator in an attribute form the table keys apart (:mod:`.attributes`):
    decided by the real runs of that form only; without them, unknown."""
    what = f"{op.tool_op} with {detail} ({variant})"
    if ev.seen:
        return _from_table(op, ev, hw, "attribute", f"{what}: ")
    layout = (" For a dilated convolution the front end may also insert a SpaceToDepth/"
              "DepthToSpace pair around a plain convolution."
              if variant in ("dilated", "around a convolution") else "")
    return Placed(op.name, op.op_type, op.tool_op, "unknown", "attribute",
                  f"unknown in this version: {what}: no real N6 epoch table of {ev.line} shows "
                  f"{op.tool_op} in this form, and where the plain {op.tool_op} runs does not "
                  f"decide it (the NPU unit may not take the attribute).{layout}",
                  op.count, op.inserted, [])


def _from_table(op: Deployed, ev: Evidence, hw: str, rule: str, prefix: str) -> Placed:
    def placed(kind: str, name: str, reason: str, cite_kind: str | None) -> Placed:
        return Placed(op.name, op.op_type, op.tool_op, kind, rule or name, prefix + reason,
                      op.count, op.inserted, ev.cite(cite_kind))

    if ev.kind == "sw":
        return placed("SW", "not-mapped",
                      f"{op.tool_op} is not mapped to the NPU in {ev.line} "
                      f"({ev.describe()})", "sw")
    if ev.kind == "hybrid":
        return placed("hybrid", "hybrid",
                      f"{op.tool_op} ran in hybrid epochs in {ev.line} ({ev.describe()}): "
                      f"{HYBRID_TEXT}", "hybrid")
    if ev.kind == "hw":
        return placed(hw, "mapped", f"{op.tool_op} ran on the NPU in {ev.line} "
                      f"({ev.describe()})", "hw")
    if ev.seen:
        return placed("unknown", "unknown",
                      f"unknown in this version: the real runs of {ev.line} disagree "
                      f"({ev.describe()})", None)
    return placed("unknown", "unknown",
                  f"unknown in this version: no real epoch table of {ev.line} shows "
                  f"{op.tool_op}", None)


def predict_placement(graph: Graph, version: str, *, options: Sequence[str] = (),
                      table: dict[str, Any] | None = None) -> dict[str, Any]:
    """The predicted epoch plan of a model for one tool version.

    :param graph: the model (``model.files.open_graph``).
    :param version: the tool version (``2.2.0``); its version line picks the table rows.
    :param options: the stedgeai options (``--enable-epoch-controller`` makes HW epochs EC).
    :param table: a placement table (default: the shipped one).
    """
    table = table if table is not None else load_table()
    hw = "EC" if any(o in _EC_OPTIONS for o in options) else "HW"
    ops = deployed_ops(graph)
    placed: list[Placed] = []
    by_node: dict[int, list[Placed]] = {}
    for op in ops:
        if op.form == "none":
            continue
        item = _place(op, version, table, hw)
        placed.append(item)
        by_node.setdefault(op.node, []).append(item)
    nodes = []
    for node in graph.nodes:
        if not is_compute(graph, node):
            continue
        items = by_node.get(node.index)
        if not items:
            nodes.append({"node": node.name, "op_type": node.op_type, "kind": "folded",
                          "reason": "no epoch of its own: the front end folds it (a Q/DQ pair "
                          "around an int8 operator, a dimension rename, int8 I/O)"})
        else:
            nodes.extend(i.as_dict() for i in items)
    counts = {"sw": sum(p.count for p in placed if p.kind == "SW"),
              "hybrid": sum(p.count for p in placed if p.kind == "hybrid"),
              "unknown": sum(p.count for p in placed if p.kind == "unknown")}
    return {
        "version": version,
        "version_line": version_line(version),
        "table_versions": sorted((table.get("versions") or {}).keys()),
        "nodes": nodes,
        "epochs": _groups(placed),
        "counts": counts,
        "software_ops": sorted({p.tool_op for p in placed if p.kind == "SW"}),
        "hybrid_ops": sorted({p.tool_op for p in placed if p.kind == "hybrid"}),
        "unknown_ops": sorted({p.tool_op for p in placed if p.kind == "unknown"}),
    }


def _groups(placed: list[Placed]) -> list[dict[str, Any]]:
    """The plan in graph order: each SW/hybrid operator its own epoch(s), consecutive
    hardware operators one group (how many epochs the tool cuts them into is its fusion's
    choice, not predicted), unknown operators apart."""
    groups: list[dict[str, Any]] = []
    for item in placed:
        if item.kind in ("SW", "hybrid"):
            groups.append({"kind": item.kind, "ops": [item.tool_op], "nodes": [item.node],
                           "epochs": item.count, "rule": item.rule})
            continue
        if groups and groups[-1]["kind"] == item.kind and "rule" not in groups[-1]:
            groups[-1]["ops"].append(item.tool_op)
            groups[-1]["nodes"].append(item.node)
            continue
        groups.append({"kind": item.kind, "ops": [item.tool_op], "nodes": [item.node]})
    return groups


def format_plan(plan: dict[str, Any], limit: int = 40) -> list[str]:
    """The plan as text: the grouped epochs, then every SW/hybrid/unknown node's reason."""
    counts = plan["counts"]
    lines = [(f"placement ({plan['version']}, table line {plan['version_line']}): "
              f"{counts['sw']} SW epochs, {counts['hybrid']} hybrid, "
              f"{counts['unknown']} operator epochs unknown")]
    if plan["software_ops"]:
        lines.append(f"  software (Cortex-M55): {', '.join(plan['software_ops'])}")
    if plan["hybrid_ops"]:
        lines.append(f"  hybrid ({HYBRID_TEXT}): {', '.join(plan['hybrid_ops'])}")
    if plan["unknown_ops"]:
        lines.append(f"  unknown in this version: {', '.join(plan['unknown_ops'])}")
    lines.append("  plan:")
    for group in plan["epochs"][:limit]:
        ops = group["ops"]
        shown = ", ".join(ops[:6]) + (f" ... (+{len(ops) - 6})" if len(ops) > 6 else "")
        if group["kind"] in ("SW", "hybrid"):
            lines.append(f"    {group['kind']:<7} x{group['epochs']}  {shown}  [{group['rule']}]")
        else:
            lines.append(f"    {group['kind']:<7}     {shown}")
    if len(plan["epochs"]) > limit:
        lines.append(f"    ... {len(plan['epochs']) - limit} more groups (--json has all)")
    reasons = [n for n in plan["nodes"] if n.get("kind") in ("SW", "hybrid", "unknown")]
    if reasons:
        lines.append("  why:")
    for node in reasons[:limit]:
        cite = f" [{'; '.join(node['evidence'])}]" if node.get("evidence") else ""
        lines.append(f"    {node['kind']:<7} {node['node']} ({node['op_type']}): "
                     f"{node['reason']}{cite}")
    if len(reasons) > limit:
        lines.append(f"    ... {len(reasons) - limit} more (--json has all)")
    return lines


_SUMMARIES: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}


def placement_summary(model: Path | str, version: str, options: Sequence[str] = ()) -> dict[str, Any]:
    """What a run stores beside the tool's real epochs: the predicted SW/hybrid counts and
    operators (and the unknown ones) of the model for this version. Cached per process."""
    from ..model.files import open_graph

    key = (str(model), version, tuple(options))
    if key not in _SUMMARIES:
        plan = predict_placement(open_graph(model), version, options=options)
        _SUMMARIES[key] = {k: plan[k] for k in ("version_line", "counts", "software_ops",
                                                "hybrid_ops", "unknown_ops")}
    return _SUMMARIES[key]

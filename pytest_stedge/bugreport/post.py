"""POST.md: the report as a forum post (ST Community, GitHub issue).

A good report gives the tool build, the Neural-ART compiler and runtime, and the board;
says what happens with figures, beside a version where it does not; how to reproduce
from the attached folder with exact commands; and what was ruled out (the model itself,
each option, where in the network it starts). Every figure here comes from the runs and
files in the folder.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import Report, VersionRun

_SHOWN = ("val_cos", "val_snr", "val_l2r", "val_rmse", "val_acc", "activations_bytes",
          "weights_bytes", "epochs_total", "epochs_sw", "epochs_hybrid", "macc")


def _value(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value) or math.isnan(value):
        return str(value)
    if float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:.6g}"


def _build(run: VersionRun) -> str:
    tool = run.tool
    parts = [f"stedgeai {tool.get('version') or run.version}"]
    if tool.get("build"):
        parts.append(f"build {tool['build']}")
    if tool.get("revision"):
        parts.append(f"revision {tool['revision']}")
    return ", ".join(parts)


def _figures(report: Report) -> list[str]:
    fail, ok = report.failing, report.passing
    names = [m for m in _SHOWN if m in fail.figures or (ok and m in ok.figures)]
    head = f"| figure | {fail.version} (fails) |" + (f" {ok.version} |" if ok else "")
    lines = [head, "|---|---|" + ("---|" if ok else "")]
    for name in names:
        row = f"| {name} | {_value(fail.figures.get(name))} |"
        if ok:
            row += f" {_value(ok.figures.get(name))} |"
        lines.append(row)
    return lines


def _ruled_out(report: Report) -> list[str]:
    out = []
    ok = report.passing
    if ok is not None and ok.passed:
        out.append(f"- The model and its options: the same files pass with stedgeai "
                   f"{ok.version} ({ok.source}).")
    bisect = report.bisect
    if bisect:
        runs = bisect.get("runs") or []
        if bisect.get("culprits"):
            names = " and ".join(f"`{c}`" for c in bisect["culprits"])
            out.append(f"- Every other option: {len(runs)} runs of delta debugging over the "
                       f"{len(bisect.get('options') or [])} options of the profile and the "
                       f"case (bisect.json, every run's figures) leave {names}: with "
                       f"{'them' if len(bisect['culprits']) > 1 else 'it'} the check fails, "
                       "without any one of them it passes.")
        else:
            out.append(f"- Options: {bisect.get('verdict')} (bisect.json).")
    div = report.divergence
    if div and div.get("first_diverging_epoch"):
        nodes = ", ".join(div.get("model_nodes") or []) or "front-end nodes only"
        before = div.get("unchecked_before") or []
        out.append(f"- Where it starts: on the board, the first epoch whose outputs are wrong "
                   f"for its own inputs is {div['describe']} (model nodes: {nodes}; cos "
                   f"{_value(div.get('cos'))}); every epoch before it matches"
                   + (f", except {', '.join(before)}, which wrote nothing comparable"
                      if before else "") + " (divergence.json, board/).")
    elif div and div.get("error"):
        out.append(f"- Where it starts: not found ({div['error']}).")
    return out or ["- Nothing yet: no other version, bisection or board dump was given."]


def write_post(report: Report) -> None:
    """Write ``POST.md`` in the report's folder."""
    case, fail, ok = report.case, report.failing, report.passing
    what = fail.error or "; ".join(fail.misses) or "no expectation missed"
    title = (f"[ST Edge AI Core {fail.version}] {report.stage} of {case.model.name}: "
             f"{what.split(';')[0]}" + (f" (passes with {ok.version})" if ok and ok.passed
                                         else ""))
    art = case.neural_art
    profile = "none" if art is None else (
        f"{art.profile} (profile/neural_art.json)" if art.file else
        f"{art.profile} (the install's built-in profile)")
    compiler = fail.tool.get("compiler") or "not stated in the outputs"
    lines = [f"# {title}", "",
             "## Setup", "",
             f"- Tool build: {_build(fail)}" + (f"; for comparison {_build(ok)}" if ok else ""),
             f"- Neural-ART compiler: {compiler}",
             f"- Runtime: {fail.tool.get('runtime') or 'as shipped with that tool build'}",
             f"- Board: {fail.device or 'none (the stage runs on the host)'}",
             (f"- Target: {case.target}; Neural-ART profile: {profile}; options: "
             f"{' '.join(case.options) or 'none'}"),
             f"- Model: model/{case.model.name}" + (" (record-only: sha256 and public source "
                                                    "in model/SOURCE.md)" if case.record_only
                                                    else ""),
             "", "## What happens", "",
             f"With stedgeai {fail.version}, `{report.stage}` "
             + (f"fails: {fail.error}." if fail.error else f"misses: {what}."),
             ""]
    lines += _figures(report)
    lines += ["", "## How to reproduce", "",
              "Unzip the attached folder and run, from it, the commands of `commands.txt`:",
              "", "```"]
    for argv in fail.commands:
        lines.append(" ".join(argv))
    lines += ["```", "",
              f"The outputs of these runs are in `{fail.outputs}/`"
              + (f" and `{ok.outputs}/`" if ok and ok.outputs else "") + "; the figures in "
              "`figures.json`.", "", "## What was ruled out", ""]
    lines += _ruled_out(report)
    if report.dropped:
        lines += ["", (f"({len(report.dropped)} generated files (C code, memory images) were "
                  "left out; the commands regenerate them.)")]
    lines.append("")
    (report.folder / "POST.md").write_text("\n".join(lines), encoding="utf-8")


def summary(report: Report) -> dict[str, Any]:
    """What ``stedge bug-report`` prints."""
    return {"folder": str(report.folder), "zip": str(report.zip),
            "failing": report.failing.to_json(),
            "passing": report.passing.to_json() if report.passing else None}

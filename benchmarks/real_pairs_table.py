"""Regenerate the tables of every real (model, run) pair in docs/oracle.md, and time it.

    python benchmarks/real_pairs_table.py [--check]

For each verified pair of ../shared/real-cases and ../shared/public-runs: the oracle's
floor, expected figure, the tool's figure, the ratio tool / floor and, where the run
left a c_info with buffers, what its measured explanation leaves unexplained; the
figures over all pairs (floor hits, expected within 1% / 25% / 2x, clean explanations,
also of every c_info in ../shared without its model); the rules of each target family
with the pairs they cite. The text between the markers of docs/oracle.md is replaced;
--check only says whether it is up to date (exit 1 if not). Target: <= 60 s.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ROOTS = (SHARED / "real-cases", SHARED / "public-runs")
DOC = ROOT / "docs" / "oracle.md"
BEGIN, END = "<!-- real-pairs:begin -->", "<!-- real-pairs:end -->"
RULES_BEGIN, RULES_END = "<!-- rules:begin -->", "<!-- rules:end -->"
FIG_BEGIN, FIG_END = "<!-- figures:begin -->", "<!-- figures:end -->"


def _rows() -> list[dict[str, Any]]:
    from pytest_stedge.oracle import explain_c_info
    from pytest_stedge.oracle.pairs import pair_row, real_pairs

    rows = []
    for root in ROOTS:
        for pair in real_pairs(root):
            row = pair_row(pair)
            row["pair_obj"] = pair
            row["explained"] = [explain_c_info(row["report"], c) for c in pair.c_infos]
            rows.append(row)
    return rows


def _within(expected: int, tool: int, share: float) -> bool:
    return abs(expected - tool) <= share * tool


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        (
            "| pair (case/model@run) | version | family | floor B | expected B | tool B "
            "| tool / floor | c_info unexplained B |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        pair = row["pair_obj"]
        ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "n/a"
        approx = " (kB table)" if pair.tolerance else ""
        explained = row["explained"]
        left = (
            ", ".join(f"{e['unexplained_bytes']:,}" + ("" if e["clean"] else " (not clean)")
                      for e in explained)
            if explained else "no c_info"
        )
        lines.append(
            f"| `{pair.label}` | {pair.version} | {row['family']} | {row['floor']:,} | "
            f"{row['expected']:,} | {pair.activations:,}{approx} | {ratio} | {left} |"
        )
    return "\n".join(lines)


def _every_c_info() -> tuple[int, int]:
    """Clean explanations of every c_info with buffers in ../shared, without a model."""
    from pytest_stedge.oracle import explain_c_info

    clean = total = 0
    for path in sorted(SHARED.rglob("*c_info*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not (isinstance(data, dict) and data.get("buffers") and data.get("memory_pools")):
            continue
        total += 1
        clean += bool(explain_c_info(None, path)["clean"])
    return clean, total


def figures(rows: list[dict[str, Any]]) -> str:
    n = len(rows)
    public = sum(1 for r in rows if r["pair_obj"].run == ".")
    below = sum(1 for r in rows if r["floor"] <= r["tool"] + r["pair_obj"].tolerance)
    hits = sum(1 for r in rows if abs(r["floor"] - r["tool"]) <= r["pair_obj"].tolerance)
    within = [sum(1 for r in rows if _within(r["expected"], r["tool"], s)) for s in (0.01, 0.25)]
    double = sum(1 for r in rows if r["tool"] / 2 <= r["expected"] <= 2 * r["tool"])
    explained = [e for r in rows for e in r["explained"]]
    clean = sum(1 for e in explained if e["clean"])
    every_clean, every = _every_c_info()
    lines = [
        f"- pairs: {n} ({n - public} of ../shared/real-cases, {public} of "
        "../shared/public-runs with a verified TFLite or ONNX model)",
        f"- floor <= the tool: {below} of {n}; floor == the tool (a floor hit): {hits} of {n}",
        f"- expected within 1% / 25% / 2x of the tool: {within[0]} / {within[1]} / {double} "
        f"of {n}",
        f"- c_info explanations with their model: {clean} of {len(explained)} clean "
        "(unexplained 0, no negative part but overlay)",
        f"- every c_info with buffers in ../shared, without a model: {every_clean} of "
        f"{every} clean",
    ]
    return "\n".join(lines)


def rules() -> str:
    from pytest_stedge.oracle import rules_mcu, rules_n6_npu, rules_n6_sw

    out = []
    for title, module in (
        ("N6 NPU (`rules_n6_npu`)", rules_n6_npu),
        ("N6 software path (`rules_n6_sw`)", rules_n6_sw),
        ("MCU (`rules_mcu`)", rules_mcu),
    ):
        out.append(f"### {title}\n")
        out.append("Typical deployment (`expected_bytes`):\n")
        for rule_id, text, evidence in module.RULES:
            out.append(f"- **{rule_id}**: {text}")
            out.extend(f"  - shown by `{e}`" for e in evidence)
        if module is not rules_n6_sw:
            out.append("\nWhat the floor assumes the tool may do (`lower_bound_bytes`):\n")
            for rule_id, text, evidence in module.FLOOR:
                out.append(f"- **{rule_id}**: {text}")
                out.extend(f"  - shown by `{e}`" for e in evidence)
        else:
            out.append("\nThe floor: as the MCU (the same software runtime).")
        out.append("")
    return "\n".join(out).rstrip()


def _replace(text: str, begin: str, end: str, body: str) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def main(argv: list[str]) -> int:
    if not all(root.is_dir() for root in ROOTS):
        print(f"{' or '.join(str(r) for r in ROOTS)} is absent: nothing to tabulate")
        return 2
    started = time.perf_counter()
    rows = _rows()
    body, summary = table(rows), figures(rows)
    seconds = time.perf_counter() - started
    text = DOC.read_text(encoding="utf-8")
    new = _replace(text, BEGIN, END, body)
    new = _replace(new, RULES_BEGIN, RULES_END, rules())
    new = _replace(new, FIG_BEGIN, FIG_END, summary)
    print(f"real-pairs table: {len(rows)} pairs in {seconds:.1f} s (target <= 60 s)")
    print(summary)
    if "--check" in argv:
        if new != text:
            print(f"{DOC} is out of date: run python benchmarks/real_pairs_table.py")
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

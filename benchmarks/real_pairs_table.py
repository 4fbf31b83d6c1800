"""Regenerate the table of every real (model, run) pair in docs/oracle.md, and time it.

    python benchmarks/real_pairs_table.py [--check]

For each verified pair of ../shared/real-cases: the oracle's floor, expected figure,
the tool's figure and the ratio tool / floor, plus the rules of each target family
with the pairs they cite. The text between the two markers of docs/oracle.md is
replaced; --check only says whether it is up to date (exit 1 if not). Target: the
whole table in <= 60 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real-cases"
DOC = ROOT / "docs" / "oracle.md"
BEGIN, END = "<!-- real-pairs:begin -->", "<!-- real-pairs:end -->"
RULES_BEGIN, RULES_END = "<!-- rules:begin -->", "<!-- rules:end -->"


def table() -> str:
    from pytest_stedge.oracle.pairs import pair_row, real_pairs

    lines = [
        "| pair (case/model@run) | version | family | floor B | expected B | tool B | tool / floor |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for pair in real_pairs(REAL):
        row = pair_row(pair)
        ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "n/a"
        approx = " (kB table)" if pair.tolerance else ""
        lines.append(
            f"| `{pair.label}` | {pair.version} | {row['family']} | {row['floor']:,} | "
            f"{row['expected']:,} | {pair.activations:,}{approx} | {ratio} |"
        )
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
        for rule_id, text, evidence in module.RULES:
            out.append(f"- **{rule_id}**: {text}")
            out.extend(f"  - shown by `{e}`" for e in evidence)
        out.append("")
    return "\n".join(out).rstrip()


def _replace(text: str, begin: str, end: str, body: str) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def main(argv: list[str]) -> int:
    if not REAL.is_dir():
        print(f"{REAL} is absent: nothing to tabulate")
        return 2
    started = time.perf_counter()
    body = table()
    seconds = time.perf_counter() - started
    text = DOC.read_text(encoding="utf-8")
    new = _replace(_replace(text, BEGIN, END, body), RULES_BEGIN, RULES_END, rules())
    print(f"real-pairs table: {body.count(chr(10)) - 1} pairs in {seconds:.1f} s (target <= 60 s)")
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

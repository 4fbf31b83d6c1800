"""Build the N6 operator placement table from every real epoch table under ../shared.

    python tools/build_placement_table.py [--shared DIR] [--out FILE] [--check]

Reads every real STM32N6 run with an epoch table (2.x ``HW/SW/EC`` lists with ``-SW-``
and ``??`` rows, 3.x/4.x boxed tables, c_info epoch nodes), ties each run to its model
where the tree holds it (by the MD5 the tool recorded, else the case folder's one model),
and writes ``pytest_stedge/oracle/placement/data/n6_placement.json``: per version line and operator,
the epochs seen in software, hybrid and hardware, each row with its file and line.
Deterministic: the same tree gives the same bytes. ``--check`` compares instead of
writing (exit 1 when the committed table is stale).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_stedge.oracle.placement.runs import load_runs
from pytest_stedge.oracle.placement.table import build_table, dump_table

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "pytest_stedge" / "oracle" / "placement" / "data" / "n6_placement.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"{args.shared}: no such folder (the real runs live in ../shared)", file=sys.stderr)
        return 2
    runs = load_runs(args.shared)
    text = dump_table(build_table(runs))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out}: stale; rebuild with python tools/build_placement_table.py")
            return 1
        print(f"{args.out}: up to date ({len(runs)} runs)")
        return 0
    args.out.write_text(text, encoding="utf-8")
    with_model = sum(1 for r in runs if r.model_file)
    print(f"{args.out}: {len(runs)} runs ({with_model} with their model)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

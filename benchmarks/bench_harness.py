"""How much the harness costs beside the tool (issue 2's speed target).

40 cases, a fake stedgeai that takes a fixed 0.5 s per generate. Prints, in one run:
- serial: session wall time / sum of the tool's own run times (target <= 1.10);
- ``-n 2``: wall time / serial wall time (target <= 0.6);
- the per-item overhead in milliseconds.

    python benchmarks/bench_harness.py [--cases 40] [--sleep 0.5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "tests"))

from conftest import make_conv_model
from fake_stedgeai import make_install

CASE = """\
model = "model.onnx"
target = "stm32n6"
stages = ["generate"]
[neural_art]
profile = "default"
[expect]
activations_bytes = {{ min = 1 }}
"""


def build(root: Path, cases: int, sleep: float) -> tuple[Path, Path]:
    installs = root / "installs"
    make_install(installs / "4.0", "4.0.1", config={"*": {"sleep": sleep}})
    corpus = root / "corpus"
    for i in range(cases):
        folder = corpus / f"case{i:03d}"
        folder.mkdir(parents=True)
        make_conv_model(folder / "model.onnx", channels=4 + i % 8, size=8 + i % 5)
        (folder / "case.toml").write_text(CASE.format())
    return installs, corpus


def session(installs: Path, corpus: Path, db: Path, *extra: str) -> tuple[float, float, int]:
    """Run one session; return (wall seconds, sum of tool seconds, items stored)."""
    # hypothesis (a test extra, not a dependency of pytest-stedge) registers a pytest
    # plugin whose import costs ~0.8 s in every process; it is not the harness's cost.
    argv = [
        sys.executable, "-m", "pytest", str(corpus), "-q", "-p", "no:cacheprovider",
        "-p", "no:hypothesispytest",
        "--stedge-root", str(installs), "--stedge-db", str(db), *extra,
    ]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=corpus.parent)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"session failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    run_id = con.execute("SELECT max(run_id) FROM runs").fetchone()[0]
    tool, items = con.execute(
        "SELECT sum(tool_seconds), count(*) FROM items WHERE run_id = ? AND stage = 'generate'",
        [run_id],
    ).fetchone()
    con.close()
    return wall, float(tool), int(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--sleep", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        installs, corpus = build(root, args.cases, args.sleep)
        db = root / "results.duckdb"
        serial_wall, serial_tool, items = session(installs, corpus, db)
        xdist_wall, xdist_tool, _ = session(installs, corpus, db, "-n", "2")
    print(f"cases: {args.cases}, fake tool sleep: {args.sleep} s, generate items: {items}")
    print(f"serial: wall {serial_wall:.2f} s, tool {serial_tool:.2f} s, "
          f"wall/tool = {serial_wall / serial_tool:.3f} (target <= 1.10)")
    print(f"-n 2:   wall {xdist_wall:.2f} s, tool {xdist_tool:.2f} s, "
          f"wall/serial wall = {xdist_wall / serial_wall:.3f} (target <= 0.60)")
    overhead_ms = (serial_wall - serial_tool) / items * 1000
    print(f"per-item harness overhead (serial, incl. oracle stage and pytest start-up): "
          f"{overhead_ms:.1f} ms")


if __name__ == "__main__":
    main()

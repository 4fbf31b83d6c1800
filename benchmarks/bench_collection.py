"""Collection cost of a large corpus against pytest's own (issue 18, target 3).

Builds N cases (one folder each: case.toml and a model file; stages generate and
validate-host, so 3 items a case with the oracle) and a plain test module with the same
number of parametrized items, then times ``pytest --collect-only -q`` of each, alternating
the two so the machine's noise hits both alike, after one warm-up run of each (bytecode
caches written, as on any machine that ran pytest once). Prints the median CPU seconds of each
(user + system of the pytest process) and their ratio (target <= 2.0).

    python benchmarks/bench_collection.py [--cases 5000] [--rounds 3] [--profile]

``--profile`` also prints the top functions of one corpus collection (cProfile).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASE = """\
description = "case {i}"
model = "model.onnx"
target = "stm32n6"
stages = ["generate", "validate-host"]
markers = ["n6"]
[neural_art]
profile = "default"
[expect]
activations_bytes = {{ max = {limit} }}
epochs_sw = {{ max = 0 }}
[expect.validate-host]
val_cos = {{ min = 0.99 }}
"""

PARAMETRIZED = """\
import pytest


@pytest.mark.parametrize("i", range({items}))
def test_item(i):
    pass
"""


# Bytecode caches on, as on a user's machine: pip compiled pytest's modules when it
# installed them, but an editable install's are compiled on first import, and only if
# PYTHONDONTWRITEBYTECODE is unset (it is set on some CI machines: the plugin's modules
# were then compiled from source on every run, 0.2 s that pytest's side never paid).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def build(root: Path, cases: int) -> tuple[Path, Path, int]:
    """A corpus of ``cases`` cases and a module with as many parametrized items."""
    corpus = root / "corpus"
    (corpus / "profiles").mkdir(parents=True)
    for i in range(cases):
        folder = corpus / f"case{i:05d}"
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"\x08\x08" + i.to_bytes(4, "little"))
        (folder / "case.toml").write_text(CASE.format(i=i, limit=1_000_000 + i))
    items = cases * 3  # oracle, generate, validate-host
    plain = root / "plain"
    plain.mkdir()
    (plain / "test_parametrized.py").write_text(PARAMETRIZED.format(items=items))
    return corpus, plain / "test_parametrized.py", items


def collect(target: Path, cwd: Path, db: Path) -> tuple[float, float, int]:
    """One ``pytest --collect-only``; (CPU seconds of the child, wall seconds, items)."""
    argv = [
        sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
        # hypothesis' plugin (a test extra) costs ~1 s in every process: not ours, not pytest's
        "-p", "no:hypothesispytest", "--rootdir", str(cwd), "--stedge-db", str(db), str(target),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"collection of {target} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    items = sum(1 for line in proc.stdout.splitlines() if "::" in line)
    return cpu, wall, items


def profile(corpus: Path, cwd: Path, db: Path) -> None:
    """Top functions (cumulative) of one corpus collection, in this process."""
    import cProfile
    import pstats

    import pytest

    profiler = cProfile.Profile()
    os.chdir(cwd)
    profiler.enable()
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                 "--rootdir", str(cwd),
                 "--stedge-db", str(db), str(corpus)], plugins=[])
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
        corpus, plain, items = build(root, args.cases)
        db = root / "absent.duckdb"
        collect(corpus, root, db)  # warm-up: bytecode caches written, files in the page cache
        collect(plain, root, db)
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(collect(corpus, root, db))
            theirs.append(collect(plain, root, db))
        if ours[0][2] != items or theirs[0][2] != items:
            sys.exit(f"expected {items} items each, collected {ours[0][2]} and {theirs[0][2]}")
        cpu_ours = statistics.median(c for c, _, _ in ours)
        cpu_theirs = statistics.median(c for c, _, _ in theirs)
        wall_ours = statistics.median(w for _, w, _ in ours)
        wall_theirs = statistics.median(w for _, w, _ in theirs)
        print(f"{args.cases} cases, {items} items each side, median of {args.rounds} rounds")
        print(f"corpus:        cpu {cpu_ours:.2f} s, wall {wall_ours:.2f} s "
              f"({cpu_ours / args.cases * 1000:.2f} ms cpu per case)")
        print(f"parametrized:  cpu {cpu_theirs:.2f} s, wall {wall_theirs:.2f} s")
        print(f"corpus / parametrized = {cpu_ours / cpu_theirs:.2f} cpu, "
              f"{wall_ours / wall_theirs:.2f} wall (target <= 2.0)")
        if args.profile:
            profile(corpus, root, db)


if __name__ == "__main__":
    main()

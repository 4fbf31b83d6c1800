"""How much the harness costs beside the tool (issue 2's and issue 18's speed targets).

Real-tool-like mode (default): 40 cases, a fake stedgeai that takes a fixed 0.5 s per
generate. Prints, in one run:
- serial, oracle off: session wall time / wall time of a bare loop that runs the same
  stedgeai command lines one after the other with ``subprocess.run`` (target <= 1.05; the
  two sides alternate, medians of ``--rounds``);
- serial: session wall time / sum of the tool's own run times;
- ``-n 2``: wall time / serial wall time (target <= 0.6);
- the per-item overhead in milliseconds.

Replay mode (``--replay``): the tool is near-free. Every case's generate is replayed from
a recording in the store (as CI without the tool runs a replayed corpus); no oracle item,
so each item is the harness alone. Two corpora (N and 2N cases) give, in one run:
- the per-item harness overhead: the slope of serial wall time over items (target <= 8 ms)
  and the fixed cost of a session;
- ``-n 2`` wall / serial wall on the larger corpus (target <= 0.6);
- the same ratio for pytest-xdist alone on as many trivial tests (plugin off): the best two
  workers give on this machine, whatever the plugin does.

    python benchmarks/bench_harness.py [--cases 40] [--sleep 0.5]
    python benchmarks/bench_harness.py --replay [--cases 200] [--rounds 2]
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

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "tests"))

from conftest import make_conv_model
from fake_stedgeai import make_install

CASE = """\
model = "model.onnx"
target = "stm32n6"
stages = ["generate"]
{oracle}
[neural_art]
profile = "default"
[expect]
activations_bytes = {{ min = 1 }}
"""
VERSION = "4.0.1"


def build(root: Path, cases: int, sleep: float, *, oracle: bool = True) -> tuple[Path, Path]:
    installs = root / "installs"
    make_install(installs / "4.0", VERSION, config={"*": {"sleep": sleep}})
    corpus = root / "corpus"
    for i in range(cases):
        folder = corpus / f"case{i:04d}"
        folder.mkdir(parents=True)
        make_conv_model(folder / "model.onnx", channels=4 + i % 8, size=8 + i % 5)
        text = CASE.format(oracle="" if oracle else "oracle = false")
        (folder / "case.toml").write_text(text)
    return installs, corpus


_cpu: list[float] = []  # CPU seconds (user + system) of each session's process tree


def session(corpus: Path, db: Path, *extra: str) -> tuple[float, float, int]:
    """Run one session; return (wall seconds, sum of tool seconds, items stored); its CPU
    seconds (every process: controller, workers, tools) go to ``_cpu``."""
    # hypothesis (a test extra, not a dependency of pytest-stedge) registers a pytest
    # plugin whose import costs ~1 s in every process; it is not the harness's cost.
    argv = [
        sys.executable, "-m", "pytest", str(corpus), "-q", "-p", "no:cacheprovider",
        "-p", "no:hypothesispytest", "--stedge-db", str(db), "--stedge-report", "none",
        *extra,
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=corpus.parent, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"session failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    run_id = con.execute("SELECT max(run_id) FROM runs").fetchone()[0]
    tool, items = con.execute(
        "SELECT coalesce(sum(tool_seconds), 0), count(*) FROM items "
        "WHERE run_id = ? AND stage = 'generate'",
        [run_id],
    ).fetchone()
    con.close()
    return wall, float(tool), int(items)


def bare_loop(corpus: Path, installs: Path, root: Path) -> float:
    """Wall seconds of the same generate command lines run one after the other, no harness."""
    from pytest_stedge.case.load import load_cases
    from pytest_stedge.tool.discovery import discover
    from pytest_stedge.tool.runner import build_argv

    install = discover([installs]).installs[0]
    commands = []
    for number, case_toml in enumerate(sorted(corpus.glob("*/case.toml"))):
        workdir = root / "bare" / f"{number:04d}"
        workdir.mkdir(parents=True, exist_ok=True)
        for case in load_cases(case_toml):
            commands.append((build_argv(case, "generate", install, workdir), workdir))
    start = time.perf_counter()
    for argv, workdir in commands:
        with open(workdir / "stedgeai.log", "wb") as sink:
            subprocess.run(argv, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def real_tool_like(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        installs, corpus = build(root / "with-oracle", args.cases, args.sleep)
        _, bare_corpus = build(root / "no-oracle", args.cases, args.sleep, oracle=False)
        db = root / "results.duckdb"
        live = ("--stedge-root", str(installs))
        harness: list[float] = []
        bare: list[float] = []
        for _ in range(args.rounds):  # alternate the sides: load changes between runs
            wall, _tool, items = session(bare_corpus, db, *live)
            harness.append(wall)
            bare.append(bare_loop(bare_corpus, installs, root))
        serial_wall, serial_tool, items = session(corpus, db, *live)
        xdist_wall, xdist_tool, _ = session(corpus, db, *live, "-n", "2")
    print(f"cases: {args.cases}, fake tool sleep: {args.sleep} s, generate items: {items}")
    ratio = statistics.median(harness) / statistics.median(bare)
    print(f"serial, oracle off: wall {statistics.median(harness):.2f} s, bare loop of the same "
          f"commands {statistics.median(bare):.2f} s, harness/bare = {ratio:.3f} (target <= 1.05; "
          f"rounds {', '.join(f'{h / b:.3f}' for h, b in zip(harness, bare, strict=True))})")
    print(f"serial: wall {serial_wall:.2f} s, tool {serial_tool:.2f} s, "
          f"wall/tool = {serial_wall / serial_tool:.3f}")
    print(f"-n 2:   wall {xdist_wall:.2f} s, tool {xdist_tool:.2f} s, "
          f"wall/serial wall = {xdist_wall / serial_wall:.3f} (target <= 0.60)")
    overhead_ms = (serial_wall - serial_tool) / items * 1000
    print(f"per-item harness overhead (serial, incl. oracle stage and pytest start-up): "
          f"{overhead_ms:.1f} ms")


def build_replay(root: Path, cases: int) -> tuple[Path, Path]:
    """A corpus of ``cases`` cases (no oracle item) whose generate is recorded in a store."""
    from pytest_stedge.case.load import load_cases
    from pytest_stedge.parsers import parse_path
    from pytest_stedge.store.database import Store

    installs, corpus = build(root, cases, 0.0, oracle=False)
    out = root / "recorded" / "st_ai_output"
    exe = installs / "4.0" / "Utilities" / "linux" / "stedgeai"
    subprocess.run(
        [str(exe), "generate", "--model", str(corpus / "case0000" / "model.onnx"),
         "--target", "stm32n6", "--st-neural-art", "--output", str(out),
         "--workspace", str(out.parent / "ws")],
        check=True, capture_output=True,
    )
    result = parse_path(out)
    result["stage"] = "generate"
    db = root / "results.duckdb"
    with Store.open(db) as store:
        for case_toml in sorted(corpus.glob("*/case.toml")):
            (case,) = load_cases(case_toml)
            store.add_recording(
                version=VERSION, case_name=case.name, stage="generate", result=result,
                source=str(out), model_sha256=case.model_sha256(),
                options_hash=case.options_hash(),
            )
    return corpus, db


def replay(args: argparse.Namespace) -> None:
    sizes = (args.cases, 2 * args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        built = {n: build_replay(root / f"n{n}", n) for n in sizes}
        serial: dict[int, list[float]] = {n: [] for n in sizes}
        serial_cpu: dict[int, list[float]] = {n: [] for n in sizes}
        xdist: list[float] = []
        xdist_cpu: list[float] = []
        # the reference: pytest-xdist itself, as many trivial tests as the larger corpus
        trivial = root / "test_trivial.py"
        trivial.write_text("import pytest\n\n\n@pytest.mark.parametrize('i', "
                           f"range({sizes[1]}))\ndef test_nothing(i):\n    pass\n")
        bare_serial: list[float] = []
        bare_xdist: list[float] = []
        versions = ("--stedge-version", VERSION)
        for _ in range(args.rounds):  # alternate, so the machine's noise hits all alike
            for n in sizes:
                corpus, db = built[n]
                wall, _, items = session(corpus, db, *versions)
                assert items == n, (items, n)
                serial[n].append(wall)
                serial_cpu[n].append(_cpu[-1])
            corpus, db = built[sizes[1]]
            xdist.append(session(corpus, db, *versions, "-n", "2")[0])
            xdist_cpu.append(_cpu[-1])
            for extra, walls in (((), bare_serial), (("-n", "2"), bare_xdist)):
                walls.append(_bare_session(trivial, *extra))
    small, large = (statistics.median(serial[n]) for n in sizes)
    cpu_small, cpu_large = (statistics.median(serial_cpu[n]) for n in sizes)
    per_item = (large - small) / (sizes[1] - sizes[0])
    per_item_cpu = (cpu_large - cpu_small) / (sizes[1] - sizes[0])
    fixed = small - per_item * sizes[0]
    parallel, parallel_cpu = statistics.median(xdist), statistics.median(xdist_cpu)
    load = os.getloadavg()[0]
    print(f"replayed corpus: {sizes[0]} and {sizes[1]} cases (one recorded generate item "
          f"each, no oracle item), median of {args.rounds} rounds; load average {load:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"serial: {small:.2f} s and {large:.2f} s -> per-item harness overhead "
          f"{per_item * 1000:.1f} ms (target <= 8 ms), fixed {fixed:.2f} s a session; "
          f"CPU {per_item_cpu * 1000:.1f} ms per item")
    print(f"-n 2 on {sizes[1]} cases: wall {parallel:.2f} s, wall/serial wall = "
          f"{parallel / large:.3f} (target <= 0.60)")
    bare = statistics.median(bare_xdist) / statistics.median(bare_serial)
    print(f"pytest-xdist alone, {sizes[1]} trivial tests: -n 2 wall / serial wall = "
          f"{bare:.3f} (no plugin; what two workers give on this machine at best)")
    # What two idle cores allow: the three processes' CPU spread over both cores.
    print(f"-n 2 CPU (controller + 2 workers) {parallel_cpu:.2f} s against serial "
          f"{cpu_large:.2f} s: on two idle cores at best {parallel_cpu / 2 / cpu_large:.3f} "
          f"of serial")


def _bare_session(test_file: Path, *extra: str) -> float:
    """Wall seconds of plain pytest on ``test_file`` (our plugin off)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:stedge",
            "-p", "no:hypothesispytest", "--rootdir", str(test_file.parent), str(test_file), *extra]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=test_file.parent, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"plain pytest failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=None,
                        help="cases (default 40; replay: 200, and twice as many)")
    parser.add_argument("--sleep", type=float, default=0.5)
    parser.add_argument("--replay", action="store_true", help="replayed corpus, near-free tool")
    parser.add_argument("--rounds", type=int, default=2, help="rounds to take medians of")
    args = parser.parse_args()
    if args.replay:
        args.cases = args.cases or 200
        replay(args)
    else:
        args.cases = args.cases or 40
        real_tool_like(args)


if __name__ == "__main__":
    main()

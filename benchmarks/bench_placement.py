"""Benchmark of the N6 placement oracle (prints figures; no assertions).

    python benchmarks/bench_placement.py                  # the score, then the command's time
    python benchmarks/bench_placement.py --startup-only   # the command's time only
    BENCH_ROUNDS=9 python benchmarks/bench_placement.py   # more alternating rounds (default 5)

Issue 27 targets: over every real N6 run of ../shared with an epoch table and its model,
leave one model out (a run's own model never teaches its prediction): operator-type
precision and recall of predicted SW+hybrid >= 0.9 each, exact SW/hybrid epoch counts on
>= 70% of runs; ``stedge oracle MODEL --version V`` on a 500-node model <= 1 s.

The command's time is printed apart from what any Python program that reads ONNX pays
(an interpreter's start-up, ``import onnx``): the whole process, a bare interpreter and
``import onnx`` alone are run in alternating rounds, and a child process times the
command's own phases from inside (after ``import onnx``), then its parts (parse with shape
inference, memory analysis, placement). Wall and CPU seconds, medians.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.model.files import open_graph
from pytest_stedge.oracle.placement.predict import predict_placement
from pytest_stedge.oracle.placement.scoring import leave_one_model_out
from pytest_stedge.oracle.placement.table import load_table

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def qdq_chain(path: Path, blocks: int) -> Path:
    """A QDQ model of ``blocks`` (DQ -> Conv -> Q) blocks with a Softmax head: 3 nodes per
    block plus the weights' DQ (4 per block), as onnxruntime's quantizer writes them."""
    nodes, inits = [], []
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, np.int8), "z")
    inits += [scale, zero]
    nodes.append(helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q0"], name="q_in"))
    prev = "q0"
    for i in range(blocks):
        inits.append(numpy_helper.from_array(np.ones((8, 8, 1, 1), np.int8), f"w{i}"))
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}", "s", "z"], [f"wf{i}"],
                                      name=f"dqw{i}"))
        nodes.append(helper.make_node("DequantizeLinear", [prev, "s", "z"], [f"a{i}"],
                                      name=f"dq{i}"))
        nodes.append(helper.make_node("Conv", [f"a{i}", f"wf{i}"], [f"c{i}"], name=f"conv{i}"))
        nodes.append(helper.make_node("QuantizeLinear", [f"c{i}", "s", "z"], [f"q{i + 1}"],
                                      name=f"q{i}"))
        prev = f"q{i + 1}"
    nodes.append(helper.make_node("DequantizeLinear", [prev, "s", "z"], ["d"], name="dq_out"))
    nodes.append(helper.make_node("Softmax", ["d"], ["sm"], name="softmax", axis=1))
    nodes.append(helper.make_node("QuantizeLinear", ["sm", "s", "z"], ["qo"], name="q_out"))
    nodes.append(helper.make_node("DequantizeLinear", ["qo", "s", "z"], ["y"], name="dq_y"))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


# Run in a child interpreter: the command's phases timed from inside, so that interpreter
# start-up and onnx's import are measured apart from what `stedge oracle` itself does.
_PHASES = r"""
import contextlib, io, json, sys, time
clock, cpu = time.perf_counter, time.process_time
marks = [("start", clock(), cpu())]
import onnx
marks.append(("import onnx", clock(), cpu()))
from pytest_stedge.cli.main import main
marks.append(("import the stedge command", clock(), cpu()))
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["oracle", sys.argv[1], "--version", "2.2.0"])
marks.append(("stedge oracle --version (its own work)", clock(), cpu()))
from pytest_stedge.oracle.memory.analysis import analyze_graph
from pytest_stedge.oracle.model.files import open_graph
from pytest_stedge.oracle.placement.predict import predict_placement
graph = open_graph(sys.argv[1])
marks.append(("  of which: parse + shape inference", clock(), cpu()))
analyze_graph(graph)
marks.append(("  of which: memory analysis", clock(), cpu()))
predict_placement(graph, "2.2.0")
marks.append(("  of which: placement", clock(), cpu()))
print(json.dumps({"code": code, "marks": marks}), file=sys.stderr)
"""


def _child(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stderr


def command_phases(model: Path, count: int, rounds: int) -> None:
    """``stedge oracle MODEL --version`` as a user runs it, and its parts, in alternating
    rounds (every side sees the same load): a bare interpreter, ``import onnx`` alone,
    the whole command (with bytecode cached, and without: PYTHONDONTWRITEBYTECODE=1
    compiles every module on every run), and a child that times its phases from inside.
    Medians of wall and CPU seconds; on a loaded machine CPU is the steadier figure."""
    py = sys.executable
    command = [py, "-m", "pytest_stedge.cli.main", "oracle", str(model), "--version", "2.2.0"]
    # bytecode cached, as an installed package runs (pip compiles it): a cache folder of
    # its own, filled by a first round that is not counted
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(model.parent / "pycache")
    uncached = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    sides: dict[str, list[tuple[float, float]]] = {}
    phases: dict[str, list[tuple[float, float]]] = {}
    _child([py, "-c", _PHASES, str(model)], cached)
    for _ in range(rounds):
        for name, argv, env in (
            ("python -c pass (interpreter start-up)", [py, "-c", "pass"], cached),
            ("python -c 'import onnx'", [py, "-c", "import onnx"], cached),
            (f"stedge oracle {count}-node model --version 2.2.0 (whole process)", command, cached),
            ("  the same, no bytecode cache (every module compiled)", command, uncached),
        ):
            wall, cpu, _ = _child(argv, env)
            sides.setdefault(name, []).append((wall, cpu))
        _, _, err = _child([py, "-c", _PHASES, str(model)], cached)
        marks = json.loads(err.strip().splitlines()[-1])["marks"]
        for previous, mark in itertools.pairwise(marks):
            phases.setdefault(mark[0], []).append((mark[1] - previous[1], mark[2] - previous[2]))
    load = os.getloadavg()[0]
    print(f"stedge oracle with placement, {rounds} alternating rounds (load average {load:.1f} "
          f"on {os.cpu_count()} cores): median wall / CPU seconds")
    for name, values in [*sides.items(), *phases.items()]:
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"  {name:<55} {wall:6.2f} s wall  {cpu:5.2f} s CPU")
    whole = statistics.median(v[0] for v in sides[next(k for k in sides if "whole" in k)])
    own = statistics.median(v[0] for v in phases["stedge oracle --version (its own work)"])
    print(f"  target <= 1 s: the command's own work {own:.2f} s; the whole process {whole:.2f} s "
          "(interpreter start-up and onnx's import included)")


def main() -> int:
    if "--startup-only" in sys.argv[1:]:
        pass
    elif (SHARED / "real-cases").is_dir():
        start = time.perf_counter()
        score = leave_one_model_out(SHARED)
        took = time.perf_counter() - start
        print("leave-one-model-out over the real N6 runs of ../shared "
              f"({took:.1f} s, table rebuilt per model):")
        for run in score.runs:
            if run.real_ops or run.predicted_ops or not run.exact:
                print(f"  {run.folder} ({run.version}): real {sorted(run.real_ops)} "
                      f"{run.real_counts}, predicted {sorted(run.predicted_ops)} "
                      f"{run.predicted_counts}{'' if run.exact else '  COUNTS DIFFER'}")
        for folder, why in score.skipped:
            print(f"  not scored: {folder}: {why}")
        summary = score.summary()
        print(f"  operator types: precision {summary['precision']:.3f}, recall "
              f"{summary['recall']:.3f} (TP {summary['tp']}, FP {summary['fp']}, "
              f"FN {summary['fn']}; target >= 0.9 each)")
        print(f"  exact SW/hybrid epoch counts: {summary['exact_counts']:.1%} of "
              f"{summary['runs']} runs (target >= 70%); "
              f"{summary['exact_counts_runs_with_sw']:.1%} of the "
              f"{summary['runs_with_sw_or_hybrid']} runs with SW/hybrid epochs")
    else:
        print("../shared/real-cases absent: the leave-one-model-out score needs the real runs")
    with tempfile.TemporaryDirectory() as tmp:
        model = qdq_chain(Path(tmp) / "chain500.onnx", 124)
        count = len(onnx.load(str(model)).graph.node)
        table = load_table()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            predict_placement(open_graph(model), "2.2.0", table=table)
            times.append(time.perf_counter() - start)
        print(f"placement of a {count}-node QDQ model (load + predict, in this process): "
              f"median {statistics.median(times) * 1000:.0f} ms")
        command_phases(model, count, rounds=int(os.environ.get("BENCH_ROUNDS", "5")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the N6 placement oracle (prints figures; no assertions).

    python benchmarks/bench_placement.py

Issue 27 targets: over every real N6 run of ../shared with an epoch table and its model,
leave one model out (a run's own model never teaches its prediction): operator-type
precision and recall of predicted SW+hybrid >= 0.9 each, exact SW/hybrid epoch counts on
>= 70% of runs; ``stedge oracle MODEL --version V`` on a 500-node model <= 1 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.model_files import open_graph
from pytest_stedge.oracle.placement import predict_placement
from pytest_stedge.oracle.placement_eval import leave_one_model_out
from pytest_stedge.oracle.placement_table import load_table

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


def main() -> int:
    if (SHARED / "real-cases").is_dir():
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
        print(f"placement of a {count}-node QDQ model (load + predict): "
              f"median {statistics.median(times) * 1000:.0f} ms")
        cli = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "oracle",
                            str(model), "--version", "2.2.0"], check=True,
                           capture_output=True)
            cli.append(time.perf_counter() - start)
        print(f"stedge oracle {count}-node model --version 2.2.0 (whole process): "
              f"median {statistics.median(cli):.2f} s (target <= 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

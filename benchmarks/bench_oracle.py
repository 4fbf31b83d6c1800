"""Benchmark of the oracle's memory analysis (prints figures; no assertions).

    python benchmarks/bench_oracle.py

Targets (issue 4): densenet121 (light, 1,746 nodes) <= 0.3 s including load and
shape inference; a generated 5,000-node chain <= 2 s; plan_bytes == lower bound on
every light model but at most one and within 1.01 on all.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle import analyze_model

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _timed(path: Path, repeat: int = 5) -> tuple[float, dict]:
    times = []
    report: dict = {}
    for _ in range(repeat):
        start = time.perf_counter()
        report = analyze_model(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), report


def _chain(path: Path, nodes: int) -> Path:
    """A chain of Add(x, const) and Relu nodes with growing/shrinking sizes."""
    items, inits, prev = [], [], "x"
    inits.append(numpy_helper.from_array(np.ones((1, 64), np.float32), "c"))
    for i in range(nodes):
        op = "Relu" if i % 2 else "Add"
        inputs = [prev] if op == "Relu" else [prev, "c"]
        items.append(helper.make_node(op, inputs, [f"t{i}"], name=f"n{i}"))
        prev = f"t{i}"
    graph = helper.make_graph(
        items,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 64])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def main() -> None:
    dense = LIGHT / "light_densenet121.onnx"
    seconds, report = _timed(dense)
    print(
        f"densenet121: {seconds:.3f} s median of 5 (target <= 0.3 s), "
        f"{report['steps']} steps, lower bound {report['lower_bound_bytes']:,} B"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = _chain(Path(tmp) / "chain.onnx", 5000)
        seconds, report = _timed(path, repeat=3)
        print(
            f"5,000-node chain: {seconds:.3f} s median of 3 (target <= 2 s), "
            f"lower bound {report['lower_bound_bytes']:,} B"
        )
        path = _chain(Path(tmp) / "chain20k.onnx", 20000)
        seconds20, _ = _timed(path, repeat=1)
        print(
            f"20,000-node chain: {seconds20:.3f} s (linear scaling check: x{seconds20 / seconds:.1f} for x4 nodes)"
        )
    print("plan quality on the light models:")
    exact = 0
    models = sorted(LIGHT.glob("*.onnx"))
    for model in models:
        seconds, r = _timed(model, repeat=1)
        ratio = r["plan_bytes"] / r["lower_bound_bytes"]
        exact += r["plan_bytes"] == r["lower_bound_bytes"]
        print(
            f"  {model.stem:<22} bound {r['lower_bound_bytes']:>12,} plan {r['plan_bytes']:>12,} "
            f"ratio {ratio:.4f} ({r['plan_strategy']}, {seconds:.3f} s)"
        )
    print(f"plan == bound on {exact}/{len(models)} (target: all but at most one; all within 1.01)")


if __name__ == "__main__":
    main()

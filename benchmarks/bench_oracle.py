"""Benchmark of the oracle's memory analysis (prints figures; no assertions).

    python benchmarks/bench_oracle.py

Targets: densenet121 (light, 1,746 nodes) <= 0.3 s including load and shape
inference (issue 4, kept by issue 12 with the N6 deployment rules and by issue 26
with the admissible floor); a 3.5 MB int8 TFLite detector <= 1 s (issue 12); a
generated 5,000-node chain <= 2 s and a 20,000-node one <= 6 s (issue 26); the plan
reaches the liveness bound of the typical deployment on every light model and every
model of ../shared/real-cases, the qwen2-style decoder included (issue 18, target 6).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))

from tflite_nets import detector

from pytest_stedge.oracle import analyze_model

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real-cases"
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
        det = detector(Path(tmp) / "detector_int8.tflite")
        seconds, report = _timed(det)
        print(
            f"{det.stat().st_size / 1e6:.1f} MB int8 TFLite detector: {seconds:.3f} s median of 5 "
            f"(target <= 1 s), {report['steps']} steps, floor {report['lower_bound_bytes']:,} B"
        )
    if REAL.is_dir():
        print("plan vs bound on the real-cases models (as their runs deploy them):")
        from pytest_stedge.oracle.memory.real_pairs import deployment_options, real_pairs

        seen: set[tuple[str, str]] = set()
        at_bound = total = 0
        for pair in real_pairs(REAL):
            key = (str(pair.model), " ".join(deployment_options(pair.options)) + str(pair.target))
            if key in seen:
                continue
            seen.add(key)
            start = time.perf_counter()
            r = analyze_model(
                pair.model, target=pair.target, options=deployment_options(pair.options)
            )
            took = time.perf_counter() - start
            total += 1
            at_bound += r["plan_bytes"] == r["typical_bound_bytes"]
            print(
                f"  {pair.model.name[:40]:<41}{r['deployment']['family']:<8} floor "
                f"{r['lower_bound_bytes']:>10,} typical bound {r['typical_bound_bytes']:>10,} "
                f"plan {r['plan_bytes']:>10,} ({r['plan_strategy']}, {took:.3f} s)"
            )
        print(
            f"plan == typical bound on {at_bound}/{total} real-cases model deployments "
            "(target: all)"
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
            f"20,000-node chain: {seconds20:.3f} s (target <= 6 s; linear scaling check: "
            f"x{seconds20 / seconds:.1f} for x4 nodes)"
        )
    print("plan quality on the light models:")
    exact = 0
    models = sorted(LIGHT.glob("*.onnx"))
    for model in models:
        seconds, r = _timed(model, repeat=1)
        ratio = r["plan_bytes"] / r["typical_bound_bytes"]
        exact += r["plan_bytes"] == r["typical_bound_bytes"]
        print(
            f"  {model.stem:<22} floor {r['lower_bound_bytes']:>12,} typical bound "
            f"{r['typical_bound_bytes']:>12,} plan {r['plan_bytes']:>12,} "
            f"ratio {ratio:.4f} ({r['plan_strategy']}, {seconds:.3f} s)"
        )
    print(f"plan == typical bound on {exact}/{len(models)} light models (target: all)")


if __name__ == "__main__":
    main()

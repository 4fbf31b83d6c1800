"""The oracle's plan side by side with TensorFlow Lite Micro's arena, per TFLite model.

    pip install --pre tflite-micro      # benchmarks only, not a dependency
    python benchmarks/bench_tflm.py

For every .tflite in ../shared (and the generated detector), TFLM's interpreter plans
its arena; its "head" is the non-persistent part, the activation tensors it planned.
TFLM runs the graph as exported (no overlay, no NPU streaming), so the comparable
figure is the oracle's offset plan of the exported graph ("plan"); the MCU floor (with
overlay) is printed too. plan / TFLM <= 1 means the oracle's planner is at least as
good as TFLM's greedy one.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus" / "nets"))

from tflite_nets import detector

from pytest_stedge.oracle import analyze_model
from pytest_stedge.oracle.memory.analysis import analyze_graph
from pytest_stedge.oracle.model.files import open_graph

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def tflm_head(path: Path) -> int | None:
    """TFLM's planned activation bytes ('Arena allocation head'), from its own report.

    TFLM prints the report from C++ buffered stdio: a child process captures it whole.
    """
    code = (
        "import sys\n"
        "from tflite_micro import runtime\n"
        "i = runtime.Interpreter.from_file(sys.argv[1], arena_size=64 * 1024 * 1024)\n"
        "i.print_allocations()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300, check=False
    )
    found = re.search(r"Arena allocation head (\d+) bytes", done.stdout + done.stderr)
    if found is None:
        raise RuntimeError((done.stderr or done.stdout).strip().splitlines()[-1:] or ["no report"])
    return int(found.group(1))


def main() -> None:
    models = sorted({p.resolve() for p in SHARED.rglob("*.tflite")}) if SHARED.is_dir() else []
    with tempfile.TemporaryDirectory() as tmp:
        models.append(detector(Path(tmp) / "detector_int8.tflite"))
        print(f"{'model':<48}{'TFLM head':>12}{'plan':>12}{'plan/TFLM':>11}{'MCU floor':>12}")
        for path in models:
            try:
                head = tflm_head(path)
            except Exception as exc:  # noqa: BLE001 - TFLM lacks some kernels
                print(f"{path.name[:47]:<48} TFLM cannot load it: {str(exc)[:60]}")
                continue
            plan = analyze_graph(open_graph(path))["plan_bytes"]
            floor = analyze_model(path, target="stm32h7")["lower_bound_bytes"]
            ratio = f"{plan / head:.3f}" if head else "n/a"
            print(f"{path.name[:47]:<48}{head or 0:>12,}{plan:>12,}{ratio:>11}{floor:>12,}")


if __name__ == "__main__":
    main()

"""Parser speed: the whole samples folder on one core, and growth with c_info.json size.

Run: ``python benchmarks/bench_parsers.py [--shared ../shared] [--repeat 3]``

1. Parses every file under ``stedgeai-samples`` one by one (what the walk test does) and
   every sample folder as a whole; prints the best of ``--repeat`` wall times.
2. Scales the largest N6 c_info.json to 1x, 2x, 5x and 10x its graph nodes and buffers and
   prints parse time and time per MB: a flat time/MB means linear cost.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers import parse_path

SCALED_SEED = "n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs/network_model.tflite_c_info.json"


def _pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        except OSError:
            pass


def _best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_samples(samples: Path, repeat: int) -> None:
    files = sorted(p for p in samples.rglob("*") if p.is_file())
    folders = sorted(p for p in samples.iterdir() if p.is_dir())
    size = sum(p.stat().st_size for p in files)

    def every_file() -> None:
        for path in files:
            try:
                parse_path(path)
            except ReportParseError:
                pass

    def every_folder() -> None:
        for folder in folders:
            try:
                parse_path(folder)
            except ReportParseError:
                pass

    t_files = _best(every_file, repeat)
    t_folders = _best(every_folder, repeat)
    print(f"samples: {len(files)} files, {size / 1e6:.1f} MB, {len(folders)} folders")
    print(
        f"  every file one by one : {t_files:.3f} s  ({size / 1e6 / t_files:.1f} MB/s)  target <= 3 s"
    )
    print(f"  every folder merged   : {t_folders:.3f} s")


def scaled(doc: dict[str, Any], factor: int) -> dict[str, Any]:
    """``doc`` with its epoch nodes and buffers repeated ``factor`` times (fresh ids)."""
    out = copy.deepcopy(doc)
    nodes = out["graphs"][0]["nodes"]
    buffers = out.get("buffers", [])
    base_nodes, base_buffers = list(nodes), list(buffers)
    count = len(base_nodes)
    for k in range(1, factor):
        for node in base_nodes:
            clone = copy.deepcopy(node)
            clone["id"] = node.get("id", 0) + k * 100_000
            name = str(node.get("name", ""))
            if name.startswith("epoch_"):
                clone["name"] = f"epoch_{int(name[6:]) + k * count}"
            nodes.append(clone)
        for buf in base_buffers:
            clone = copy.deepcopy(buf)
            clone["id"] = buf.get("id", 0) + k * 100_000
            buffers.append(clone)
    # per-epoch arrays keyed by node id grow with the nodes
    for key in ("memory_accesses", "power_estimates"):
        rows = out.get(key)
        if isinstance(rows, list):
            out[key] = rows * factor
    return out


def bench_scaling(samples: Path, repeat: int) -> None:
    seed = json.loads((samples / SCALED_SEED).read_text())
    print(f"c_info scaling (seed {SCALED_SEED}):")
    print(f"  {'factor':>6} {'nodes':>7} {'buffers':>8} {'MB':>7} {'time s':>8} {'ms/MB':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for factor in (1, 2, 5, 10, 20):
            doc = scaled(seed, factor)
            path = Path(tmp) / "network_c_info.json"
            path.write_text(json.dumps(doc, indent=1))
            mb = path.stat().st_size / 1e6
            seconds = _best(lambda target=path: parse_path(target), repeat)
            nodes = len(doc["graphs"][0]["nodes"])
            print(
                f"  {factor:>6} {nodes:>7} {len(doc.get('buffers', [])):>8} {mb:>7.2f} {seconds:>8.3f} {seconds * 1e3 / mb:>7.1f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--shared", type=Path, default=ROOT.parent / "shared", help="the ../shared folder"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measure; the best is printed"
    )
    args = parser.parse_args(argv)
    samples = args.shared / "stedgeai-samples"
    if not samples.is_dir():
        print(f"no samples at {samples}", file=sys.stderr)
        return 2
    _pin_one_core()
    bench_samples(samples, args.repeat)
    bench_scaling(samples, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Parser speed: the whole samples folder on one core, growth with c_info.json size, text
reports against the cost of reading them, error-heavy output and a tool that floods its log.

Run: ``python benchmarks/bench_parsers.py [--shared ../shared] [--repeat 3]``

1. Parses every file under ``stedgeai-samples`` one by one (what the walk test does) and
   every sample folder as a whole; prints the best of ``--repeat`` wall times.
2. Scales the largest N6 c_info.json to 1x, 2x, 5x and 10x its graph nodes and buffers and
   prints parse time and time per MB: a flat time/MB means linear cost.
3. Every text report and console capture of ../shared (samples and real cases): parse time
   / read+decode time, per file, the two measured alternately in one run (target <= 10x).
4. 5,000 and 20,000 distinct error lines through ``extract_diagnostics`` and through a
   whole console parse (target: 20,000 lines < 1 s).
5. A fake tool that prints 20,000 error lines then hangs, run with a 5 s timeout: how long
   past the timeout ``run_tool`` plus the diagnostics of its output take (target < 1 s).
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

from pytest_stedge.errors import ReportParseError, ToolchainError
from pytest_stedge.parsers import extract_diagnostics, parse_path
from pytest_stedge.parsers.common import decode_text, read_bytes
from pytest_stedge.parsers.report_txt import parse_text_report
from pytest_stedge.tool.discovery import run_tool

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


def _text_files(shared: Path) -> list[Path]:
    return sorted(
        p
        for p in shared.rglob("*")
        if p.is_file() and p.suffix in (".txt", ".log") and p.name != "SOURCE.txt"
    )


def bench_text_ratio(shared: Path, repeat: int) -> None:
    """parse / (read + decode) per text file; both timed alternately, best of ``repeat``.

    CPU time of the process (``time.process_time``): on a shared machine the wall time of a
    few milliseconds mostly measures waiting for a core.
    """
    rows = []
    total_read = total_parse = 0.0
    clock = time.process_time
    for path in _text_files(shared):
        read = parse = float("inf")
        for _ in range(max(repeat, 9)):
            start = clock()
            text = decode_text(path, read_bytes(path))
            read = min(read, clock() - start)
            start = clock()
            try:
                parse_text_report(path, text)
            except ReportParseError:
                pass
            parse = min(parse, clock() - start)
        total_read += read
        total_parse += parse
        rows.append((parse / read, parse, read, path))
    rows.sort(key=lambda r: r[0], reverse=True)
    print(f"text reports: parse / (read+decode), {len(rows)} files (target <= 10x each)")
    print(f"  {'ratio':>6} {'parse ms':>9} {'read ms':>8}  file")
    for ratio, parse, read, path in rows[:10]:
        print(f"  {ratio:>5.1f}x {parse * 1e3:>9.2f} {read * 1e3:>8.3f}  {path.relative_to(shared)}")
    over = [r for r in rows if r[0] > 10]
    print(
        f"  all files: {total_parse / total_read:.1f}x ({total_parse:.3f} s / {total_read:.3f} s); "
        f"median {rows[len(rows) // 2][0]:.1f}x; worst {rows[0][0]:.1f}x; over 10x: {len(over)}"
    )


def bench_errors(repeat: int) -> None:
    print("error lines (target: 20,000 in < 1 s):")
    for count in (5_000, 20_000):
        text = "\n".join(
            f"E103(InvalidModelError): layer conv_{i} of the model is not supported"
            for i in range(count)
        )
        seconds = _best(lambda t=text: extract_diagnostics(t), repeat)
        report = "ST Edge AI Core v4.0.0-20500 359356bb0\n" + text
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "console.txt"
            path.write_text(report)
            whole = _best(lambda p=path: parse_path(p), repeat)
        print(f"  {count:>6} lines: extract_diagnostics {seconds:.3f} s, whole console parse {whole:.3f} s")


def bench_flooding_tool(timeout: float = 5.0) -> None:
    script = (
        "import sys, time\n"
        "for i in range(20000):\n"
        "    print(f'E103(InvalidModelError): layer conv_{i} of the model is not supported')\n"
        "sys.stdout.flush()\n"
        "time.sleep(3600)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        try:
            run_tool([sys.executable, "-c", script], cwd=Path(tmp), timeout=timeout)
        except ToolchainError as exc:
            diagnostics = extract_diagnostics(exc.output_tail)
        else:
            diagnostics = []
        elapsed = time.perf_counter() - start
    print(
        f"flooding tool (20,000 error lines, then hangs; timeout {timeout:g} s): item done after "
        f"{elapsed:.2f} s = timeout + {elapsed - timeout:.2f} s (target < 1 s); "
        f"{len(diagnostics)} diagnostics from the tail"
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
    bench_text_ratio(args.shared, args.repeat)
    bench_errors(args.repeat)
    bench_flooding_tool()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

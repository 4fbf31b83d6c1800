"""How fast the HTML reports render from a large store (issue 6's speed targets).

Generates a store of 200 cases x 30 versions x 30 metrics (180,000 metric rows, one
run per version, 5 known bugs with findings on every version), then prints:
- the diff page of the two newest versions: diff_store + render time (target <= 1 s)
  and size (target < 2 MB); also a worst case where all 30 metrics of every case
  are classified changes;
- the whole dashboard (index, matrix, bug pages, 200 case pages) (target <= 5 s).

    python benchmarks/bench_reports.py [--cases 200] [--versions 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from pytest_stedge.diff import ChangeKind, DiffReport, MetricChange, diff_store
from pytest_stedge.report import render_dashboard, render_diff_page
from pytest_stedge.result import METRICS, flat_metrics, new_result
from pytest_stedge.store.database import ItemRow, Store

EXTRA = [f"pool_{i}_used_bytes" for i in range(9)]  # 21 known metrics + 9 = 30
BUGS = 5
BUG_TOML = """\
id = "bug-{n}"
title = "Synthetic bug {n}"
source = "https://example.org/bugs/{n}"
affected = "<2.0"
fixed_in = "2.0.0"
status = "fixed"
reproducers = ["case-{a:03d}", "case-{b:03d}", "case-{c:03d}"]
signature = "epochs_sw > 0"
"""


def _result(rng: random.Random, case: int, step: int) -> dict:
    activations = 100_000 + case * 1_000 + rng.randrange(0, 4096) * step
    sw = max(0, 3 - step // 5)
    return new_result(
        "validate",
        memory={
            "weights_bytes": 50_000 + case * 500 + 64 * step,
            "activations_bytes": activations,
            "io_bytes": [3 * 32 * 32, 40],
        },
        macc=1_000_000 + case,
        epochs={"total": 40 + sw, "hw": 30, "ec": 10, "sw": sw, "hybrid": step % 2},
        validation={
            "duration_ms": 2.0 + step / 10,
            "outputs": [
                {"name": "out", "acc": 99.0, "rmse": 0.01, "mae": 0.005, "l2r": 0.02,
                 "snr": 35.0 - step / 10, "nse": 0.999, "cos": 0.999}
            ],
        },
        oracle={"lower_bound_bytes": 90_000 + case * 900, "float_nodes": ["a"] * (step % 3)},
    )


def build(db: Path, bugs_dir: Path, cases: int, versions: list[str]) -> int:
    """Write the store; return its number of metric rows."""
    rng = random.Random(6)
    bugs_dir.mkdir(parents=True, exist_ok=True)
    for n in range(BUGS):
        (bugs_dir / f"bug-{n}.toml").write_text(
            BUG_TOML.format(n=n, a=3 * n, b=3 * n + 1, c=3 * n + 2), encoding="utf-8"
        )
    count = 0
    with Store.open(db) as store:
        for step, version in enumerate(versions):
            run_id = store.begin_run(argv=["pytest", "corpus"], versions=[version])
            rows = []
            for case in range(cases):
                result = _result(rng, case, step)
                metrics = flat_metrics(result)
                metrics.update({name: float(rng.randrange(1, 1 << 20)) for name in EXTRA})
                findings = []
                if case < 3 * BUGS:
                    findings.append(
                        {
                            "bug_id": f"bug-{case // 3}",
                            "status": "reproduced" if metrics["epochs_sw"] > 0 else "not-reproduced",
                            "evidence": {"signature": "epochs_sw > 0",
                                         "values": {"epochs_sw": metrics["epochs_sw"]}},
                        }
                    )
                rows.append(
                    ItemRow(
                        nodeid=f"corpus/case-{case:03d}/case.toml::generate[{version}]",
                        case_name=f"case-{case:03d}",
                        stage="generate",
                        version=version,
                        outcome="passed",
                        model_sha256=f"sha-{case}",
                        options_hash="opt",
                        result=result,
                        metrics=metrics,
                        findings=findings,
                    )
                )
                count += len(metrics)
            store.add_items(run_id, rows)
            store.finish_run(run_id, status="passed", exitstatus=0)
    return count


def worst_case(cases: int, base: str, head: str) -> DiffReport:
    """Every one of 30 metrics of every case a classified change."""
    kinds = list(ChangeKind)
    names = list(METRICS) + EXTRA
    report = DiffReport(base=base, head=head)
    for case in range(cases):
        for i, metric in enumerate(names[:30]):
            old, new = 100_000.0 + i, 101_000.0 + i
            report.changes.append(
                MetricChange(f"case-{case:03d}", "generate", metric, old, new, new - old,
                             (new - old) / old * 100, kinds[(case + i) % len(kinds)], "+3%",
                             True, "B", "lower")
            )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--keep", type=Path, default=None, help="Write the outputs here")
    parser.add_argument(
        "--reuse", action="store_true", help="Reuse the store already in --keep (building takes minutes)"
    )
    parser.add_argument("--scale", action="store_true",
                        help="Issue 18 target 5: the dashboard at 1.8M metric rows (default 2000 cases)")
    args = parser.parse_args()
    if args.scale:
        scale(2000 if args.cases == 200 else args.cases, args.versions)
        return 0
    versions = [f"{1 + i // 10}.{i % 10}.0" for i in range(args.versions)]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        db = root / "bench.duckdb"
        if not (args.reuse and db.exists()):
            if db.exists():
                db.unlink()
            started = time.perf_counter()
            rows = build(db, root / "bugs", args.cases, versions)
            print(f"store: {args.cases} cases x {len(versions)} versions, {rows:,} metric rows "
                  f"(built in {time.perf_counter() - started:.1f} s through Store.add_items)")
        base, head = versions[-2], versions[-1]
        with Store.open(db, create=False) as store:
            store.metric_rows(versions=[base, head])  # warm DuckDB up, as a CLI would once
            t0 = time.perf_counter()
            report = diff_store(store, base, head)
            t1 = time.perf_counter()
            page = render_diff_page(report, store, root / f"diff-{base}-{head}.html")
            t2 = time.perf_counter()
            size = page.stat().st_size
            print(f"diff {base} -> {head}: {len(report.changes):,} changes; diff_store "
                  f"{t1 - t0:.3f} s + render {t2 - t1:.3f} s = {t2 - t0:.3f} s (target <= 1 s); "
                  f"page {size / 1e6:.2f} MB (target < 2 MB)")
            heavy = worst_case(args.cases, base, head)
            t3 = time.perf_counter()
            page = render_diff_page(heavy, store, root / "diff-worst.html")
            t4 = time.perf_counter()
            print(f"diff worst case: {len(heavy.changes):,} changes rendered in {t4 - t3:.3f} s; "
                  f"page {page.stat().st_size / 1e6:.2f} MB")
            t5 = time.perf_counter()
            index = render_dashboard(store, root / "site", bugs_dir=root / "bugs")
            t6 = time.perf_counter()
            files = list(index.parent.rglob("*.html"))
            total = sum(p.stat().st_size for p in files)
            print(f"dashboard: {len(files)} pages, {total / 1e6:.2f} MB, in {t6 - t5:.3f} s "
                  "(target <= 5 s)")
    return 0




# -- issue 18 target 5: the dashboard at 1.8M metric rows --------------------------------

SCALE_DOC = """Dashboard at scale: a store of CASES x VERSIONS x 30 metrics written in bulk by SQL
(Store.add_items would take minutes), then `stedge dashboard` in a fresh process: wall time,
CPU time (user + system, DuckDB's threads included) and peak RSS (targets: 1.8M rows <= 10 s
and <= 300 MiB), at a tenth, a quarter and half of the cases and at half of the versions
(linear in both: the last column, time per metric row, stays flat).

    python benchmarks/bench_reports.py --scale [--cases 2000] [--versions 30]

The machine's load average is printed before and after: on a shared machine the wall
time grows with the load, the CPU time much less.
"""


def bulk_store(db: Path, bugs_dir: Path, cases: int, versions: list[str]) -> int:
    """The same shape of store as :func:`build`, written with set-based SQL."""
    import json as _json

    bugs_dir.mkdir(parents=True, exist_ok=True)
    for n in range(BUGS):
        (bugs_dir / f"bug-{n}.toml").write_text(
            BUG_TOML.format(n=n, a=3 * n, b=3 * n + 1, c=3 * n + 2), encoding="utf-8"
        )
    names = sorted(METRICS)[:21] + EXTRA
    units = [METRICS[m].unit if m in METRICS else None for m in names]
    with Store.open(db) as store:
        sql = store.db.execute
        for i, version in enumerate(versions):
            sql("INSERT INTO runs (run_id, run_uuid, started_at, status, host, argv, versions, "
                "baseline, plugin_version) VALUES (?, ?, now()::TIMESTAMP, 'passed', 'bench', "
                "'[]', ?, NULL, 'bench')", [i + 1, f"uuid-{i}", _json.dumps([version])])
        sql("CREATE TEMP TABLE v AS SELECT unnest(?) AS version, generate_subscripts(?, 1) AS run_id",
            [versions, versions])
        sql("CREATE TEMP TABLE m AS SELECT unnest(?) AS metric, unnest(?) AS unit, "
            "generate_subscripts(?, 1) AS k", [names, units, names])
        sql(f"""INSERT INTO items (run_id, nodeid, case_name, stage, version, model_sha256,
                options_hash, outcome, recorded, duration_s, tool_seconds, message, result,
                finished_at)
            SELECT v.run_id, 'corpus/case-' || lpad(c::VARCHAR, 4, '0') || '/case.toml::generate['
                   || v.version || ']', 'case-' || lpad(c::VARCHAR, 4, '0'), 'generate', v.version,
                   'sha-' || c, 'opt', 'passed', false, 0.1, NULL, NULL, '{{}}', now()::TIMESTAMP
            FROM range({cases}) t(c), v""")
        sql(f"""INSERT INTO metrics
            SELECT v.run_id, 'corpus/case-' || lpad(c::VARCHAR, 4, '0') || '/case.toml::generate['
                   || v.version || ']', 'case-' || lpad(c::VARCHAR, 4, '0'), 'generate', v.version,
                   m.metric, (100000 + c * 1000 + hash(c, v.run_id, m.k) % 4096)::DOUBLE, m.unit
            FROM range({cases}) t(c), v, m""")
        sql(f"""INSERT INTO findings
            SELECT v.run_id, 'corpus/case-' || lpad(c::VARCHAR, 4, '0') || '/case.toml::generate['
                   || v.version || ']', 'case-' || lpad(c::VARCHAR, 4, '0'), 'generate', v.version,
                   'bug-' || (c // 3), CASE WHEN v.run_id < 10 THEN 'reproduced' ELSE 'not-reproduced' END,
                   '{{"signature": "epochs_sw > 0", "values": {{"epochs_sw": 1}}, "reproducer": true}}'
            FROM range({min(cases, 3 * BUGS)}) t(c), v""")
        row = sql("SELECT count(*) FROM metrics").fetchone()
        return int(row[0]) if row else 0


def _timed_dashboard(db: Path, bugs: Path, out: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of `stedge dashboard` in its own process."""
    import subprocess

    code = (
        "import resource, sys, time\n"
        "from pytest_stedge.cli.main import main\n"
        "t = time.perf_counter()\n"
        f"main(['dashboard', '--db', {str(db)!r}, '--out', {str(out)!r}, '--corpus', {str(bugs.parent)!r}])\n"
        "use = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(time.perf_counter() - t, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=PROJECT)
    seconds, cpu, rss = proc.stdout.split()[-3:]
    return float(seconds), float(cpu), float(rss)


def scale(cases: int, versions_count: int) -> None:
    """Print the dashboard's time and memory at several sizes of store."""
    import os

    print(SCALE_DOC.splitlines()[0])
    print("load average before: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    sizes = [(cases // 10, versions_count), (cases // 4, versions_count),
             (cases // 2, versions_count), (cases, versions_count), (cases, versions_count // 2)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for c, n in sizes:
            versions = [f"{1 + i // 10}.{i % 10}.0" for i in range(n)]
            db = root / f"s{c}-{n}.duckdb"
            t0 = time.perf_counter()
            rows = bulk_store(db, root / "corpus" / "bugs", c, versions)
            built = time.perf_counter() - t0
            site = root / f"site-{c}-{n}"
            seconds, cpu, rss = _timed_dashboard(db, root / "corpus" / "bugs", site)
            pages = list(site.rglob("*.html"))
            size = sum(p.stat().st_size for p in pages)
            print(f"{c:>5} cases x {n:>2} versions = {rows:>9,} metric rows (bulk store {built:.1f} s): "
                  f"dashboard {seconds:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MiB, "
                  f"{len(pages)} pages ({size / 1e6:.0f} MB), {cpu / rows * 1e6:.2f} us CPU/row")
            db.unlink()
            shutil.rmtree(site)
    print("load average after: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())

"""Store write speed (issue 18, target 1), three paths measured in one run:

- the previous path (multi-row ``INSERT ... VALUES`` statements of 2,000 rows, the code
  `Store.add_items` had before; kept here as the reference);
- today's `Store.add_items` (rows as NumPy columns, one statement per table);
- a raw Arrow insert of the same rows, already built as Arrow tables, into the same
  schema (`INSERT OR REPLACE ... SELECT FROM arrow_table`): DuckDB's bulk speed.

Then `stedge import` of a bundle of 1.8M metric rows into a new store.
Targets: new >= 15x previous rows/s; new <= 1.5x the raw insert's time; import < 120 s.
pyarrow is needed here only (benchmark-only: `pip install pyarrow`).

    python benchmarks/bench_store.py [--items 7200] [--old-items 800] [--import-items 72000]
                                     [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from pytest_stedge.store.database import (
    CASE_COLUMNS,
    FINDING_COLUMNS,
    ITEM_COLUMNS,
    METRIC_COLUMNS,
    ItemRow,
    Store,
)

METRICS_PER_ITEM = 25
RESULT = {"schema": "stedge.result/1", "tool": {"version": "4.0.1"},
          "epochs": {"list": [{"id": i, "kind": "hw", "ops": ["Conv", "Relu"]} for i in range(12)]}}


def make_rows(count: int, offset: int = 0) -> list[ItemRow]:
    rows = []
    for n in range(offset, offset + count):
        case = f"case{n // 4:05d}"
        stage = ("generate", "validate-host", "analyze", "validate-target")[n % 4]
        rows.append(ItemRow(
            nodeid=f"corpus/{case}/case.toml::{stage}[4.0.1]", case_name=case, stage=stage,
            version="4.0.1", outcome="passed", model_sha256=f"{n // 4:064x}",
            options_hash=f"{n % 7:016x}", duration_s=0.5, tool_seconds=0.4, result=RESULT,
            metrics={f"metric_{j:02d}": float(n * j) for j in range(METRICS_PER_ITEM)},
            case={"case_path": f"corpus/{case}/case.toml", "model_path": "model.onnx",
                  "target": "stm32n6", "description": "bench"},
            findings=[{"bug_id": "bug-a", "status": "not-reproduced", "evidence": {"x": 1}}],
        ))
    return rows


def row_count(rows: list[ItemRow]) -> int:
    """Rows written: items, metrics and findings (cases are a few)."""
    return sum(1 + len(r.metrics) + len(r.findings) for r in rows)


def old_add_items(store: Store, run_id: int, rows: list[ItemRow]) -> None:
    """The previous write path: one multi-row VALUES statement per 2,000 rows."""
    tables = tables_of(run_id, rows)
    with store.transaction():
        for table, (columns, values) in tables.items():
            verb = "INSERT OR IGNORE INTO" if table == "cases" else "INSERT OR REPLACE INTO"
            for start in range(0, len(values), 2000):
                chunk = values[start : start + 2000]
                marks = ", ".join(["(" + ", ".join("?" * len(columns)) + ")"] * len(chunk))
                store.db.execute(f"{verb} {table} ({', '.join(columns)}) VALUES {marks}",
                                 [v for row in chunk for v in row])


def tables_of(run_id: int, rows: list[ItemRow]) -> dict[str, tuple[tuple[str, ...], list[tuple[Any, ...]]]]:
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    cases = {(r.case_name, r.model_sha256, r.options_hash): (
        r.case_name, r.model_sha256, r.options_hash, "p", "m", "stm32n6", "d") for r in rows}
    return {
        "cases": (CASE_COLUMNS, list(cases.values())),
        "items": (ITEM_COLUMNS, [
            (run_id, r.nodeid, r.case_name, r.stage, r.version, r.model_sha256, r.options_hash,
             r.outcome, r.recorded, r.duration_s, r.tool_seconds, r.message,
             json.dumps(r.result), now) for r in rows]),
        "findings": (FINDING_COLUMNS, [
            (run_id, r.nodeid, r.case_name, r.stage, r.version, f["bug_id"], f["status"],
             json.dumps(f["evidence"])) for r in rows for f in r.findings]),
        "metrics": (METRIC_COLUMNS, [
            (run_id, r.nodeid, r.case_name, r.stage, r.version, k, v, None)
            for r in rows for k, v in sorted(r.metrics.items())]),
    }


def raw_arrow_insert(store: Store, run_id: int, rows: list[ItemRow]) -> float:
    """Build Arrow tables first (not timed), then time only DuckDB's insert of them."""
    import pyarrow as pa

    arrow = {}
    for table, (columns, values) in tables_of(run_id, rows).items():
        arrow[table] = pa.table({c: list(v) for c, v in zip(columns, zip(*values))})
    start = time.perf_counter()
    with store.transaction():
        for table, data in arrow.items():
            verb = "INSERT OR IGNORE INTO" if table == "cases" else "INSERT OR REPLACE INTO"
            store.db.register("_arrow", data)
            store.db.execute(f"{verb} {table} BY NAME SELECT * FROM _arrow")
            store.db.unregister("_arrow")
    return time.perf_counter() - start


def slow_tool_items(root: Path, count: int) -> None:
    """A session whose items arrive one at a time (a tool of seconds): CPU per item of the
    session writer, holding the file between batches vs attaching it for every batch."""
    from pytest_stedge.store import writer

    cpu: dict[str, float] = {}
    for mode in ("per batch", "held"):
        saved = writer.IDLE_RELEASE_S
        writer.IDLE_RELEASE_S = 0.0 if mode == "per batch" else saved
        try:
            with Store.open(root / f"slow-{mode.replace(' ', '-')}.duckdb") as store:
                run_id = store.begin_run(argv=["bench"])
                session = writer.SessionWriter(store, run_id, None)
                start = time.process_time()  # the main thread sleeps: the writer's CPU
                for row in make_rows(count):
                    session.put(row)
                    time.sleep(0.3)  # longer than the batch window: one item per batch
                session.close()
                cpu[mode] = (time.process_time() - start) / count * 1000
        finally:
            writer.IDLE_RELEASE_S = saved
    print(f"items one at a time ({count}): writer CPU per item {cpu['per batch']:.1f} ms "
          f"attaching per batch, {cpu['held']:.1f} ms held ({cpu['held'] / cpu['per batch']:.2f}x)")


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=7200, help="items for new and raw paths")
    parser.add_argument("--old-items", type=int, default=800, help="items for the old path")
    parser.add_argument("--import-items", type=int, default=72000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the new and raw paths")
    parser.add_argument("--slow-items", type=int, default=30, help="items arriving one at a time")
    args = parser.parse_args()
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        sys.exit("pyarrow is needed for the raw Arrow reference: pip install pyarrow")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = make_rows(args.items)
        old_rows = rows[: args.old_items]
        results = {}
        with Store.open(root / "old.duckdb") as store:
            run_id = store.begin_run(argv=["bench"])
            start = time.perf_counter()
            old_add_items(store, run_id, old_rows)
            results["old"] = (time.perf_counter() - start, row_count(old_rows))
        # The two fast sides alternate (and swap who goes first) over --rounds, each into a
        # new store: timed one after the other, a change of load reads as a change of speed.
        times: dict[str, list[float]] = {"new": [], "raw": []}
        for round_number in range(args.rounds):
            order = ("new", "raw") if round_number % 2 == 0 else ("raw", "new")
            for name in order:
                with Store.open(root / f"{name}-{round_number}.duckdb") as store:
                    run_id = store.begin_run(argv=["bench"])
                    if name == "new":
                        start = time.perf_counter()
                        store.add_items(run_id, rows)
                        times[name].append(time.perf_counter() - start)
                    else:
                        times[name].append(raw_arrow_insert(store, run_id, rows))
        for name, seconds_list in times.items():
            results[name] = (statistics.median(seconds_list), row_count(rows))
        ratios = ", ".join(f"{n / r:.2f}" for n, r in zip(times["new"], times["raw"], strict=True))
        print(f"{args.rounds} rounds, new/raw per round: {ratios}")
        rate = {k: n / s for k, (s, n) in results.items()}
        for name, label in (("old", "previous VALUES path"), ("new", "Store.add_items"),
                            ("raw", "raw Arrow insert")):
            seconds, n = results[name]
            print(f"{label:<22} {n:>9,} rows in {seconds:7.2f} s = {rate[name]:>10,.0f} rows/s")
        print(f"new / previous rows/s: {rate['new'] / rate['old']:.1f}x (target >= 15x)")
        print(f"new time / raw Arrow time: {rate['raw'] / rate['new']:.2f} (target <= 1.5)")

        slow_tool_items(root, args.slow_items)

        # stedge import of a bundle with 1.8M metric rows
        from pytest_stedge.cli.main import main as stedge
        from pytest_stedge.store.bundle import export_bundle

        big = root / "big.duckdb"
        with Store.open(big) as store:
            run_id = store.begin_run(argv=["bench"])
            for start in range(0, args.import_items, 12000):
                store.add_items(run_id, make_rows(min(12000, args.import_items - start), start))
            export_bundle(store, root / "bundle")
        metric_rows = args.import_items * METRICS_PER_ITEM
        seconds = timed(lambda: stedge(["import", str(root / "bundle"), "--db", str(root / "to.duckdb")]))
        print(f"stedge import of {metric_rows:,} metric rows ({args.import_items:,} items): "
              f"{seconds:.1f} s (target < 120 s)")


if __name__ == "__main__":
    main()

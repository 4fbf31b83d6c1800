"""The shared store on PostgreSQL against the local DuckDB file (issue 20), in one run:

1. per-item store cost: items (25 metrics and a finding each) written as a session's
   writer thread writes them (batches of 1 and of 8 items, one transaction per batch),
   to a local file and to a PostgreSQL store; target: shared <= 2x local per item;
2. the dashboard (`stedge dashboard`'s write_site) built from 180,000 metric rows on the
   shared store; target: <= 10 s.

A throwaway PostgreSQL (Debian's binaries, 127.0.0.1, initdb -A trust) is started and
removed by the benchmark; needs `pip install -e '.[team]'`.

    python benchmarks/bench_shared_store.py [--items 160] [--dashboard-items 7200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT / "benchmarks"))

from bench_store import make_rows  # 25 metrics and a finding per item
from pgserver import PostgresServer, why_not

from pytest_stedge.store.database import Store


def per_item_seconds(location: Path | str, items: int, batch: int) -> float:
    """Seconds per item, writing ``items`` items in batches of ``batch``."""
    rows = make_rows(items)
    with Store.open(location) as store:
        run_id = store.begin_run(argv=["bench"], versions=["4.0.1"])
        start = time.perf_counter()
        for first in range(0, items, batch):
            store.add_items(run_id, rows[first : first + batch])
        return (time.perf_counter() - start) / items


def dashboard_seconds(location: str, items: int, out: Path) -> tuple[float, int]:
    """Fill the shared store with ``items`` items (bulk), then time the dashboard."""
    from pytest_stedge.report.site import write_site

    with Store.open(location) as store:
        for version in ("3.0.0", "4.0.1"):
            run_id = store.begin_run(argv=["bench"], versions=[version])
            rows = make_rows(items // 2)
            for row in rows:
                row.version = version
                row.nodeid = row.nodeid.replace("[4.0.1]", f"[{version}]")
            for first in range(0, len(rows), 1200):
                store.add_items(run_id, rows[first : first + 1200])
    with Store.open(location, read_only=True) as store:
        metrics = int(store.dicts("SELECT count(*) AS n FROM metrics")[0]["n"])
        start = time.perf_counter()
        write_site(store, out, bugs_dir=None)
        return time.perf_counter() - start, metrics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--dashboard-items", type=int, default=7200)
    args = parser.parse_args()
    reason = why_not()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    server = PostgresServer().start()
    try:
        tmp = Path(tempfile.mkdtemp(prefix="bench-shared-"))
        figures: dict[str, float] = {}
        for batch in (1, 8):
            local = per_item_seconds(tmp / f"local-{batch}.duckdb", args.items, batch)
            shared = per_item_seconds(server.create_database(f"items_{batch}"), args.items, batch)
            figures[f"local_ms_per_item_batch{batch}"] = round(local * 1000, 2)
            figures[f"shared_ms_per_item_batch{batch}"] = round(shared * 1000, 2)
            figures[f"ratio_batch{batch}"] = round(shared / local, 2)
            print(f"batch {batch}: local {local * 1000:.1f} ms/item, shared "
                  f"{shared * 1000:.1f} ms/item, ratio {shared / local:.2f}", flush=True)
        seconds, metrics = dashboard_seconds(server.create_database("dashboard"),
                                             args.dashboard_items, tmp / "site")
        figures["dashboard_metric_rows"] = metrics
        figures["dashboard_s"] = round(seconds, 2)
        print(json.dumps(figures, indent=2))
        ok = all(figures[f"ratio_batch{b}"] <= 2.0 for b in (1, 8)) and seconds <= 10.0
        print("targets: shared <= 2x local per item, dashboard <= 10 s:",
              "met" if ok else "NOT met")
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

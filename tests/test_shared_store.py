"""A team's shared store on a real PostgreSQL: concurrent sessions (as separate
machines would run them: own work folder, own installs), shards of one pipeline, and
readers during the writes. The server is Debian's PostgreSQL, started by the fixture."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.store.database import ItemRow, Store

CASES = {f"net{i}": SIMPLE_CASE for i in range(6)}


def _session(machine: Path, corpus: Path, url: str, version: str, shard: str, group: str
             ) -> subprocess.Popen[str]:
    """One `pytest corpus` session on its own 'machine': its own folder, its own install."""
    from fake_stedgeai import make_install

    machine.mkdir(parents=True)
    installs = machine / "STEdgeAI"
    make_install(installs / version.rsplit(".", 1)[0], version)
    argv = [
        sys.executable, "-m", "pytest", str(corpus), "-p", "no:cacheprovider", "-q",
        f"--rootdir={machine}", "--stedge-root", str(installs), "--stedge-version", version,
        "--stedge-db", url, "--stedge-shard", shard, "--stedge-run-group", group,
        "--stedge-workdir", str(machine / "work"), "--stedge-report", "none",
        f"--junitxml={machine / 'junit.xml'}",
    ]
    return subprocess.Popen(argv, cwd=machine, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _junit_items(path: Path) -> set[str]:
    """Node ids of the items a session ran, from its junit XML (pytest's own account)."""
    out = set()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        out.add(name)
    return out


def _stedge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_four_concurrent_sessions_store_every_item_once_while_the_dashboard_reads(
    postgres_store: str, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    corpus = make_corpus(CASES)
    Store.open(postgres_store).close()  # the team creates the store once
    plan = [("3.0.0", "1/2", "pipeline-7"), ("3.0.0", "2/2", "pipeline-7"),
            ("4.0.1", "1/2", "pipeline-8"), ("4.0.1", "2/2", "pipeline-8")]
    sessions = [
        _session(tmp_path / f"machine{i}", corpus, postgres_store, *spec)
        for i, spec in enumerate(plan)
    ]
    # A reader during the writes: the dashboard, built again and again until all end.
    reader = tmp_path / "reader"
    reader.mkdir()
    dashboards = []
    while any(s.poll() is None for s in sessions):
        done = _stedge("dashboard", "--db", postgres_store, "--out", str(reader / "site"),
                       "--corpus", str(corpus), cwd=reader)
        dashboards.append((done.returncode, done.stderr, any(s.poll() is None for s in sessions)))
    outputs = [s.communicate()[0] for s in sessions]
    for (version, shard, _), code, text in zip(plan, [s.returncode for s in sessions], outputs):
        assert code == 0, f"{version} shard {shard}:\n{text[-3000:]}"
    during = [d for d in dashboards if d[2]]
    assert during, "no dashboard was built while the sessions wrote"
    assert all(code == 0 for code, _, _ in dashboards), [err for c, err, _ in dashboards if c]
    assert (reader / "site" / "index.html").is_file()

    with Store.open(postgres_store, create=False, read_only=True) as store:
        runs = store.dicts("SELECT run_id, run_group, shard, status FROM runs ORDER BY run_id")
        counts = store.dicts(
            "SELECT run_id, nodeid, count(*) AS n FROM items GROUP BY run_id, nodeid")
        by_run: dict[int, set[str]] = {}
        for row in counts:
            assert row["n"] == 1
            by_run.setdefault(int(row["run_id"]), set()).add(row["nodeid"])
    assert len({r["run_id"] for r in runs}) == len(runs) == 4
    assert {(r["run_group"], r["shard"]) for r in runs} == {(g, s) for _, s, g in plan}
    assert all(r["status"] == "passed" for r in runs)
    for i, (version, shard, group) in enumerate(plan):
        run = next(r for r in runs if (r["run_group"], r["shard"]) == (group, shard))
        ran = _junit_items(tmp_path / f"machine{i}" / "junit.xml")
        stored = {nodeid.rsplit("::", 1)[1] for nodeid in by_run.get(int(run["run_id"]), set())}
        assert ran and stored == ran, f"{version} {shard}: ran {sorted(ran)}, stored {sorted(stored)}"
    # The two shards of a pipeline cover the corpus once: every case's generate item.
    for group, version in (("pipeline-7", "3.0.0"), ("pipeline-8", "4.0.1")):
        ids = [int(r["run_id"]) for r in runs if r["run_group"] == group]
        generate = sorted(n.split("/")[-2] for i in ids for n in by_run[i]
                          if f"generate[{version}]" in n)
        assert generate == sorted(CASES)


def test_a_server_store_takes_the_same_rows_and_commands_as_a_file(
    postgres_store: str, tmp_path: Path
) -> None:
    """Same schema, same migrations, same answers: one run written to a file store and to
    the server store reads back identically through `stedge runs` / `show` / `export`."""
    rows = [
        ItemRow(nodeid=f"corpus/c{i}/case.toml::generate[4.0.1]", case_name=f"c{i}",
                stage="generate", version="4.0.1", outcome="passed", model_sha256="ab" * 32,
                options_hash="cd" * 8, result={"schema": "stedge.result/1", "macc": 1000 + i},
                metrics={"macc": 1000.0 + i, "activations_bytes": 4096.0 * (i + 1)},
                case={"case_path": f"corpus/c{i}/case.toml", "target": "stm32n6"},
                findings=[{"bug_id": "b1", "status": "not-reproduced", "evidence": {"x": i}}])
        for i in range(3)
    ]
    local = tmp_path / "local.duckdb"
    answers = []
    for where in (local, postgres_store):
        with Store.open(where) as store:
            run_id = store.begin_run(argv=["pytest"], versions=["4.0.1"], run_group="g1",
                                     shard="1/1")
            store.add_items(run_id, rows)
            store.add_items(run_id, rows[:1], replace=False)  # a journal merged twice
            store.finish_run(run_id, status="passed", exitstatus=0)
            names = [name for name, _ in store.applied_migrations()]
        shown = _stedge("show", "latest", "--json", "--db", str(where), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        run = json.loads(shown.stdout)
        for key in ("started_at", "finished_at", "run_uuid", "host"):
            run.pop(key)
        for item in run["items"]:
            item.pop("finished_at")
        answers.append((names, run))
    assert answers[0] == answers[1]
    assert answers[0][1]["run_group"] == "g1"
    assert [i["metrics"]["macc"] for i in answers[0][1]["items"]] == [1000.0, 1001.0, 1002.0]
    # export from the server, import into a new file: the same run arrives
    bundle = tmp_path / "bundle"
    done = _stedge("export", "--out", str(bundle), "--db", postgres_store, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copy.duckdb"
    done = _stedge("import", str(bundle), "--db", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with Store.open(copy, read_only=True) as store:
        assert len(store.get_run(1)["items"]) == 3


def test_an_unreachable_server_is_one_line_naming_it(tmp_path: Path) -> None:
    """No server listens on the port: `stedge runs` says so in one line, password masked."""
    pytest.importorskip("duckdb_extension_postgres_scanner")
    url = "postgresql://team:s3cret@127.0.0.1:9/stedge?connect_timeout=2"
    done = _stedge("runs", "--db", url, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("stedge: error: cannot reach the PostgreSQL store "
                                  "postgresql://team:***@127.0.0.1:9/stedge")
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_ducklake_locations_are_refused_with_what_is_accepted(tmp_path: Path) -> None:
    done = _stedge("runs", "--db", "ducklake:postgres:dbname=x", cwd=tmp_path)
    assert done.returncode == 2
    assert "DuckLake stores are not supported" in done.stderr
    assert "postgresql://USER@HOST:PORT/DBNAME" in done.stderr




def test_a_dashboard_read_sees_one_view_while_another_machine_commits(
    postgres_store: str,
) -> None:
    """The dashboard reads ids in one query and names in another: between the two, another
    session's commit must not show (that gave an IndexError under concurrent writes)."""
    from pytest_stedge.store.history import item_columns

    def row(case: str) -> ItemRow:
        return ItemRow(nodeid=f"corpus/{case}/case.toml::generate[4.0.1]", case_name=case,
                       stage="generate", version="4.0.1", outcome="passed",
                       metrics={"macc": 1.0}, result={})

    with Store.open(postgres_store) as writer:
        run_id = writer.begin_run(argv=["pytest"], versions=["4.0.1"])
        writer.add_items(run_id, [row("b")])
        with Store.open(postgres_store, read_only=True) as reader, reader.snapshot() as db:
            before = db.execute("SELECT count(*) FROM items").fetchone()
            writer.add_items(run_id, [row("a")])  # "a" sorts first: every index would move
            columns = item_columns(reader, ["macc"], ["4.0.1"])
            after = db.execute("SELECT count(*) FROM items").fetchone()
        assert before == after == (1,)
        assert columns.cases == ["b"] and columns.columns["case"].tolist() == [0]
        fresh = item_columns(writer, ["macc"], ["4.0.1"])
        assert fresh.cases == ["a", "b"] and fresh.columns["case"].tolist() == [0, 1]

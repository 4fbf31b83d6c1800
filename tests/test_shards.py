"""--stedge-shard K/N (whole cases, each in one shard, the shards covering the corpus
once), run groups in the store and in `stedge diff`, and xdist workers on other hosts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge.store.database import Store

TWO_STAGES = SIMPLE_CASE.replace('stages = ["generate"]', 'stages = ["generate", "analyze"]')
CASES = {f"m{i}": TWO_STAGES for i in range(7)}

# The `stedge` of the interpreter running the tests, not whatever PATH finds: the suite
# must pass without an activated venv.
STEDGE = str(Path(sys.executable).with_name("stedge"))


def _collect(pytester: pytest.Pytester, corpus: Path, installs: Path, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess(
        str(corpus), "--collect-only", "-q", "--stedge-root", str(installs),
        "--stedge-version", "3.0.0", "--stedge-version", "4.0.1", "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}", *args,
    )
    assert result.ret == 0, result.stdout.str()
    return [line for line in result.stdout.lines if "::" in line]


def test_shards_deal_whole_cases_and_cover_the_corpus_once(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path
) -> None:
    corpus = make_corpus(CASES, root=pytester.path / "corpus")
    everything = _collect(pytester, corpus, fake_installs)
    assert len(everything) == 7 * 5  # oracle + 2 stages x 2 versions per case
    shards = [_collect(pytester, corpus, fake_installs, "--stedge-shard", f"{k}/3")
              for k in (1, 2, 3)]
    assert sorted(n for shard in shards for n in shard) == sorted(everything)  # once each, none lost
    cases = [{re.search(r"corpus/(m\d)/", n).group(1) for n in shard} for shard in shards]
    assert not (cases[0] & cases[1] or cases[0] & cases[2] or cases[1] & cases[2])
    # dealt round-robin over the sorted case files: 3, 2 and 2 cases
    assert cases == [{"m0", "m3", "m6"}, {"m1", "m4"}, {"m2", "m5"}]
    for shard, names in zip(shards, cases):
        assert len(shard) == 5 * len(names)  # every item of a case is in its shard
    again = _collect(pytester, corpus, fake_installs, "--stedge-shard", "2/3")
    assert again == shards[1]


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error_saying_what_is_accepted(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path, bad: str
) -> None:
    corpus = make_corpus({"m0": SIMPLE_CASE}, root=pytester.path / "corpus")
    result = pytester.runpytest_subprocess(str(corpus), "--stedge-shard", bad,
                                           "--stedge-root", str(fake_installs))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--stedge-shard: '{bad}' is not a shard: give K/N with 1 <= K <= N*"])


def test_shards_of_a_run_group_are_stored_as_one_logical_run_and_diffed_as_one(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path
) -> None:
    corpus = make_corpus({f"m{i}": SIMPLE_CASE for i in range(4)}, root=pytester.path / "corpus")
    db = pytester.path / "results.duckdb"
    for version in ("3.0.0", "4.0.1"):
        for k in (1, 2):
            result = pytester.runpytest_subprocess(
                str(corpus), "--stedge-root", str(fake_installs), "--stedge-version", version,
                "--stedge-db", str(db), "--stedge-shard", f"{k}/2", "--stedge-report", "none",
                "--stedge-run-group", f"pipe-{version}", "-p", "no:cacheprovider",
                f"--rootdir={pytester.path}",
            )
            assert result.ret == 0, result.stdout.str()
            result.stdout.fnmatch_lines([f"stored as run * (run group pipe-{version}) in *"])
    listed = pytester.run(STEDGE, "runs", "--db", str(db))
    assert [line.split("group ")[1] for line in listed.stdout.lines if "group" in line] == [
        "pipe-4.0.1 shard 2/2", "pipe-4.0.1 shard 1/2", "pipe-3.0.0 shard 2/2",
        "pipe-3.0.0 shard 1/2"]
    with Store.open(db, read_only=True) as store:
        groups = store.run_groups()
    assert [(g["run_group"], g["shards"], g["items"]) for g in groups] == [
        ("pipe-4.0.1", ["1/2", "2/2"], 8), ("pipe-3.0.0", ["1/2", "2/2"], 8)]
    assert all(g["complete"] for g in groups)
    # diff of two groups: every case of both shards compared, as one run each
    result = pytester.run(STEDGE, "diff", "3.0.0", "4.0.1", "--db", str(db), "--json",
                          "--group", "pipe-3.0.0", "--group", "pipe-4.0.1")
    assert result.ret in (0, 1), result.stderr.str()
    import json

    report = json.loads(result.stdout.str())
    assert sorted({c["case_name"] for c in report["changes"]}) == ["m0", "m1", "m2", "m3"]
    # a group that lacks a shard is refused as a gate: its other cases would be missing
    with Store.open(db) as store:
        run_id = store.begin_run(argv=["x"], versions=["4.0.1"], run_group="half",
                                 shard="1/2")
        store.finish_run(run_id, status="passed", exitstatus=0)
    result = pytester.run(STEDGE, "diff", "3.0.0", "4.0.1", "--db", str(db),
                          "--group", "pipe-3.0.0", "--group", "half")
    assert result.ret == 2
    result.stderr.fnmatch_lines([("stedge: error: run group half is incomplete: it holds "
                                  "shard 1/2 of 2; missing 2/2*")])


def test_xdist_workers_on_another_host_are_refused_before_any_run(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path
) -> None:
    pytest.importorskip("xdist")
    corpus = make_corpus({"m0": SIMPLE_CASE}, root=pytester.path / "corpus")
    db = pytester.path / "results.duckdb"
    result = pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(fake_installs), "--stedge-db", str(db),
        "--tx", "ssh=build@h2//python=python3", "--tx", "popen", "-d",
        f"--rootdir={pytester.path}", "-p", "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        ("*--tx ssh=build@h2//python=python3: pytest-stedge runs xdist workers on this "
         "machine only*--stedge-shard K/N --stedge-run-group ID*")])
    if db.exists():
        with Store.open(db, read_only=True) as store:
            assert store.list_runs() == []


BUG_TWO_SHARDS = """\
id = "sw-split"
title = "A layer falls to software"
source = "https://example.org/sw-split"
affected = ">=4.0"
status = "open"
reproducers = ["a", "b"]
signature = "epochs_sw > 0"
"""


@pytest.mark.parametrize(("group", "expected"), [("pipeline-7", "reproduced"),
                                                 (None, "not-reproduced")])
def test_the_dashboard_judges_a_bug_on_every_shard_of_its_run_group(
    group: str | None, expected: str, tmp_path: Path
) -> None:
    """Reproducer a is in shard 1 (reproduced), b in shard 2 (not). As one run the bug is
    reproduced on 4.0.1; as two separate runs the newer one alone decides: not reproduced."""
    import html

    from pytest_stedge.report import render_dashboard
    from pytest_stedge.result import flat_metrics, new_result
    from pytest_stedge.store.database import ItemRow

    bugs = tmp_path / "corpus" / "bugs"
    bugs.mkdir(parents=True)
    (bugs / "sw-split.toml").write_text(BUG_TWO_SHARDS, encoding="utf-8")
    db = tmp_path / "db.duckdb"
    with Store.open(db) as store:
        for shard, case, status in (("1/2", "a", "reproduced"), ("2/2", "b", "not-reproduced")):
            run = store.begin_run(argv=["pytest"], versions=["4.0.1"], run_group=group,
                                  shard=shard if group else None)
            result = new_result("generate", tool={"version": "4.0.1"},
                                epochs={"total": 3, "hw": 2, "ec": 0, "sw": 1, "hybrid": 0})
            store.add_items(run, [ItemRow(
                nodeid=f"corpus/{case}/case.toml::generate[4.0.1]", case_name=case,
                stage="generate", version="4.0.1", outcome="passed", model_sha256=f"sha-{case}",
                options_hash="opt", message=None, result=result, metrics=flat_metrics(result),
                case={"case_path": None, "model_path": "model.onnx", "target": "stm32n6"},
                findings=[{"bug_id": "sw-split", "status": status,
                           "evidence": {"signature": "epochs_sw > 0", "reproducer": True}}],
            )])
            store.finish_run(run, status="passed", exitstatus=0)
        index = render_dashboard(store, tmp_path / "site", bugs_dir=bugs)
    matrix = html.unescape((index.parent / "matrix.html").read_text(encoding="utf-8"))
    assert re.findall(r'data-status="([a-z-]+)"', matrix) == [expected]

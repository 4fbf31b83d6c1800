"""Every pytest_stedge_* hook can be implemented in a conftest.py, and is documented."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory

from pytest_stedge import hookspecs

HOOKS = sorted(name for name in vars(hookspecs) if name.startswith("pytest_stedge_"))


def _run(pytester: pytest.Pytester, corpus: Path, tmp_path: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-db", str(tmp_path / "db.duckdb"), "-p", "no:cacheprovider",
        f"--rootdir={pytester.path}", "-rs", *args,
    )


def test_discovery_and_running_can_be_replaced(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE + "[expect]\nactivations_bytes = { exact = 4096 }\n"})
    (corpus / "conftest.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            from pytest_stedge.tool.runner import StageRun
            from pytest_stedge.tool.discovery import Discovery, Install, ToolRun

            def pytest_stedge_discover_toolchains(config, roots):
                exe = Path("/cloud/stedgeai")
                return Discovery(
                    installs=[Install("9.1.0", "1", "", exe.parent, exe, found_by="conftest")],
                    searched=["the cloud"], problems=[],
                )

            def pytest_stedge_run_stage(config, case, stage, install, workdir, timeout, board_desc):
                result = {"schema": "stedge.result/1", "command": "generate",
                          "tool": {"version": install.version},
                          "memory": {"activations_bytes": 4096, "weights_bytes": 10}}
                return StageRun(result=result, tool=ToolRun([], 0, 0.25, "", workdir / "log"))

            def pytest_stedge_result(config, item, result):
                result.setdefault("tags", []).append("from-conftest")
            """
        )
    )
    result = _run(pytester, corpus, tmp_path, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*cnn/case.toml::generate[[]9.1.0] PASSED*"])
    from pytest_stedge.store.database import Store

    with Store.open(tmp_path / "db.duckdb", create=False) as store:
        items = store.get_run(1)["items"]
    generate = next(i for i in items if i["stage"] == "generate")
    assert generate["tool_seconds"] == 0.25
    assert generate["result"]["tags"] == ["from-conftest"]


def test_every_hook_has_a_test_and_documentation() -> None:
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for name in HOOKS:
        spec = getattr(hookspecs, name)
        assert spec.__doc__ and "Example::" in spec.__doc__, name
        assert f"def {name}(" in tests, f"no test implements {name}"
        assert name in readme, f"README does not mention {name}"
        assert next(iter(inspect.signature(spec).parameters)) == "config"


def test_reporting_can_be_replaced(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    (corpus / "conftest.py").write_text(
        textwrap.dedent(
            """
            import json

            def pytest_stedge_write_report(config, store, run_id, path):
                out = path.with_suffix(".json")
                run = store.get_run(run_id)
                out.write_text(json.dumps({"run": run_id, "items": len(run["items"])}))
                return out
            """
        )
    )
    result = _run(pytester, corpus, tmp_path, "--stedge-report", str(tmp_path / "out.html"))
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"report: {tmp_path / 'out.json'}"])
    assert (tmp_path / "out.json").read_text() == '{"run": 1, "items": 2}'
    assert not (tmp_path / "out.html").exists()


def test_stedge_trace_hooks_shows_who_answered(
    pytester: pytest.Pytester, make_corpus: CorpusFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    monkeypatch.setenv("STEDGE_TRACE_HOOKS", "1")
    result = _run(pytester, corpus, tmp_path)
    result.stderr.fnmatch_lines(
        ["[[]stedge hook] pytest_stedge_discover_toolchains <- stedge-defaults*",
         "[[]stedge hook] pytest_stedge_discover_toolchains -> Discovery(*"]
    )

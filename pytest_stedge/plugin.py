"""The pytest plugin: options, collection of ``case.toml`` files, hooks.

Loaded into every pytest run of the environment, so it stays inert (no discovery,
no store) unless the session collects corpus cases or is given a ``--stedge-*``
run option.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .options import (
    add_board_options,
    add_gate_options,
    add_ini,
    add_report_options,
    add_run_options,
    add_store_options,
)

_stedge_run_key = pytest.StashKey[bool]()
_pruned_key = pytest.StashKey[Any]()
_SKIP_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".stedge", ".tox"}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_stedge import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stedge", "embedded compiler regression testing (pytest-stedge)")
    add_run_options(group.addoption)
    add_gate_options(group.addoption)
    add_report_options(group.addoption)
    add_store_options(group.addoption)
    add_ini(parser.addini)
    add_board_options(group.addoption, parser.addini)
    parser.addini(
        "stedge_db_wait", "Seconds to wait for a store held by another session", default="5"
    )
    from .stop import STOP_TIMEOUT_HELP

    parser.addini("stedge_stop_timeout", STOP_TIMEOUT_HELP, default="60")


def pytest_configure(config: pytest.Config) -> None:
    from pytest_stedge import defaults

    from .state import controller_setup_key

    config.pluginmanager.register(defaults, "stedge-defaults")
    config.stash[controller_setup_key] = _setup_controller
    if os.environ.get("STEDGE_TRACE_HOOKS"):
        _trace_hooks(config)
    config.addinivalue_line("markers", "stedge: an item collected from a corpus case.toml")
    config.stash[_stedge_run_key] = _is_stedge_run(config)
    if config.stash[_stedge_run_key]:
        from .board import plugin as board_plugin

        config.pluginmanager.register(board_plugin, "stedge-boards")
        if config.getoption("stedge_update") and not hasattr(config, "workerinput"):
            from .verdict.update import session_tracker

            session_tracker(config)  # sees every report: the exit status depends on them
        # A malformed case.toml is a collection error, and the other cases still run.
        config.option.continue_on_collection_errors = True
        baseline = config.getoption("stedge_baseline")
        # The baseline runs in this session: every version of a case must run on the same
        # xdist worker, baseline first. A case is a file, so --dist loadfile does it
        # (xdist_group would too, but pytest 9.2 ignores xdist 3.8's nodeid suffix).
        if (baseline and baseline in (config.getoption("stedge_version") or [])
                and getattr(config.option, "dist", "no") == "load"):
            config.option.dist = "loadfile"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if config.stash.get(_stedge_run_key, False) and not hasattr(config, "workerinput"):
        from .state import get_state

        get_state(config)  # discovery, store and version checks fail here, before any run


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The controller marks its run's work folder with the outcome and prunes old ones
    (ini stedge_keep_runs, stedge_keep_failed_runs; see :mod:`.retention`)."""
    config = session.config
    if not config.stash.get(_stedge_run_key, False) or hasattr(config, "workerinput"):
        return
    from .state import state_key

    state = config.stash.get(state_key, None)
    if state is None or not state.ready or config.option.collectonly:
        return
    from .tool import retention

    status = {0: "passed", 1: "failed", 2: "interrupted"}.get(int(exitstatus), "error")
    try:
        retention.mark_run(state.work.run_dir(), status, session.testsfailed)
        keep = retention.parse_keep(config.getini("stedge_keep_runs"), "ini stedge_keep_runs")
        keep_failed = retention.parse_keep(
            config.getini("stedge_keep_failed_runs"), "ini stedge_keep_failed_runs"
        )
        config.stash[_pruned_key] = retention.prune(state.work.root, keep, keep_failed)
    except (OSError, ValueError) as exc:  # the results are stored; only the cleaning failed
        config.stash[_pruned_key] = str(exc)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    pruned = config.stash.get(_pruned_key, None)
    if isinstance(pruned, str):
        terminalreporter.write_line(f"work folder not cleaned: {pruned}", yellow=True)
    elif pruned:
        size = sum(run.size_bytes for run in pruned) / 1e6
        terminalreporter.write_line(
            f"work folder: removed {len(pruned)} old run folder(s), {size:.1f} MB "
            "(ini stedge_keep_runs, stedge_keep_failed_runs; `stedge clean` on demand)"
        )


def _setup_controller(config: pytest.Config, state: Any) -> None:
    # The controller's set-up opens the store (DuckDB): imported only when a session runs.
    from .session import setup_controller

    setup_controller(config, state)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.stash.get(_stedge_run_key, False):
        return None
    from .folders import folder_collector

    return folder_collector(path, parent)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == "case.toml":
        from .items import case_file

        return case_file(parent, file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """A corpus collects with the automatic garbage collector paused (see :mod:`.heap`)."""
    if not session.config.stash.get(_stedge_run_key, False):
        return (yield)
    from . import heap

    with heap.automatic_collection_paused():
        outcome = yield
        heap.settle()  # before the collector is back: its first pass would walk all of it
    return outcome


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    shard = config.getoption("stedge_shard")
    if not shard:
        return
    from .items import StedgeItem
    from .shard import parse_shard, select

    kept, dropped = select(items, parse_shard(shard), config.rootpath,
                           lambda item: isinstance(item, StedgeItem))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    from .errors import ToolchainError
    from .items import StedgeCheckFailure, StedgeItem

    if isinstance(item, StedgeItem) and (report.when == "call" or not report.passed):
        row = item.stedge_row()
        if row is not None:
            report.stedge = row  # type: ignore[attr-defined]  # travels to the xdist controller
            error = call.excinfo.value if call.excinfo is not None else None
            if isinstance(error, StedgeCheckFailure):
                report.stedge_misses = error.summary  # type: ignore[attr-defined]
            elif isinstance(error, ToolchainError):
                report.stedge_misses = [error.short()]  # type: ignore[attr-defined]
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "stedge", None)
    if data and data.get("recorded") and report.when == "call":
        if report.passed:
            return "passed", "R", ("PASSED (recorded)", {"green": True})
        if report.failed:
            return "failed", "F", ("FAILED (recorded)", {"red": True})
    return None


def _is_stedge_run(config: pytest.Config) -> bool:
    """Whether this session runs corpus cases (then the plugin switches on)."""
    options = ("stedge_version", "stedge_root", "stedge_db", "stedge_board")
    if any(config.getoption(name) for name in options):
        return True
    args = config.args or []
    base = config.invocation_params.dir
    return any(_holds_case(base / arg.split("::")[0]) for arg in args)


def _holds_case(path: Path) -> bool:
    if path.name == "case.toml":
        return True
    if not path.is_dir():
        return False
    for _root, dirs, files in os.walk(path):
        if "case.toml" in files:
            return True
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
    return False


def _trace_hooks(config: pytest.Config) -> None:
    """STEDGE_TRACE_HOOKS=1: print every pytest_stedge_* call, which implementation
    answered and what it returned (to debug a conftest's hooks)."""
    import sys

    def before(name: str, impls: Any, kwargs: Any) -> None:
        if name.startswith("pytest_stedge_"):
            plugins = ", ".join(impl.plugin_name for impl in impls)
            print(f"[stedge hook] {name} <- {plugins}", file=sys.stderr)

    def after(outcome: Any, name: str, impls: Any, kwargs: Any) -> None:
        if name.startswith("pytest_stedge_"):
            print(f"[stedge hook] {name} -> {outcome.get_result()!r:.120}", file=sys.stderr)

    config.pluginmanager.add_hookcall_monitoring(before, after)

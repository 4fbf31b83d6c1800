"""Hooks that let a conftest.py or a plugin replace how pytest-stedge finds and runs tools.

Factory hooks are ``firstresult``: the first implementation returning something other
than ``None`` wins, and the built-ins (:mod:`pytest_stedge.defaults`) are registered
``trylast`` so a user's conftest comes first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .case.model import Case
    from .store.database import Store
    from .tool.discovery import Discovery, Install
    from .tool.runner import StageRun


@pytest.hookspec(firstresult=True)
def pytest_stedge_discover_toolchains(config: pytest.Config, roots: list[Path]) -> Discovery | None:
    """Find the ``stedgeai`` installs of this machine.

    Called once per process (on the controller under xdist; workers receive its answer).

    :param roots: the ``--stedge-root`` folders and ini ``stedge_roots``.
    :return: a :class:`pytest_stedge.tool.discovery.Discovery`, or None to let the next
        implementation answer.

    Example::

        def pytest_stedge_discover_toolchains(config, roots):
            from .toolchain import discover
            return discover(["/mnt/tools/stedgeai"], defaults=False)
    """


@pytest.hookspec(firstresult=True)
def pytest_stedge_run_stage(
    config: pytest.Config,
    case: Case,
    stage: str,
    install: Install,
    workdir: Path,
    timeout: float,
    board_desc: str | None,
) -> StageRun | None:
    """Run one toolchain stage (``generate``, ``validate-host`` ...) of ``case``.

    Called on the process that runs the item (a worker under xdist).

    :return: a :class:`pytest_stedge.tool.runner.StageRun`; raise
        :class:`pytest_stedge.errors.ToolchainError` when the tool failed.

    Example::

        def pytest_stedge_run_stage(config, case, stage, install, workdir, timeout, board_desc):
            if stage == "generate" and case.target == "stm32h7":
                return my_cloud_generate(case, workdir)
            return None
    """


@pytest.hookspec
def pytest_stedge_result(config: pytest.Config, item: pytest.Item, result: dict[str, Any]) -> None:
    """Update a stage's Result in place before it is checked and stored.

    Called on the process that runs the item, for every stedge item.

    Example::

        def pytest_stedge_result(config, item, result):
            result.setdefault("tags", []).append("nightly")
    """


@pytest.hookspec(firstresult=True)
def pytest_stedge_load_board(
    config: pytest.Config, case: Case, install: Install, workdir: Path, board: str
) -> bool | None:
    """Put the network generated in ``workdir`` on the board before target validation.

    Called on the process that runs the validate-target item, while it holds the board.
    The built-in implementation runs the ini ``stedge_board_loader`` command if set, else
    the install's N6 loader script.

    :param board: the board's ``serial:PORT:BAUD`` descriptor.
    :return: True once loaded; raise :class:`pytest_stedge.errors.BoardError` on failure.

    Example::

        def pytest_stedge_load_board(config, case, install, workdir, board):
            subprocess.run(["STM32_Programmer_CLI", "-c", "port=SWD", "-w",
                            str(workdir / "st_ai_output" / "network.bin")], check=True)
            return True
    """


@pytest.hookspec(firstresult=True)
def pytest_stedge_write_report(
    config: pytest.Config, store: Store, run_id: int, path: Path
) -> Path | None:
    """Write the session's report once the run is stored.

    Called on the controller only, at the end of the session, unless
    ``--stedge-report=none``. The built-in implementation renders the HTML run report.

    :param path: where the report should go (``--stedge-report`` or reports/run-<id>-<8 hex>.html).
    :return: the path written, or None to let the next implementation answer.

    Example::

        def pytest_stedge_write_report(config, store, run_id, path):
            import json
            out = path.with_suffix(".json")
            out.write_text(json.dumps(store.get_run(run_id), default=str))
            return out
    """

"""Built-in implementations of the pytest-stedge hooks, registered ``trylast``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .case.model import Case
    from .store.database import Store
    from .tool.discovery import Discovery, Install
    from .tool.runner import StageRun


@pytest.hookimpl(trylast=True)
def pytest_stedge_discover_toolchains(config: pytest.Config, roots: list[Path]) -> Discovery:
    """Search ``roots``, ``STEDGEAI_CORE_DIR`` and the usual install places."""
    from .tool.discovery import discover

    return discover(roots)


@pytest.hookimpl(trylast=True)
def pytest_stedge_run_stage(
    config: pytest.Config,
    case: Case,
    stage: str,
    install: Install,
    workdir: Path,
    timeout: float,
    board_desc: str | None,
) -> StageRun:
    """Run the install's ``stedgeai`` and parse its output folder."""
    from .tool.runner import run_stage

    return run_stage(case, stage, install, workdir, timeout=timeout, board_desc=board_desc)


@pytest.hookimpl(trylast=True)
def pytest_stedge_write_report(config: pytest.Config, store: Store, run_id: int, path: Path) -> Path:
    """Render the HTML run report, its changes classified with the session's bands."""
    from .report import render_run_report
    from .state import get_state
    from .verdict.bands import BandSettings

    baselines = get_state(config).baselines
    bands = BandSettings(baselines.default_band, baselines.metric_bands)
    return render_run_report(store, run_id, path, bands=bands)

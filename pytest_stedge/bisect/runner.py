"""One stage of a case variant run as the pytest flow runs it: what bisect (and every
command that re-runs a case with other options) calls for each try.

validate-target generates, flashes the variant (``--loader``, else the install's N6
loader) and validates on the board; every other stage is one ``stedgeai`` run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_stedge.tool.discovery import Install

    from .search import RunStage


def stage_runner(stage: str, install: Install, board: str | None, loader: str | None,
                 timeout: float) -> RunStage:
    """Runs ``stage`` of a case variant: validate-target generates, flashes, validates."""
    from pytest_stedge.result import Result
    from pytest_stedge.tool.runner import run_stage

    def run(case: Any, workdir: Path) -> Result:
        if stage != "validate-target":
            return run_stage(case, stage, install, workdir, timeout=timeout).result
        run_stage(case, "generate", install, workdir, timeout=timeout)
        _load(case, install, workdir, board or "", loader, timeout)
        return run_stage(case, stage, install, workdir, timeout=timeout,
                         board_desc=board).result

    return run


def _load(case: Any, install: Install, workdir: Path, board: str, loader: str | None,
          timeout: float) -> None:
    """Flash the variant as the pytest flow does (``--loader``, else the N6 loader)."""
    from pytest_stedge.board.plugin import loader_argv, run_loader, write_n6_loader_config
    from pytest_stedge.board.specs import parse_board_spec
    from pytest_stedge.errors import BoardError, ToolchainError

    try:
        if loader:
            argv = loader_argv(loader, case=case, workdir=workdir, spec=parse_board_spec(board))
            run_loader(argv, cwd=workdir, timeout=timeout)
            return
        script = install.root / "scripts" / "N6_scripts" / "n6_loader.py"
        if case.target == "stm32n6" and script.is_file():
            import sys

            cfg = write_n6_loader_config(script.parent / "config_n6l.json", case, workdir)
            run_loader([sys.executable, str(script), "--n6-loader-config", str(cfg)],
                       cwd=workdir, timeout=timeout)
    except BoardError as exc:
        raise ToolchainError([str(install.executable), "validate"], reason=str(exc)) from None


def oracle_figures(case: Any) -> dict[str, Any]:
    from pytest_stedge.oracle import analyze_deployed, case_deployment

    report = analyze_deployed(case.model, case_deployment(case))
    keys = ("lower_bound_bytes", "expected_bytes", "float_nodes")
    return {k: report[k] for k in keys if k in report}

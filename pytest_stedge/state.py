"""Per-process state of a pytest-stedge session: installs, versions, recordings, caches.

The controller (or the only process, without xdist) builds it from the options and
the store; xdist workers receive the same facts through ``workerinput`` and never
open the store.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from .bugs.registry import BugRegistry, check_case_bugs, load_registry
from .corpus import Case, file_sha256
from .errors import CaseError, OracleError
from .gate import Baseline
from .toolchain import Discovery, Install

state_key = pytest.StashKey["StedgeState"]()
WORKERINPUT_KEY = "stedge"
NO_INSTALL = "no-install"


class StedgeState:
    """What every process of a session needs to collect and run stedge items."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.discovery: Discovery | None = None
        self.requested: list[str] = list(config.getoption("stedge_version") or [])
        self.versions: list[str] = []
        self.installs: dict[str, Install] = {}
        self.recordings: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.run_id: int | None = None
        self.boards: list[str] = list(_option(config, "stedge_board") or [])
        self.workdir = _resolve(config, config.getoption("stedge_workdir"), "stedge_workdir",
                                Path(".stedge") / "work")
        self.baseline: str | None = _option(config, "stedge_baseline")
        self.strict_baseline = bool(_option(config, "stedge_strict_baseline"))
        self.update = bool(_option(config, "stedge_update"))
        self.default_band = str(config.getini("stedge_baseline_band") or "0")
        self.stored_baseline: dict[tuple[str, str], Baseline] = {}
        self._session: dict[tuple[str, str, str], Baseline] = {}
        self._registries: dict[Path, BugRegistry | CaseError] = {}
        self._oracle: dict[Path, dict[str, Any] | OracleError] = {}
        self._sha: dict[Path, str] = {}
        self.ready = False

    # -- set-up -------------------------------------------------------------------

    def setup(self, discovery: Discovery, recordings: list[dict[str, Any]], run_id: int | None) -> None:
        """Decide the versions to run from the installs found and the stored recordings."""
        self.discovery = discovery
        self.run_id = run_id
        found = {i.version: i for i in discovery.installs}
        for rec in recordings:
            self.recordings[(rec["version"], rec["case_name"], rec["stage"])] = rec
        recorded = sorted({rec["version"] for rec in recordings})
        if self.requested:
            self.versions = list(dict.fromkeys(self.requested))
        else:
            self.versions = list(found)
        self.installs = {v: found[v] for v in self.versions if v in found}
        missing = [v for v in self.versions if v not in found and v not in recorded]
        if missing:
            where = discovery.describe_search()
            have = ", ".join(f"{i.version} ({i.root})" for i in discovery.installs) or "none"
            note = f"; recorded in the store: {', '.join(recorded)}" if recorded else ""
            raise pytest.UsageError(
                f"stedgeai {', '.join(missing)} is not installed and has no recording. "
                f"Installs found: {have}{note}. Looked in: {where}. "
                "Point to it with --stedge-root DIR or STEDGEAI_CORE_DIR, "
                "or ingest a recorded run with `stedge ingest DIR --version X --case NAME`."
            )
        self.ready = True

    def to_workerinput(self) -> dict[str, Any]:
        """Everything a worker needs, as plain data."""
        assert self.discovery is not None
        return {
            "installs": [i.to_dict() for i in self.discovery.installs],
            "searched": self.discovery.searched,
            "recordings": list(self.recordings.values()),
            "run_id": self.run_id,
            "versions": self.versions,
            "boards": self.boards,
            "baseline": {f"{c}\x00{s}": b.to_dict() for (c, s), b in self.stored_baseline.items()},
        }

    def from_workerinput(self, data: dict[str, Any]) -> None:
        """Worker side of :meth:`to_workerinput`."""
        installs = [Install.from_dict(d) for d in data["installs"]]
        self.discovery = Discovery(installs=installs, searched=data["searched"], problems=[])
        self.recordings = {
            (r["version"], r["case_name"], r["stage"]): r for r in data["recordings"]
        }
        self.run_id = data["run_id"]
        self.versions = data["versions"]
        found = {i.version: i for i in installs}
        self.installs = {v: found[v] for v in self.versions if v in found}
        self.boards = data["boards"]
        self.stored_baseline = {}
        for key, value in data["baseline"].items():
            case_name, stage = key.split("\x00", 1)
            self.stored_baseline[(case_name, stage)] = Baseline(**value)
        self.ready = True

    # -- queries used by items -------------------------------------------------------

    def item_versions(self) -> list[str]:
        """Versions to create toolchain items for (a placeholder when there are none);
        the baseline first, so it has run when the other versions compare with it."""
        versions = self.versions or [NO_INSTALL]
        if self.baseline in versions:
            versions = [self.baseline, *(v for v in versions if v != self.baseline)]
        return versions

    def baseline_in_session(self) -> bool:
        """Whether the baseline version runs in this session too."""
        return bool(self.baseline) and self.baseline in self.versions

    def baseline_for(self, case_name: str, stage: str, version: str | None) -> Baseline | None:
        """The baseline's figures for this case and stage: from this session, else the store."""
        if not self.baseline or version is None or version == self.baseline:
            return None
        return self._session.get((case_name, stage, self.baseline)) or self.stored_baseline.get(
            (case_name, stage)
        )

    def remember(self, case_name: str, stage: str, version: str, row: Any) -> None:
        """Keep an item's figures: a later version in this process may compare with them."""
        self._session[(case_name, stage, version)] = Baseline(
            version=version,
            metrics=dict(row.metrics),
            model_sha256=row.model_sha256,
            options_hash=row.options_hash,
        )

    def registry(self, case: Case) -> BugRegistry:
        """The known-bug registry of the case's corpus (cached; raises CaseError)."""
        folder = case.corpus_root / "bugs"
        cached = self._registries.get(folder)
        if cached is None:
            try:
                cached = load_registry(folder)
            except CaseError as exc:
                cached = exc
            self._registries[folder] = cached
        if isinstance(cached, CaseError):
            raise cached
        return cached

    def check_bugs(self, case: Case) -> None:
        """Refuse a case that names a bug its corpus's registry does not have."""
        check_case_bugs(case.bugs, self.registry(case), case.path)

    def install(self, version: str) -> Install | None:
        """The install of ``version``, if this machine has it."""
        return self.installs.get(version)

    def recording(self, version: str, case_name: str, stage: str) -> dict[str, Any] | None:
        """A recorded Result of ``case_name``/``stage`` for ``version``, if ingested."""
        rec = self.recordings.get((version, case_name, stage))
        if rec is None:
            return None
        import copy

        return copy.deepcopy(rec)

    def missing_reason(self, version: str, case_name: str) -> str:
        """Why a toolchain item cannot run: where we looked and how to point us."""
        where = self.discovery.describe_search() if self.discovery else "nowhere"
        if version == NO_INSTALL:
            return (
                f"no stedgeai install found (looked in: {where}); point to one with "
                "--stedge-root DIR or STEDGEAI_CORE_DIR, or ingest a recorded run"
            )
        return (
            f"stedgeai {version} is not installed here and the store has no recording of "
            f"{case_name} for it (looked in: {where})"
        )

    def timeout(self, case: Case) -> float:
        """Seconds before a run of ``case`` is killed."""
        if case.timeout is not None:
            return case.timeout
        option = self.config.getoption("stedge_timeout")
        if option is not None:
            return float(option)
        return float(self.config.getini("stedge_timeout") or 600)

    def board_desc(self) -> str | None:
        """The ``--desc`` of the board this process uses, if any."""
        return self.boards[0] if self.boards else None

    def item_workdir(self, case: Case, stage: str, version: str) -> Path:
        """Its own output folder for one item."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", case.name)
        return self.run_dir() / safe / f"{stage}-{version}"

    def model_sha256(self, case: Case) -> str:
        """sha256 of the case's model (cached per process)."""
        if case.model not in self._sha:
            self._sha[case.model] = file_sha256(case.model)
        return self._sha[case.model]

    def oracle_report(self, case: Case) -> dict[str, Any]:
        """The oracle's analysis of the case's model, computed once per session.

        Cached in memory and in the run's folder, so an xdist worker running a toolchain
        item reads what another worker's oracle item computed instead of redoing it.
        """
        cached = self._oracle.get(case.model)
        if cached is None:
            cached = self._shared_oracle(case)
            self._oracle[case.model] = cached
        if isinstance(cached, OracleError):
            raise cached
        return cached

    def _shared_oracle(self, case: Case) -> dict[str, Any] | OracleError:
        import json

        from .oracle import analyze_model

        folder = self.run_dir() / "oracle"
        path = folder / f"{self.model_sha256(case)}.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = None
        if isinstance(saved, dict):
            return OracleError(saved["error"]) if "error" in saved else saved
        try:
            report: dict[str, Any] | OracleError = analyze_model(case.model)
        except OracleError as exc:
            report = exc
        data = {"error": str(report)} if isinstance(report, OracleError) else report
        try:  # written whole then renamed: a reader never sees half a file
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, path)
        except (OSError, TypeError):
            pass  # the cache is an optimisation; the figures are already in hand
        return report

    def run_dir(self) -> Path:
        """This session's folder under the work folder (shared by xdist workers)."""
        run = f"run-{self.run_id}" if self.run_id is not None else f"pid-{os.getpid()}"
        return self.workdir / run


def _resolve(config: pytest.Config, option: str | None, ini: str, default: Path) -> Path:
    if option:
        return Path(option).resolve()
    value = config.getini(ini)
    if value:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / str(value)).resolve()
    return (config.rootpath / default).resolve()


def get_state(config: pytest.Config) -> StedgeState:
    """The session's state, set up on first use (collection may come before sessionstart
    hooks of other plugins have run)."""
    state = config.stash.get(state_key, None)
    if state is None:
        state = StedgeState(config)
        config.stash[state_key] = state
    if not state.ready:
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and WORKERINPUT_KEY in workerinput:
            state.from_workerinput(workerinput[WORKERINPUT_KEY])
        else:
            from .session import setup_controller

            setup_controller(config, state)
    return state


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the option's plugin is not registered
        return None

"""Per-process state of a pytest-stedge session, one object per concern.

An item reads it in one direction: which toolchain (``toolchains``), where to write
(``work``), what the model is (``models``: hash and the oracle's report), which known
bugs apply (``bugs``), what to compare with (``baselines``) and how long to wait
(``settings``). The controller (or the only process, without xdist) fills it from the
options and the store; xdist workers receive the same facts as plain data through
``workerinput`` and never open the store. This module never imports the controller:
the plugin hands :func:`get_state` the function that sets a controller up.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .bugs.registry import BugRegistry, check_case_bugs, load_registry
from .corpus import Case, file_sha256
from .errors import CaseError, OracleError
from .gate import Baseline
from .toolchain import Discovery, Install

state_key = pytest.StashKey["StedgeState"]()
controller_setup_key = pytest.StashKey[Callable[[pytest.Config, "StedgeState"], None]]()
WORKERINPUT_KEY = "stedge"
NO_INSTALL = "no-install"
DEFAULT_TIMEOUT = 600.0


class Toolchains:
    """The versions this session runs, and for each its install or its recordings."""

    def __init__(self, requested: list[str]) -> None:
        self.requested = requested
        self.discovery: Discovery | None = None
        self.versions: list[str] = []
        self.installs: dict[str, Install] = {}
        self.recordings: dict[tuple[str, str, str], dict[str, Any]] = {}

    def setup(self, discovery: Discovery, recordings: list[dict[str, Any]]) -> None:
        """Decide the versions to run from the installs found and the stored recordings;
        a version asked for with neither is a usage error saying where we looked."""
        self.discovery = discovery
        found = {i.version: i for i in discovery.installs}
        for rec in recordings:
            self.recordings[(rec["version"], rec["case_name"], rec["stage"])] = rec
        recorded = sorted({rec["version"] for rec in recordings})
        self.versions = list(dict.fromkeys(self.requested)) if self.requested else list(found)
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

    def item_versions(self, first: str | None) -> list[str]:
        """Versions to create toolchain items for (a placeholder when there are none),
        ``first`` (the baseline) leading so it has run when the others compare with it."""
        versions = self.versions or [NO_INSTALL]
        if first in versions:
            versions = [first, *(v for v in versions if v != first)]
        return versions

    def install(self, version: str) -> Install | None:
        """The install of ``version``, if this machine has it."""
        return self.installs.get(version)

    def recording(self, version: str, case_name: str, stage: str) -> dict[str, Any] | None:
        """A recorded Result of ``case_name``/``stage`` for ``version`` (a copy), if any."""
        rec = self.recordings.get((version, case_name, stage))
        return None if rec is None else copy.deepcopy(rec)

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

    def to_data(self) -> dict[str, Any]:
        assert self.discovery is not None
        return {
            "installs": [i.to_dict() for i in self.discovery.installs],
            "searched": self.discovery.searched,
            "recordings": list(self.recordings.values()),
            "versions": self.versions,
        }

    def from_data(self, data: dict[str, Any]) -> None:
        installs = [Install.from_dict(d) for d in data["installs"]]
        self.discovery = Discovery(installs=installs, searched=data["searched"], problems=[])
        self.recordings = {
            (r["version"], r["case_name"], r["stage"]): r for r in data["recordings"]
        }
        self.versions = data["versions"]
        found = {i.version: i for i in installs}
        self.installs = {v: found[v] for v in self.versions if v in found}


class Baselines:
    """The baseline version's figures per (case, stage): stored ones, and those of this
    session's own baseline items (a later version in this process compares with them)."""

    def __init__(self, version: str | None, *, strict: bool, default_band: str) -> None:
        self.version = version
        self.strict = strict
        self.default_band = default_band
        self.stored: dict[tuple[str, str], Baseline] = {}
        self._session: dict[tuple[str, str, str], Baseline] = {}

    def in_session(self, versions: list[str]) -> bool:
        """Whether the baseline version runs in this session too."""
        return bool(self.version) and self.version in versions

    def for_item(self, case_name: str, stage: str, version: str | None) -> Baseline | None:
        """The baseline's figures for this case and stage: from this session, else the store."""
        if not self.version or version is None or version == self.version:
            return None
        return self._session.get((case_name, stage, self.version)) or self.stored.get(
            (case_name, stage)
        )

    def remember(self, case_name: str, stage: str, version: str, row: Any) -> None:
        """Keep an item's figures for the versions after it."""
        self._session[(case_name, stage, version)] = Baseline(
            version=version,
            metrics=dict(row.metrics),
            model_sha256=row.model_sha256,
            options_hash=row.options_hash,
        )

    def to_data(self) -> dict[str, Any]:
        return {f"{c}\x00{s}": b.to_dict() for (c, s), b in self.stored.items()}

    def from_data(self, data: dict[str, Any]) -> None:
        self.stored = {}
        for key, value in data.items():
            case_name, stage = key.split("\x00", 1)
            self.stored[(case_name, stage)] = Baseline(**value)


class WorkFolders:
    """Where the tool writes: one folder per run (shared by xdist workers), one per item."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_id: int | None = None

    def run_dir(self) -> Path:
        """This session's folder under the work folder."""
        run = f"run-{self.run_id}" if self.run_id is not None else f"pid-{os.getpid()}"
        return self.root / run

    def item_dir(self, case: Case, stage: str, version: str) -> Path:
        """Its own output folder for one item."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", case.name)
        return self.run_dir() / safe / f"{stage}-{version}"


class ModelFacts:
    """What is known of a case's model: its sha256 and the oracle's analysis, each
    computed once per session; the oracle's report is shared by xdist workers through
    the run folder, so a toolchain item reads what another worker's oracle item found."""

    def __init__(self, work: WorkFolders) -> None:
        self.work = work
        self._sha: dict[Path, str] = {}
        self._oracle: dict[Path, dict[str, Any] | OracleError] = {}

    def sha256(self, case: Case) -> str:
        """sha256 of the case's model (cached per process)."""
        if case.model not in self._sha:
            self._sha[case.model] = file_sha256(case.model)
        return self._sha[case.model]

    def oracle_report(self, case: Case) -> dict[str, Any]:
        """The oracle's analysis of the case's model; raises the OracleError it gave."""
        cached = self._oracle.get(case.model)
        if cached is None:
            cached = self._shared_oracle(case)
            self._oracle[case.model] = cached
        if isinstance(cached, OracleError):
            raise cached
        return cached

    def _shared_oracle(self, case: Case) -> dict[str, Any] | OracleError:
        from .oracle import analyze_model

        folder = self.work.run_dir() / "oracle"
        path = folder / f"{self.sha256(case)}.json"
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


class BugRegistries:
    """The known-bug registry of each corpus, loaded once."""

    def __init__(self) -> None:
        self._registries: dict[Path, BugRegistry | CaseError] = {}

    def registry(self, case: Case) -> BugRegistry:
        """The registry of the case's corpus (raises the CaseError it gave)."""
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

    def check(self, case: Case) -> None:
        """Refuse a case that names a bug its corpus's registry does not have."""
        check_case_bugs(case.bugs, self.registry(case), case.path)


class RunSettings:
    """How items run: time limits, the board this process uses, --stedge-update."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.update = bool(_option(config, "stedge_update"))
        self.boards: list[str] = list(_option(config, "stedge_board") or [])

    def timeout(self, case: Case) -> float:
        """Seconds before a run of ``case`` is killed (see :meth:`timeout_and_source`)."""
        return self.timeout_and_source(case)[0]

    def timeout_and_source(self, case: Case) -> tuple[float, str]:
        """The time limit of a run of ``case`` and what set it: ``--stedge-timeout`` (the
        command line wins), else the case's ``timeout`` key, else ini ``stedge_timeout``,
        else 600 s."""
        option = self.config.getoption("stedge_timeout")
        if option is not None:
            return float(option), f"--stedge-timeout {float(option):g}"
        if case.timeout is not None:
            return case.timeout, f"timeout = {case.timeout:g} in {case.path}"
        ini = self.config.getini("stedge_timeout")
        if ini:
            try:
                return float(ini), f"ini stedge_timeout = {ini}"
            except ValueError:
                raise pytest.UsageError(
                    f"ini stedge_timeout: {ini!r} is not a number of seconds (e.g. 600)"
                ) from None
        return DEFAULT_TIMEOUT, f"the default of {DEFAULT_TIMEOUT:g} s"

    def board_desc(self) -> str | None:
        """The ``--desc`` of the board this process uses, if any."""
        return self.boards[0] if self.boards else None


class StedgeState:
    """What every process of a session needs to collect and run stedge items."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.toolchains = Toolchains(list(config.getoption("stedge_version") or []))
        self.baselines = Baselines(
            _option(config, "stedge_baseline"),
            strict=bool(_option(config, "stedge_strict_baseline")),
            default_band=str(config.getini("stedge_baseline_band") or "0"),
        )
        self.work = WorkFolders(
            _resolve(config, config.getoption("stedge_workdir"), "stedge_workdir",
                     Path(".stedge") / "work")
        )
        self.models = ModelFacts(self.work)
        self.bugs = BugRegistries()
        self.settings = RunSettings(config)
        self.ready = False

    def setup(self, discovery: Discovery, recordings: list[dict[str, Any]], run_id: int | None) -> None:
        """Controller side: the versions to run and the run's id."""
        self.work.run_id = run_id
        self.toolchains.setup(discovery, recordings)
        self.ready = True

    def item_versions(self) -> list[str]:
        """Versions to create toolchain items for, the baseline first."""
        return self.toolchains.item_versions(self.baselines.version)

    def to_workerinput(self) -> dict[str, Any]:
        """Everything a worker needs, as plain data."""
        return {
            **self.toolchains.to_data(),
            "run_id": self.work.run_id,
            "boards": self.settings.boards,
            "baseline": self.baselines.to_data(),
        }

    def from_workerinput(self, data: dict[str, Any]) -> None:
        """Worker side of :meth:`to_workerinput`."""
        self.toolchains.from_data(data)
        self.work.run_id = data["run_id"]
        self.settings.boards = data["boards"]
        self.baselines.from_data(data["baseline"])
        self.ready = True


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
    hooks of other plugins have run): from ``workerinput`` on an xdist worker, else by
    the controller set-up the plugin registered."""
    state = config.stash.get(state_key, None)
    if state is None:
        state = StedgeState(config)
        config.stash[state_key] = state
    if not state.ready:
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and WORKERINPUT_KEY in workerinput:
            state.from_workerinput(workerinput[WORKERINPUT_KEY])
        else:
            config.stash[controller_setup_key](config, state)
    return state


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the option's plugin is not registered
        return None

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

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .bugs.registries import BugRegistries
from .case.model import Case
from .case.models import ModelFacts
from .case.scan import PathCache
from .errors import CaseError
from .parsers.epoch_kinds import op_counts
from .result import flat_metrics
from .steps import GateInputs, OracleInputs, StageInputs, attach_oracle
from .tool.discovery import Discovery
from .tool.versions import NO_INSTALL, Toolchains
from .tool.workdirs import WorkFolders
from .verdict.baselines import Baselines
from .verdict.gate import Baseline

state_key = pytest.StashKey["StedgeState"]()
_paths_key = pytest.StashKey[PathCache]()
controller_setup_key = pytest.StashKey[Callable[[pytest.Config, "StedgeState"], None]]()
WORKERINPUT_KEY = "stedge"
DEFAULT_TIMEOUT = 600.0


class RunSettings:
    """How items run: time limits, the board this process uses, --stedge-update."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.update = bool(_option(config, "stedge_update"))
        self.boards: list[str] = list(_option(config, "stedge_board") or [])
        self.model_dirs: list[Path] = [
            Path(p).resolve() for p in (_option(config, "stedge_models") or [])
        ] + [Path(p) for p in _ini(config, "stedge_models")]

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
        ini = self.ini_timeout()
        if ini is not None:
            return ini, f"ini stedge_timeout = {self.config.getini('stedge_timeout')}"
        return DEFAULT_TIMEOUT, f"the default of {DEFAULT_TIMEOUT:g} s"

    def ini_timeout(self) -> float | None:
        """Ini ``stedge_timeout`` in seconds (None when not set).

        :raises pytest.UsageError: not a positive number of seconds up to a day (``nan``,
            ``inf``, ``0`` or ``1e30`` would never expire, or expire at once).
        """
        from .options import TIMEOUT_HELP, timeout_problem

        text = self.config.getini("stedge_timeout")
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or timeout_problem(value):
            raise pytest.UsageError(f"ini stedge_timeout: {text!r}: expected {TIMEOUT_HELP}")
        return value

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
            metric_band_lines=list(config.getini("stedge_metric_bands") or []),
        )
        self.work = WorkFolders(
            _resolve(config, config.getoption("stedge_workdir"), "stedge_workdir",
                     Path(".stedge") / "work")
        )
        self.settings = RunSettings(config)
        self.models = ModelFacts(self.work, self.settings.model_dirs)
        self.bugs = BugRegistries()
        self.ready = False
        self._case_files: dict[str, Path] = {}
        self._nodeids: set[str] = set()

    def setup(self, discovery: Discovery, recordings: list[dict[str, Any]], run_id: int | None) -> None:
        """Controller side: the versions to run and the run's id; the corpus recordings
        under the session's arguments join the store's."""
        from .case.recordings import find_recordings

        self.work.run_id = run_id
        try:
            corpus = find_recordings(_arg_paths(self.config), path_cache(self.config).scans)
        except CaseError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.toolchains.setup(discovery, recordings, corpus)
        self.ready = True

    def claim(self, case_toml: Path, case_names: list[str], nodeids: list[str]) -> None:
        """Reserve a case file's case names and node ids for this session; a name or id
        another file (or this one) already holds is a :class:`CaseError`: the store keys
        results by them, and a second holder would overwrite the first."""
        for name in case_names:
            holder = self._case_files.setdefault(name, case_toml)
            if holder != case_toml:
                raise CaseError(
                    case_toml, None,
                    f"case name {name!r} is also the name of {holder}; cases of one session "
                    "need different names (rename one case folder)",
                )
        seen: set[str] = set()
        for nodeid in nodeids:
            if nodeid in seen or nodeid in self._nodeids:
                raise CaseError(case_toml, None, f"duplicate test id {nodeid!r}")
            seen.add(nodeid)
        self._nodeids |= seen

    def item_versions(self) -> list[str]:
        """Versions to create toolchain items for, the baseline first."""
        return self.toolchains.item_versions(self.baselines.version)

    def case_versions(self, case: Case, stage: str) -> list[str]:
        """Versions to create ``stage`` items of ``case`` for: the session's, and without
        --stedge-version every version the corpus recorded for it too (release order,
        the baseline first). validate-target without a board: recorded versions only."""
        from .case.recordings import release_key

        recorded = self.toolchains.corpus_versions(case.name, stage)
        if stage == "validate-target" and not self.settings.boards:
            stored = self.toolchains.stored_versions(case.name, stage)
            both = sorted(set(recorded) | stored, key=release_key)  # ingested ones replay too
            versions = [v for v in self.item_versions() if v in both]
            return versions if self.toolchains.requested else both
        if self.toolchains.requested or not recorded:
            return self.item_versions()
        live = [v for v in self.item_versions() if v != NO_INSTALL]
        merged = sorted(set(live) | set(recorded), key=release_key)
        first = self.baselines.version
        return [first, *(v for v in merged if v != first)] if first in merged else merged

    # -- what each step of an item needs, handed over once per item (see .steps) ----------

    def oracle_inputs(self, case: Case, run: dict[str, Any] | None = None) -> OracleInputs:
        """The oracle's report on the case's model (computed on first use, once a session
        and deployment): as the recorded ``run`` a toolchain item replays was deployed,
        else, for the oracle item of a case this session only replays, as its recordings
        were (when they agree), else as the case says."""
        if run is None and not self.replays_live(case):
            run = self.recorded_run(case)
        resolved = self.models.resolved(case)
        here = resolved is not None
        return OracleInputs(
            model_here=here,
            missing_reason="" if here else self.models.missing_reason(case),
            report=lambda: self.models.oracle_report(case, run),
            model=resolved.model if resolved is not None else None,
        )

    def replays_live(self, case: Case) -> bool:
        """Whether any toolchain item of the case runs the tool in this session."""
        return any(
            self.toolchains.install(version) is not None
            for stage in case.stages
            for version in self.case_versions(case, stage)
        )

    def recorded_run(self, case: Case) -> dict[str, Any] | None:
        """A recording of the case whose deployment all its recordings share (None: none
        recorded, or they disagree and the case's own deployment stands)."""
        from .oracle import case_deployment

        runs = self.toolchains.case_runs(case.name)
        keys = {json.dumps(case_deployment(case, run).key(), sort_keys=True) for run in runs}
        return runs[0] if len(keys) == 1 else None

    def stage_inputs(self, case: Case, stage: str, version: str) -> StageInputs:
        """The install or the recording of ``version``, and how a live run is made."""
        install = self.toolchains.install(version)
        recording = self.toolchains.recording(version, case.name, stage)
        resolved = self.models.resolved(case)
        timeout, timeout_source = self.settings.timeout_and_source(case)
        return StageInputs(
            recording=recording,
            install=install,
            case=resolved,
            board_connected=bool(self.settings.boards),
            missing_model_reason="" if resolved is not None else self.models.missing_reason(case),
            missing_tool_reason=""
            if install is not None or recording is not None
            else self.toolchains.missing_reason(version, case.name),
            workdir=self.work.item_dir(case, stage, version),
            timeout=timeout,
            timeout_source=timeout_source,
            board_desc=self.settings.board_desc(),
        )

    def gate_inputs(
        self, case: Case, stage: str, version: str | None, oracle: OracleInputs
    ) -> GateInputs:
        """The bug registry, the baseline (``--stedge-baseline``, else the corpus recording
        of the version before) and the bands of an item's verdict."""
        baseline = self.baselines.for_item(case.name, stage, version)
        if baseline is None and self.baselines.version is None and version is not None:
            baseline = self._previous_recorded(case, stage, version, oracle)
        return GateInputs(
            registry=self.bugs.registry(case),
            baseline=baseline,
            default_band=self.baselines.default_band,
            metric_bands=self.baselines.metric_bands,
            strict_baseline=self.baselines.strict,
            update=self.settings.update,
        )

    def _previous_recorded(
        self, case: Case, stage: str, version: str, oracle: OracleInputs
    ) -> Baseline | None:
        """Without --stedge-baseline, a case with corpus recordings gates each version
        against the recording of the version before it (read from the data, so any
        worker can do it)."""
        previous = self.toolchains.previous_recording(case.name, stage, version)
        if previous is None:
            return None
        result = previous["result"]
        attach_oracle(case, oracle, result)
        return Baseline(
            version=previous["version"],
            metrics=flat_metrics(result),
            model_sha256=previous["model_sha256"],
            options_hash=previous["options_hash"],
            options=["--target", str(result.get("target") or ""), *previous["options"]]
            if isinstance(previous.get("options"), list) else result.get("options"),
            placement=op_counts(result.get("epochs")),
        )

    def to_workerinput(self) -> dict[str, Any]:
        """Everything a worker needs, as plain data."""
        return {
            **self.toolchains.to_data(),
            "run_id": self.work.run_id,
            "run_uuid": self.work.run_uuid,
            "boards": self.settings.boards,
            "baseline": self.baselines.to_data(),
        }

    def from_workerinput(self, data: dict[str, Any]) -> None:
        """Worker side of :meth:`to_workerinput`."""
        self.toolchains.from_data(data)
        self.work.run_id = data["run_id"]
        self.work.run_uuid = data.get("run_uuid")
        self.settings.boards = data["boards"]
        self.baselines.from_data(data["baseline"])
        self.ready = True


def path_cache(config: pytest.Config) -> PathCache:
    """The session's cache of resolved corpus paths and folder listings."""
    cache = config.stash.get(_paths_key, None)
    if cache is None:
        cache = config.stash[_paths_key] = PathCache()
    return cache


def _resolve(config: pytest.Config, option: str | None, ini: str, default: Path) -> Path:
    if option:
        return Path(option).resolve()
    value = config.getini(ini)
    if value:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / str(value)).resolve()
    return (config.rootpath / default).resolve()


def _arg_paths(config: pytest.Config) -> list[Path]:
    base = Path(config.invocation_params.dir)
    return [base / str(arg).split("::")[0] for arg in config.args or []]


def _ini(config: pytest.Config, name: str) -> list[str]:
    try:
        return [str(v) for v in config.getini(name) or []]
    except ValueError:
        return []


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

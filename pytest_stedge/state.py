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

import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .bugs.registry import BugRegistry, check_case_bugs, load_registry
from .corpus import Case, PathCache, file_sha256
from .errors import CaseError, OracleError
from .gate import Baseline
from .store.rows import run_label
from .toolchain import Discovery, Install

state_key = pytest.StashKey["StedgeState"]()
_paths_key = pytest.StashKey[PathCache]()
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
        # shipped with the corpus (pytest_stedge.recordings); the store's own win
        self.corpus: dict[tuple[str, str, str], dict[str, Any]] = {}
        # (case, stage) -> versions of each, built where they are set: a scan of every
        # recording for every case made collecting a replayed corpus quadratic in its size
        self._corpus_versions: dict[tuple[str, str], list[str]] = {}
        self._stored_versions: dict[tuple[str, str], list[str]] = {}

    def setup(
        self,
        discovery: Discovery,
        recordings: list[dict[str, Any]],
        corpus: list[dict[str, Any]] | None = None,
    ) -> None:
        """Decide the versions to run from the installs found and the stored recordings;
        a version asked for with neither is a usage error saying where we looked."""
        self.discovery = discovery
        found = {i.version: i for i in discovery.installs}
        for rec in recordings:
            self.recordings[(rec["version"], rec["case_name"], rec["stage"])] = rec
        for rec in corpus or []:
            self.corpus[(rec["version"], rec["case_name"], rec["stage"])] = rec
        self._index_versions()
        recorded = sorted({rec["version"] for rec in [*recordings, *(corpus or [])]})
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
        """A recorded Result of ``case_name``/``stage`` for ``version`` (a copy), if any:
        the store's (``stedge ingest``), else the corpus's."""
        key = (version, case_name, stage)
        rec = self.recordings.get(key) or self.corpus.get(key)
        # a JSON round trip copies a Result ~5x faster than deepcopy (a replayed corpus
        # pays it on every item); stored datetimes come back as text, as workers see them
        return None if rec is None else json.loads(json.dumps(rec, default=str))

    def corpus_versions(self, case_name: str, stage: str) -> list[str]:
        """Versions the corpus holds a recording of for this case and stage, release order."""
        from .recordings import release_key

        return sorted(self._corpus_versions.get((case_name, stage), ()), key=release_key)

    def stored_versions(self, case_name: str, stage: str) -> set[str]:
        """Versions the store holds a recording (``stedge ingest``) of for this case and stage."""
        return set(self._stored_versions.get((case_name, stage), ()))

    def _index_versions(self) -> None:
        for recordings, index in ((self.corpus, self._corpus_versions),
                                  (self.recordings, self._stored_versions)):
            index.clear()
            for version, case_name, stage in recordings:
                index.setdefault((case_name, stage), []).append(version)

    def previous_recording(self, case_name: str, stage: str, version: str) -> dict[str, Any] | None:
        """The corpus recording of the newest version before ``version`` (a copy), if any:
        what a replayed version is gated against when no --stedge-baseline is given."""
        from .recordings import release_key

        earlier = [v for v in self.corpus_versions(case_name, stage) if release_key(v) < release_key(version)]
        return self.recording(earlier[-1], case_name, stage) if earlier else None

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
            # plain data for execnet: a stored recording carries its datetime
            "recordings": json.loads(json.dumps(list(self.recordings.values()), default=str)),
            "corpus": list(self.corpus.values()),
            "versions": self.versions,
        }

    def from_data(self, data: dict[str, Any]) -> None:
        installs = [Install.from_dict(d) for d in data["installs"]]
        self.discovery = Discovery(installs=installs, searched=data["searched"], problems=[])
        self.recordings = {
            (r["version"], r["case_name"], r["stage"]): r for r in data["recordings"]
        }
        self.corpus = {(r["version"], r["case_name"], r["stage"]): r for r in data["corpus"]}
        self._index_versions()
        self.versions = data["versions"]
        found = {i.version: i for i in installs}
        self.installs = {v: found[v] for v in self.versions if v in found}


class Baselines:
    """The baseline version's figures per (case, stage): stored ones, and those of this
    session's own baseline items (a later version in this process compares with them)."""

    def __init__(
        self,
        version: str | None,
        *,
        strict: bool,
        default_band: str,
        metric_band_lines: list[str] | None = None,
    ) -> None:
        self.version = version
        self.strict = strict
        self.default_band = default_band
        self.metric_band_lines = list(metric_band_lines or [])
        self.stored: dict[tuple[str, str], Baseline] = {}
        self._session: dict[tuple[str, str, str], Baseline] = {}

    @property
    def metric_bands(self) -> dict[str, str]:
        """Per-metric default bands: ini ``stedge_metric_bands`` over the noisy metrics' own.

        :raises BandError: for a malformed entry (the session checks them at start).
        """
        from .diff import parse_metric_bands

        return parse_metric_bands(self.metric_band_lines)

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
    """Where the tool writes: one folder per run (shared by xdist workers), one per item.

    Unique per store and per run (``run-<id>-<uuid>``: another store's run 3 is another
    folder), and per item: every name is escaped one-to-one (:func:`path_segment`), so
    case ``a_b`` and variant ``b`` of case ``a`` never share a folder.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_id: int | None = None
        self.run_uuid: str | None = None

    def run_name(self) -> str:
        """This run's folder name (``pid-N`` before the run is recorded)."""
        if self.run_id is None:
            return f"pid-{os.getpid()}"
        return run_label(self.run_id, self.run_uuid)

    def run_dir(self) -> Path:
        """This session's folder under the work folder."""
        return self.root / self.run_name()

    def item_dir(self, case: Case, stage: str, version: str) -> Path:
        """Its own output folder for one item: ``<case folder>[/@<variant>]/<stage>-<version>``."""
        folder = self.run_dir() / path_segment(case.folder.name)
        if case.variant is not None:
            folder = folder / ("@" + path_segment(case.variant))
        return folder / path_segment(f"{stage}-{version}")


def path_segment(text: str) -> str:
    """``text`` as one folder name, one-to-one: characters outside ``[A-Za-z0-9_.-]``
    (``/`` included) and ``%`` become ``%XX``, and a leading dot is escaped, so no name
    can climb out of its folder or collide with another."""
    out = "".join(
        ch if re.fullmatch(r"[A-Za-z0-9_.-]", ch) else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in text
    )
    return "%2E" + out[1:] if out.startswith(".") else out or "%00"


class ModelFacts:
    """What is known of a case's model: its sha256 and the oracle's analysis, each
    computed once per session; the oracle's report is shared by xdist workers through
    the run folder, so a toolchain item reads what another worker's oracle item found."""

    def __init__(self, work: WorkFolders, model_dirs: list[Path] | None = None) -> None:
        from .record_only import ModelFinder

        self.work = work
        self.finder = ModelFinder(list(model_dirs or []))
        self._sha: dict[Path, str] = {}
        self._oracle: dict[tuple[Path, str], dict[str, Any] | OracleError] = {}

    def resolved(self, case: Case) -> Case | None:
        """The case with its model file: itself, or for a record-only case a copy pointing at
        the file found in the --stedge-models folders (None when it is nowhere)."""
        if case.model_source is None:
            return case
        if case.model.is_file() and _matches(case, case.model):
            return case
        found = self.finder.find(case.model_source)
        return None if found is None else dataclasses.replace(case, model=found)

    def missing_reason(self, case: Case) -> str:
        """Why a record-only case's model is not here, and how to provide it."""
        assert case.model_source is not None
        return (
            f"record-only case: the corpus does not ship its model {case.model_source.describe()}; "
            f"{self.finder.describe()}. Download it and pass --stedge-models DIR (matched by hash)"
        )

    def sha256(self, case: Case) -> str:
        """sha256 of the case's model (cached per process); a record-only case whose file
        is absent has its declared identity (sha256, or ``md5:<hex>``)."""
        resolved = self.resolved(case)
        if resolved is None:
            assert case.model_source is not None
            return case.model_source.identity()
        if resolved.model not in self._sha:
            self._sha[resolved.model] = file_sha256(resolved.model)
        return self._sha[resolved.model]

    def oracle_report(self, case: Case) -> dict[str, Any]:
        """The oracle's analysis of the case's model as the case's target, options and
        mpool deploy it; raises the OracleError it gave. Cached per (model, deployment)."""
        from .oracle import case_deployment

        resolved = self.resolved(case)
        if resolved is None:
            raise OracleError(self.missing_reason(case))
        case = resolved
        deployment = case_deployment(case)
        key = json.dumps(deployment.key(), sort_keys=True)
        cached = self._oracle.get((case.model, key))
        if cached is None:
            cached = self._shared_oracle(case, deployment, key)
            self._oracle[(case.model, key)] = cached
        if isinstance(cached, OracleError):
            raise cached
        return cached

    def _shared_oracle(self, case: Case, deployment: Any, key: str) -> dict[str, Any] | OracleError:
        import hashlib

        from .oracle import analyze_deployed

        folder = self.work.run_dir() / "oracle"
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        path = folder / f"{self.sha256(case)}-{digest}.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = None
        if isinstance(saved, dict):
            return OracleError(saved["error"]) if "error" in saved else saved
        try:
            report: dict[str, Any] | OracleError = analyze_deployed(case.model, deployment)
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


def _matches(case: Case, path: Path) -> bool:
    from .record_only import digests

    assert case.model_source is not None
    try:
        return case.model_source.matches(*digests(path))
    except OSError:
        return False


class BugRegistries:
    """The known-bug registry of each corpus, loaded once."""

    def __init__(self) -> None:
        self._registries: dict[Path, BugRegistry | CaseError] = {}  # by corpus root

    def registry(self, case: Case) -> BugRegistry:
        """The registry of the case's corpus (raises the CaseError it gave)."""
        cached = self._registries.get(case.corpus_root)
        if cached is None:
            try:
                cached = load_registry(case.corpus_root / "bugs")
            except CaseError as exc:
                cached = exc
            self._registries[case.corpus_root] = cached
        if isinstance(cached, CaseError):
            raise cached
        return cached

    def check(self, case: Case) -> None:
        """Refuse a case that names a bug its corpus's registry does not have."""
        registry = self.registry(case)  # also for a case naming none: a bad registry fails it
        if case.bugs:
            check_case_bugs(case.bugs, registry, case.path)


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
        from .recordings import find_recordings

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
        from .recordings import release_key

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

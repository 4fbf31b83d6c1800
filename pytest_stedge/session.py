"""The controller side of a session: discovery, the store, and the terminal summary.

Only this process opens the store. Items (here or on xdist workers) attach their row
to the test report; the controller journals each row as its report arrives (before the
terminal says the item finished) and a writer thread puts it in the store within a
fraction of a second (:mod:`.store.writer`), so a session killed at any moment loses
only the items in flight, and SIGTERM ends a session like Ctrl-C.
"""

from __future__ import annotations

import socket
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .errors import StoreError
from .report.terminal import SessionSummary
from .state import WORKERINPUT_KEY, StedgeState
from .stop import SessionStop, stop_timeout
from .store.database import COLLECTION_ERROR, DEFAULT_PATH, Store
from .store.ending import finish_writes, not_stored_lines
from .store.journal import Journal, merge_stopped
from .store.location import Location, display, is_server, parse_location
from .store.placement_reads import version_placements
from .store.rows import ItemRow, run_label
from .store.writer import SessionWriter, WriteReport

controller_key = pytest.StashKey["StedgeController"]()
# The exit status of a session whose finished items are not all in the store (kept in the
# journal): pytest's "internal error", since the harness, not a test, failed.
NOT_STORED_EXIT = pytest.ExitCode.INTERNAL_ERROR
END_WAIT_FACTOR = 6  # the end waits this many times stedge_db_wait for a busy store


def store_path(config: pytest.Config) -> Location:
    """Where this session's store lives: --stedge-db, ini stedge_db, or the default; a
    file path (resolved), or a PostgreSQL server's connection string."""
    option = config.getoption("stedge_db")
    ini = config.getini("stedge_db")
    try:
        location = parse_location(option) if option else parse_location(ini) if ini else None
    except ValueError as exc:
        raise pytest.UsageError(f"--stedge-db: {exc}") from None
    if location is None:
        return (config.rootpath / DEFAULT_PATH).resolve()
    if isinstance(location, str):
        return location
    if not option:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / location).resolve()
    return location.resolve()


def setup_controller(config: pytest.Config, state: StedgeState) -> None:
    """Find installs, read the store, check the request, then record the run.

    Raises UsageError on bad requests, before any run is recorded: a session that stops
    on a usage error leaves no run behind.
    """
    _refuse_remote_workers(config)
    state.settings.ini_timeout()  # a bad ini limit stops the session before any run
    stop = SessionStop(stop_timeout(config))
    stop.install()  # SIGTERM ends a session like Ctrl-C; nothing cuts its end
    config.pluginmanager.register(stop, "stedge-stop")
    roots = [Path(r) for r in config.getoption("stedge_root") or []]
    roots += [Path(p) for p in config.getini("stedge_roots") or []]
    discovery = config.hook.pytest_stedge_discover_toolchains(config=config, roots=roots)
    controller = StedgeController(config, state, stop)
    config.stash[controller_key] = controller
    config.pluginmanager.register(controller, "stedge-controller")
    recordings: list[dict[str, Any]] = []
    baseline_rows: list[dict[str, Any]] = []
    baseline_options: dict[tuple[str, str, str], list[str]] = {}
    baseline_placement: dict[tuple[str, str], Any] = {}
    stored_versions: list[str] = []
    try:
        if config.option.collectonly:  # nothing runs: read recordings, record no run
            if is_server(controller.path) or Path(controller.path).exists():
                with Store.open(controller.path, create=False, read_only=True) as store:
                    recordings = store.recordings()
        else:
            controller.open_store()
            assert controller.store is not None
            recordings = controller.store.recordings()
            if state.baselines.version:
                from .store.queries import stated_options

                baseline_rows = controller.store.metric_rows(versions=[state.baselines.version])
                baseline_placement = version_placements(controller.store, state.baselines.version)
                stored_versions = controller.store.versions()
                baseline_options = stated_options(controller.store, [state.baselines.version])
    except StoreError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.setup(discovery, recordings, None)
    if state.baselines.version and not config.option.collectonly:
        _load_baseline(state, baseline_rows, stored_versions, controller.path, baseline_options)
        for key, base in state.baselines.stored.items():
            base.placement = baseline_placement.get(key)
    if controller.store is not None:
        stop.hold_until_started()  # a signal from here on is raised once the session has begun
        try:
            controller.begin_run(state.toolchains.versions)
        except StoreError as exc:
            raise pytest.UsageError(str(exc)) from None
        state.work.run_id = controller.run_id
        state.work.run_uuid = controller.run_uuid


def _refuse_remote_workers(config: pytest.Config) -> None:
    """xdist workers on other hosts (``--tx ssh=...``, ``socket=...``) would get this
    machine's install paths, board ports and work folder: refuse them, before any run
    is recorded, and say what serves instead."""
    specs = getattr(config.option, "tx", None) or []
    if not specs:
        return
    import execnet

    remote = []
    for text in specs:
        spec = execnet.XSpec(text.split("*", 1)[-1])  # "4*popen" is four local workers
        if spec.ssh or spec.socket or getattr(spec, "vagrant_ssh", None):
            remote.append(text)
    if remote:
        raise pytest.UsageError(
            f"--tx {', '.join(remote)}: pytest-stedge runs xdist workers on this machine "
            "only (its installs, boards and work folder are this machine's paths). To "
            "spread a corpus over machines, run one session per machine on its own shard "
            "into one shared store: pytest corpus --stedge-shard K/N --stedge-run-group ID "
            "--stedge-db postgresql://USER@HOST/DB (see the README's 'Team store')"
        )


def _load_baseline(
    state: StedgeState, rows: list[dict[str, Any]], stored: list[str], path: Location,
    options: dict[tuple[str, str, str], list[str]] | None = None,
) -> None:
    from .verdict.bands import BandError, parse_band
    from .verdict.gate import Baseline

    assert state.baselines.version is not None
    try:
        parse_band(state.baselines.default_band)
    except BandError as exc:
        raise pytest.UsageError(f"ini stedge_baseline_band: {exc}") from None
    try:
        _ = state.baselines.metric_bands  # malformed entries are a usage error up front
    except BandError as exc:
        raise pytest.UsageError(f"ini stedge_metric_bands: {exc}") from None
    if not rows and not state.baselines.in_session(state.toolchains.versions):
        raise pytest.UsageError(
            f"--stedge-baseline {state.baselines.version}: the store {path} has no results of "
            f"{state.baselines.version}; versions with stored results: {', '.join(stored) or 'none'}. "
            f"Run it first (pytest corpus --stedge-version {state.baselines.version}), or add "
            f"--stedge-version {state.baselines.version} to run it in this session."
        )
    for row in rows:
        key = (row["case_name"], row["stage"])
        base = state.baselines.stored.get(key)
        if base is None:
            base = state.baselines.stored[key] = Baseline(
                version=state.baselines.version,
                metrics={},
                model_sha256=row["model_sha256"],
                options_hash=row["options_hash"],
                run_id=row["run_id"],
                options=(options or {}).get((row["case_name"], row["stage"], row["version"])),
            )
        if row["metric"] is not None and row["value"] is not None:
            base.metrics[row["metric"]] = float(row["value"])


class StedgeController:
    """Registered on the controller only: writes rows and prints the summary."""

    def __init__(
        self, config: pytest.Config, state: StedgeState, stop: SessionStop | None = None
    ) -> None:
        self.config = config
        self.state = state
        self.stop = stop or SessionStop(0)
        self.store: Store | None = None
        self.run_id: int | None = None
        self.run_uuid: str | None = None
        self.path = store_path(config)
        self.summary = SessionSummary()
        self.write_errors: list[str] = []
        self.notes: list[str] = []  # journals merged at the start
        self.journal: Journal | None = None
        self.writer: SessionWriter | None = None
        self.report_path: Path | None = None
        self.incomplete = False  # finished items (or the run's end) only in the journal
        self._kept: WriteReport | None = None
        self.collection_errors = 0

    def open_store(self) -> None:
        """Open the store and merge what stopped sessions left in their journals."""
        wait = float(self.config.getini("stedge_db_wait") or 5)
        self.store = Store.open(self.path, wait_s=wait)
        self.notes += merge_stopped(self.store)

    def begin_run(self, versions: list[str]) -> None:
        """Record the run as running, start its journal and the writer; handle SIGTERM."""
        assert self.store is not None
        run_uuid = uuid.uuid4().hex
        header = {
            "run_uuid": run_uuid,
            "argv": list(sys.argv),
            "versions": list(versions),
            "baseline": _option(self.config, "stedge_baseline"),
            "host": socket.gethostname(),
            "run_group": _option(self.config, "stedge_run_group"),
            "shard": _option(self.config, "stedge_shard"),
            "started_at": datetime.now(UTC).replace(tzinfo=None).isoformat(),
        }
        self.journal = Journal.create(self.path, header)
        try:
            self.run_id = self.store.begin_run(
                argv=header["argv"], versions=versions, baseline=header["baseline"],
                run_uuid=run_uuid, run_group=header["run_group"], shard=header["shard"],
            )
        except BaseException:
            self.journal.close(delete=True)
            self.journal = None
            raise
        self.run_uuid = run_uuid
        self.writer = SessionWriter(self.store, self.run_id, self.journal)

    # -- xdist -----------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = self.state.to_workerinput()

    # -- reports ---------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # journaled before the terminal says it finished
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "stedge", None)
        if not data:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            row = ItemRow.from_dict(data)
            row.outcome = _outcome(report)
            if not report.passed:
                row.message = _message(report)
            with self.stop.shielded():  # an interrupt mid-hand-over could hang the stop
                self._record(row, report)

    def _record(self, row: ItemRow, report: pytest.TestReport) -> None:
        self.summary.rows.append(row)
        self.summary.add_bounds(row)
        if row.changes and row.version:
            base = row.baseline_version or str(self.state.baselines.version)
            self.summary.changes.setdefault((base, row.version), []).extend(row.changes)
        if row.placement_moves and row.version:
            base = row.baseline_version or str(self.state.baselines.version)
            self.summary.placement.setdefault((base, row.version), []).append(
                {"case_name": row.case_name, "stage": row.stage, **row.placement_moves})
        if row.update:
            self._apply_update(row)
        if row.outcome in ("failed", "error"):
            misses = getattr(report, "stedge_misses", None) or []
            self.summary.failures[row.nodeid] = misses or [
                (row.message or "failed").strip().splitlines()[0][:200]
            ]
        if self.writer is not None:
            self.writer.put(row)

    def _apply_update(self, row: ItemRow) -> None:
        """--stedge-update: edit the case file here, on the one process that writes files."""
        from .verdict.update import session_tracker

        assert row.update is not None
        self.summary.updates += session_tracker(self.config).apply(row.nodeid, row.update)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    # -- end of session ----------------------------------------------------------------

    # trylast: after --stedge-update's tracker, which may turn exit status 1 into 0
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.writer is None or self.store is None or self.run_id is None:
            return
        kept = self._kept = self.writer.close()
        self.writer = None
        status = _status(exitstatus)
        if self.collection_errors and not self.summary.rows:
            # nothing ran: a run of 0 items is no result; `stedge runs` hides it
            status = COLLECTION_ERROR
        assert self.journal is not None
        try:
            self._note_replayed_versions()
        except StoreError as exc:
            kept.errors.append(str(exc))
        wait = float(self.config.getini("stedge_db_wait") or 5)
        ending = finish_writes(  # more patient than a batch: 6 x stedge_db_wait
            self.store, self.run_id, kept, self.journal, status=status,
            exitstatus=int(exitstatus), wait_s=END_WAIT_FACTOR * wait,
        )
        if not ending.complete:
            self.incomplete = True
            self.write_errors += not_stored_lines(
                self.path, self.journal.path, kept, journal_full=self.journal.full
            )
            # A finished item only in the journal is no green step: a CI job publishing
            # the store next would read an incomplete run.
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = NOT_STORED_EXIT
        if ending.finished:
            self._write_report()

    def _note_replayed_versions(self) -> None:
        """A session without an install replays recorded versions: those are its versions
        (`stedge runs` said "-" after replaying six)."""
        from .case.recordings import release_key

        assert self.store is not None and self.run_id is not None
        if self.state.toolchains.versions:
            return
        replayed = {r.version for r in self.summary.rows if r.version and r.recorded}
        if replayed:
            self.store.set_run_versions(self.run_id, sorted(replayed, key=release_key))

    def _write_report(self) -> None:
        """The run's HTML report; a failure to render is said, never fatal."""
        option = _option(self.config, "stedge_report")
        if option == "none" or self.store is None or self.run_id is None:
            return
        path = (
            Path(option).resolve()
            if option
            else self.config.rootpath / "reports" / f"{run_label(self.run_id, self.run_uuid)}.html"
        )
        try:
            self.report_path = self.config.hook.pytest_stedge_write_report(
                config=self.config, store=self.store, run_id=self.run_id, path=path
            )
        except Exception as exc:  # noqa: BLE001  # the results are stored; only the page is missing
            self.write_errors.append(f"HTML report {path}: {exc}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.writer is not None:  # the session never reached its end: keep the journal
            self.writer.close()
            self.writer = None
        if self.journal is not None:
            self.journal.close(delete=False)
        if self.store is not None:
            self.store.close()
            self.store = None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .report.terminal import write_summary

        if not self.summary.rows and self.run_id is None and not self.notes:
            return
        group = _option(self.config, "stedge_run_group")
        stored = None
        if self.run_id is not None:
            part = f" (run group {group})" if group else ""
            stored = f"stored as run {self.run_id}{part} in {display(self.path)}"
            if self.incomplete:
                stored = (f"run {self.run_id}{part} is incomplete in {display(self.path)}: "
                          f"the rest is in the journal (above); exit status "
                          f"{int(NOT_STORED_EXIT)} unless a test failed")
        write_summary(
            terminalreporter, self.summary, notes=self.notes, write_errors=self.write_errors,
            stored=stored, report_path=self.report_path,
        )


def _status(exitstatus: int) -> str:
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "interrupted"
    if exitstatus == pytest.ExitCode.OK:
        return "passed"
    if exitstatus == pytest.ExitCode.TESTS_FAILED:
        return "failed"
    return "error"


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "setup" and report.failed:
        return "error"
    return report.outcome


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return report.longreprtext


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:
        return None


__all__ = ["StedgeController", "setup_controller", "store_path"]

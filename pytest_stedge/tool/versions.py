"""The toolchain versions a session runs, each with its install or its recorded runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..case.recordings import release_key
from .discovery import Discovery, Install

NO_INSTALL = "no-install"


class Toolchains:
    """The versions this session runs, and for each its install or its recordings."""

    def __init__(self, requested: list[str]) -> None:
        self.requested = requested
        self.discovery: Discovery | None = None
        self.versions: list[str] = []
        self.installs: dict[str, Install] = {}
        self.recordings: dict[tuple[str, str, str], dict[str, Any]] = {}
        # shipped with the corpus (pytest_stedge.case.recordings); the store's own win
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

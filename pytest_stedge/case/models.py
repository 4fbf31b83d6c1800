"""What is known of a case's model in a session: its file, its hash, the oracle's report."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from ..errors import OracleError
from ..tool.workdirs import WorkFolders
from .model import Case, file_sha256


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
        from ..oracle import case_deployment

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

        from ..oracle import analyze_deployed

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

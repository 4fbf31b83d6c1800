"""The per-version N6 operator placement table: what the real epoch tables show.

Built by ``tools/build_placement_table.py`` from every real N6 run with an epoch table
(:mod:`.runs`) and shipped as ``oracle/placement/data/n6_placement.json``. Per version
line (``2.2``: patch releases of one line are read together, each row keeping its exact
version) and per operator as the tool prints it, the table counts the epochs seen in
software, hybrid and (where the run's model tells) hardware, each row with its
provenance (file, line, epoch, model, node).

A lookup decides only when the data does: every observation of one kind. Mixed or
absent evidence is "unknown in this version", never the majority.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.errors import OracleError

if TYPE_CHECKING:
    from .runs import Run

SCHEMA = "stedge.n6-placement/1"
KINDS = ("sw", "hybrid", "hw")
_DATA = "n6_placement.json"


def version_line(version: str) -> str:
    """``2.2.0`` -> ``2.2`` (``4.0.1-20581`` -> ``4.0``); unparsable versions as given."""
    match = re.match(r"\s*v?(\d+)\.(\d+)", version or "")
    return f"{match.group(1)}.{match.group(2)}" if match else (version or "").strip()


def build_table(runs: Iterable[Run], *, exclude_model: str | None = None) -> dict[str, Any]:
    """The table from runs; ``exclude_model`` (an md5) leaves that model's runs out."""
    versions: dict[str, dict[str, dict[str, Any]]] = {}
    used: list[dict[str, Any]] = []
    for run in runs:
        if exclude_model and exclude_model in (run.model_hash, run.model_md5):
            continue
        used.append({"folder": run.folder, "version": run.version, "counts": run.counts,
                     "model_hash": run.model_hash, "model_file": run.model_file,
                     "model_match": run.model_match})
        for obs in run.observations:
            if obs.op in ("", "?"):
                continue
            entry = versions.setdefault(version_line(obs.version), {}).setdefault(
                obs.op, {"sw": 0, "hybrid": 0, "hw": 0, "rows": []})
            entry[obs.kind] += obs.count
            entry["rows"].append(obs.as_dict())
    ordered = {line: dict(sorted(ops.items())) for line, ops in sorted(versions.items())}
    return {"schema": SCHEMA, "runs": used, "versions": ordered}


def load_table(path: Path | str | None = None) -> dict[str, Any]:
    """The shipped table (or the one at ``path``).

    :raises OracleError: unreadable, or not a placement table.
    """
    try:
        if path is None:
            text = resources.files("pytest_stedge.oracle.placement").joinpath("data", _DATA).read_text(
                encoding="utf-8")
            where = f"pytest_stedge/oracle/placement/data/{_DATA}"
        else:
            text = Path(path).read_text(encoding="utf-8")
            where = str(path)
        doc = json.loads(text)
    except (OSError, ValueError) as exc:
        raise OracleError(f"placement table: not readable ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise OracleError(f"{where}: field 'schema' is not {SCHEMA!r}: not a placement table")
    return doc


def dump_table(table: dict[str, Any]) -> str:
    """Deterministic JSON text of a table (sorted keys, one row per line)."""
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


@dataclass
class Evidence:
    """What the table says of one operator in one version line."""

    line: str
    op: str
    kind: str | None  # sw | hybrid | hw when every observation agrees, else None
    counts: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seen(self) -> bool:
        """Whether any real run of this version line shows the operator."""
        return any(self.counts.values())

    def cite(self, kind: str | None = None, limit: int = 3) -> list[str]:
        """``file:line`` of the rows (of one kind), the first row of each file, first
        ``limit`` files (several runs before several rows of one run)."""
        out: list[str] = []
        files: set[str] = set()
        for row in self.rows:
            if (kind and row.get("kind") != kind) or row["file"] in files:
                continue
            files.add(row["file"])
            out.append(f"{row['file']}:{row['line']}")
        return out[:limit]

    def describe(self) -> str:
        """``SW 22, hybrid 0, HW 0 in 2.2``."""
        parts = [f"{k.upper() if k != 'hybrid' else k} {self.counts.get(k, 0)}" for k in KINDS]
        return f"{', '.join(parts)} epochs in {self.line}"


def lookup(table: dict[str, Any], version: str, op: str) -> Evidence:
    """The evidence for ``op`` in the version line of ``version``."""
    line = version_line(version)
    entry = (table.get("versions") or {}).get(line, {}).get(op)
    if not entry:
        return Evidence(line, op, None, {k: 0 for k in KINDS}, [])
    counts = {k: int(entry.get(k, 0)) for k in KINDS}
    kinds = [k for k in KINDS if counts[k]]
    return Evidence(line, op, kinds[0] if len(kinds) == 1 else None, counts,
                    list(entry.get("rows", [])))


def versions(table: dict[str, Any]) -> list[str]:
    """The version lines the table has data for."""
    return sorted((table.get("versions") or {}).keys())

"""Real N6 runs with an epoch table, read as placement observations with their provenance.

A run is one tool invocation: the files of one output folder (its text report, its
``c_info.json``; an ATONN workspace ``st_ai_ws/neural_art__*`` belongs to the folder that
holds ``st_ai_ws``). A folder whose epoch files are byte-for-byte copies of another
folder's (the corpus repeats sample files in the real cases) is the same run, read once.

Each software or hybrid epoch becomes one :class:`Observation` (version, operator as
the tool prints it, kind, file, line). Where the run's model is in the tree (found by
the MD5 the tool records for it), the model's deployed operators that the table did not
list in software or hybrid ran in hardware: one HW observation per operator type, and
software observations are tied to the model's nodes where the counts allow it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers.folder import parse_file_runs

_TEXT_SUFFIXES = (".txt", ".log")
_MODEL_SUFFIXES = (".onnx", ".tflite")
_V2_ROW = re.compile(r"^.*?epoch\s+(\d{1,9})\s+(-SW-|\?\?)(?:\s+\(([^)]*)\))?\s*$")
_V3_ROW = re.compile(r"^.*?\|\s*epoch_(\d{1,9})\s*\|\s*(SW|Hybrid|HYBRID|MIX)\s*\|([^|]*)\|\s*$")
_SUMMARY = re.compile(r"Total number of epochs")
KINDS = {"-SW-": "sw", "SW": "sw", "??": "hybrid", "Hybrid": "hybrid", "HYBRID": "hybrid",
         "MIX": "hybrid"}


@dataclass(frozen=True)
class Observation:
    """One operator placement the tool printed (or, for HW, that the model implies)."""

    version: str
    op: str
    kind: str  # sw | hybrid | hw
    file: str
    line: int
    epoch: int | None = None
    count: int = 1
    model: str | None = None  # md5 of the user's model, where known
    node: str | None = None  # the model node it comes from, where the counts tie it
    detail: str = ""  # as printed ("Sub(float)"), or how an HW count was derived

    def as_dict(self) -> dict[str, Any]:
        """JSON form, without empty fields."""
        out = {"version": self.version, "op": self.op, "kind": self.kind, "file": self.file,
               "line": self.line, "epoch": self.epoch, "count": self.count,
               "model": self.model, "node": self.node, "detail": self.detail}
        return {k: v for k, v in out.items() if v not in (None, "")}


@dataclass
class Run:
    """One real run: its files, tool version, epoch counts and the model it compiled."""

    folder: str
    files: list[str]
    version: str
    counts: dict[str, int]
    observations: list[Observation] = field(default_factory=list)
    model_hash: str | None = None
    model_file: str | None = None
    model_md5: str | None = None  # md5 of the model file tied to the run
    model_match: str = ""  # "md5" (the hash the tool recorded) or "folder" (the case's one model)
    options: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The run's folder, relative to the tree it was read from."""
        return self.folder


def _md5(path: Path) -> str:
    return "0x" + hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def _op_type(detail: str) -> str:
    detail = detail.strip()
    if detail.replace(" ", "").endswith("(float)"):
        return detail[: detail.index("(")].rstrip() + "(float)"
    if detail.endswith(")") and "(" in detail:
        return detail[: detail.index("(")].rstrip()
    return detail


def _epoch_files(root: Path) -> dict[Path, list[Path]]:
    """Epoch-table files grouped by run folder."""
    groups: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in ("SOURCE.txt", "INDEX.md"):
            continue
        if path.suffix not in _TEXT_SUFFIXES + (".json",):
            continue
        try:
            head = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.suffix == ".json":
            if "NODE_SW" not in head and "NODE_HW" not in head and "NODE_EC" not in head:
                continue
        elif "Epochs details" not in head:
            continue
        folder = path.parent
        parts = folder.parts
        if "st_ai_ws" in parts:
            folder = Path(*parts[: parts.index("st_ai_ws")])
        groups.setdefault(folder, []).append(path)
    return groups


def _text_rows(path: Path) -> list[tuple[int, int, str, str]]:
    """(line, epoch id, kind, detail) of every SW/hybrid row of a text report."""
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        match = _V2_ROW.match(line) or _V3_ROW.match(line)
        if match:
            rows.append((number, int(match.group(1)), KINDS[match.group(2)],
                         (match.group(3) or "").strip()))
    return rows


def _json_line(text_lines: list[str], epoch: int) -> int:
    needle = f'"epoch_{epoch}"'
    for number, line in enumerate(text_lines, start=1):
        if needle in line:
            return number
    return 0


def _summary_line(path: Path) -> int:
    for number, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if _SUMMARY.search(line):
            return number
    return 0


def model_index(root: Path) -> dict[str, Path]:
    """MD5 signature -> model file, for every ONNX/TFLite file of the tree.

    The tool's intermediate ``*_OE_*.onnx`` files are left out: they are the tool's own
    rewrite of a model, not a model a user hands it.
    """
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in _MODEL_SUFFIXES and path.is_file() and "_OE_" not in path.name:
            out.setdefault(_md5(path), path)
    return out


def read_runs(root: Path | str) -> list[Run]:
    """Every N6 run with an epoch table under ``root``, byte-identical copies read once."""
    root = Path(root)
    seen: dict[str, str] = {}
    runs: list[Run] = []
    for folder, files in sorted(_epoch_files(root).items()):
        digests = sorted(_md5(f) for f in files)
        key = "|".join(digests)
        if key in seen or all(d in seen for d in digests):
            continue
        for digest in digests:
            seen.setdefault(digest, str(folder))
        seen[key] = str(folder)
        run = _read_run(root, folder, files)
        if run is not None:
            runs.append(run)
    return runs


def _read_run(root: Path, folder: Path, files: list[Path]) -> Run | None:
    results: list[tuple[Path, dict[str, Any]]] = []
    for path in files:
        try:  # a log of a generate and a validate: each run, the generate's has the epochs
            results.extend((path, dict(run)) for run in parse_file_runs(path))
        except ReportParseError:  # a file the parsers refuse teaches nothing
            pass
    results = [(p, r) for p, r in results
               if str(r.get("target", "")).startswith("stm32n6") and r.get("epochs")]
    if not results:
        return None
    texts = [(p, r) for p, r in results if p.suffix in _TEXT_SUFFIXES]
    infos = [(p, r) for p, r in results if p.suffix == ".json"]
    primary_path, primary = (texts or infos)[0]
    version = str((primary.get("tool") or {}).get("version") or "")
    epochs = primary["epochs"]
    counts = {k: int(epochs[k]) for k in ("total", "hw", "ec", "sw", "hybrid") if k in epochs}

    def rel(path: Path) -> str:
        return str(path.relative_to(root))

    run = Run(str(folder.relative_to(root)), [rel(p) for p, _ in results], version, counts)
    hashes = [str((r.get("model") or {}).get("hash") or "").lower() for _, r in results]
    run.model_hash = next((h for h in hashes if h.startswith("0x") and len(h) == 34), None)
    run.options = _options(results)
    hybrid_ops = _hybrid_ops_from_c_info(infos)
    if texts:
        for line, epoch, kind, detail in _text_rows(primary_path):
            op = _op_type(detail) if detail else hybrid_ops.get(epoch, "?")
            run.observations.append(Observation(version, op, kind, rel(primary_path), line,
                                                epoch, 1, None, None, detail))
    else:
        lines = primary_path.read_text(encoding="utf-8", errors="replace").splitlines()
        for entry in epochs.get("list", []):
            if entry.get("kind") not in ("sw", "hybrid") or "id" not in entry:
                continue
            for op in entry.get("ops") or ["?"]:
                run.observations.append(Observation(
                    version, _op_type(op), entry["kind"], rel(primary_path),
                    _json_line(lines, entry["id"]), entry["id"], 1, None, None, op))
    return run


def _options(results: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    for _, result in results:
        args = (result.get("tool") or {}).get("arguments") or result.get("options")
        if isinstance(args, str):
            return args.split()
        if isinstance(args, list):
            return [str(a) for a in args]
    return []


def _hybrid_ops_from_c_info(infos: list[tuple[Path, dict[str, Any]]]) -> dict[int, str]:
    """Epoch id -> the software operator of a hybrid epoch, from a c_info of the same run
    (2.x text reports print hybrid epochs as a bare ``??``)."""
    for _, result in infos:
        ops = {e["id"]: e["ops"][0] for e in result["epochs"].get("list", [])
               if e.get("kind") == "hybrid" and e.get("ops") and "id" in e}
        if ops:
            return ops
    return {}


# Which deployed keys take a printed operator's software/hybrid epochs first: those
# software by their semantics, then the front end's, then the operator as such.
def _key_rank(key: str) -> int:
    return 0 if "(float)" in key else 1 if "(activations)" in key else 2 if "+" in key else 3


def attach_model(run: Run, model: Path, root: Path) -> None:
    """Tie the run's observations to the model's deployed operators.

    A printed operator's software and hybrid epochs go to the model's deployed operators
    of that name (the float and front-end ones first: they are software by their
    semantics); what the table did not list ran in hardware (one HW observation per
    deployed key, carrying the count). Where a key's count equals its observations,
    each observation is tied to its node in graph order.
    """
    from ..model.files import open_graph
    from .frontend import deployed_ops

    run.model_file = str(model.relative_to(root))
    run.model_md5 = digest = _md5(model)
    ops = [d for d in deployed_ops(open_graph(model)) if d.form != "none"]
    deployed: Counter[str] = Counter()
    nodes: dict[str, list[str]] = {}
    keys_of: dict[str, list[str]] = {}
    for op in ops:
        deployed[op.key] += op.count
        nodes.setdefault(op.key, []).extend([op.name] * op.count)
        keys_of.setdefault(op.tool_op, [])
        if op.key not in keys_of[op.tool_op]:
            keys_of[op.tool_op].append(op.key)
    for keys in keys_of.values():
        keys.sort(key=_key_rank)
    taken: Counter[str] = Counter()
    assigned: list[tuple[Observation, str]] = []
    for obs in run.observations:
        base = obs.op.replace("(float)", "")
        candidates = [k for k in keys_of.get(base, [])
                      if "(float)" in k or "(float)" not in obs.op]
        key = next((k for k in candidates if taken[k] < deployed[k]), obs.op)
        taken[key] += 1
        assigned.append((obs, key))
    tied: list[Observation] = []
    cursor: Counter[str] = Counter()
    for obs, key in assigned:
        node = None
        if taken[key] == deployed.get(key, 0):
            node = nodes[key][cursor[key]]
            cursor[key] += 1
        tied.append(Observation(obs.version, key, obs.kind, obs.file, obs.line, obs.epoch,
                                obs.count, digest, node, obs.detail))
    summary = next((f for f in run.files if not f.endswith(".json")), run.files[0])
    line = _summary_line(root / summary)
    for key, total in sorted(deployed.items()):
        rest = total - taken.get(key, 0)
        if rest > 0:
            tied.append(Observation(run.version, key, "hw", summary, line, None, rest, digest,
                                    None, f"{total} deployed, {taken.get(key, 0)} listed "
                                    f"SW/hybrid"))
    run.observations = tied


def load_runs(root: Path | str) -> list[Run]:
    """:func:`read_runs` with each run's model attached where the tree holds it."""
    root = Path(root)
    runs = read_runs(root)
    models = model_index(root)
    for run in runs:
        model = models.get(run.model_hash or "")
        run.model_match = "md5" if model is not None else ""
        if model is None and run.model_hash is None:
            model = _case_model(root, root / run.folder)
            run.model_match = "folder" if model is not None else ""
        if model is not None:
            attach_model(run, model, root)
    return runs


def _case_model(root: Path, folder: Path) -> Path | None:
    """The one user model of the nearest enclosing case folder, for a run whose files
    record no model hash (a 2.2 text report alone; the CubeMX validate c_info)."""
    while folder != root and root in folder.parents:
        found = [p for p in folder.iterdir()
                 if p.suffix in _MODEL_SUFFIXES and p.is_file() and "_OE_" not in p.name]
        if len(found) == 1:
            return found[0]
        if found:
            return None
        folder = folder.parent
    return None


def runs_json(runs: list[Run]) -> list[dict[str, Any]]:
    """The runs as the table records them (folder, files, version, counts, model)."""
    return [{"folder": r.folder, "files": r.files, "version": r.version, "counts": r.counts,
             "model_hash": r.model_hash, "model_file": r.model_file,
             "model_match": r.model_match} for r in runs]


__all__ = ["Observation", "Run", "attach_model", "load_runs", "model_index",
           "read_runs", "runs_json"]

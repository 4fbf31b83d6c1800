"""The report folder: model, profile, runs, figures, bisection, divergence, post, zip.

Layout (every path relative to the folder)::

    POST.md               the forum post
    case.toml             the case as the corpus has it
    model/<file>          the model; a record-only case: model/SOURCE.md (sha256, source)
    profile/              the case's Neural-ART profile (its one entry) and mpool
    commands.txt          the exact command lines, run from the folder
    runs/<version>/       each version's run made here: st_ai_output, st_ai_ws, stedgeai.log
    figures.json          each version's figures and the expectations they miss
    bisect.json           the options bisection, when asked
    board/, divergence.json   the board dump and its first diverging epoch, when given
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..case.model import Case, NeuralArt, file_sha256
from ..errors import StedgeError, ToolchainError
from ..result import Result, flat_metrics
from .paths import absolute_paths, prune, relative_argv, rewrite_text
from .records import Report, VersionRun

#: a version's stage runner: (case, workdir) -> Result
RunStage = Callable[[Case, Path], Result]


def _place_case(case: Case, out: Path) -> Case:
    """Copy the model (or describe it) and the profile into ``out``; the case as it runs
    from there."""
    from ..tool.runner import load_loose_json

    (out / "model").mkdir(parents=True)
    shutil.copyfile(case.path, out / "case.toml")
    model = out / "model" / case.model.name
    if case.record_only:
        src = case.model_source
        assert src is not None
        digest = src.sha256 or (file_sha256(case.model) if case.model.is_file() else None)
        (out / "model" / "SOURCE.md").write_text(
            f"# {src.file}\n\nNot included (a record-only case: the corpus names it, it does "
            f"not ship it).\n\n- sha256: {digest or 'not stated'}\n- md5: {src.md5 or 'not stated'}"
            f"\n- size: {src.size or 'not stated'} bytes\n- public source: {src.source}\n"
            f"- licence: {src.licence}\n\nPut the file at model/{case.model.name} to run the "
            "commands.\n", encoding="utf-8")
        if case.model.is_file():
            shutil.copyfile(case.model, model)  # only to run here; removed before shipping
    else:
        shutil.copyfile(case.model, model)
    placed = replace(case, model=model)
    if case.memory_pool is not None:
        (out / "profile").mkdir(exist_ok=True)
        shutil.copyfile(case.memory_pool, out / "profile" / case.memory_pool.name)
        placed = replace(placed, memory_pool=out / "profile" / case.memory_pool.name)
    art = case.neural_art
    if art is not None and art.file is not None:
        (out / "profile").mkdir(exist_ok=True)
        entry = dict((load_loose_json(art.file).get("Profiles") or {}).get(art.profile) or {})
        for key in ("memory_pool", "memory_desc"):
            value = entry.get(key)
            source = art.mpool if key == "memory_pool" and art.mpool else (
                art.file.parent / value if isinstance(value, str) and value.strip() else None)
            if source is not None and Path(source).is_file():
                shutil.copyfile(source, out / "profile" / Path(source).name)
                entry[key] = f"./{Path(source).name}"
        derived = out / "profile" / "neural_art.json"
        derived.write_text(json.dumps({"Globals": {}, "Profiles": {art.profile: entry}},
                                      indent=2) + "\n", encoding="utf-8")
        placed = replace(placed, neural_art=NeuralArt(art.profile, derived, None))
    return placed


def _run_version(case: Case, stage: str, version: str, run: RunStage, install: Any,
                 out: Path, board_desc: str | None) -> VersionRun:
    from ..tool.runner import build_argv
    from ..verdict.expect import check, summarize_miss

    workdir = out / "runs" / version
    argvs = []
    if stage == "validate-target":
        argvs.append(build_argv(case, "generate", install, workdir))
    argvs.append(build_argv(case, stage, install, workdir, board_desc=board_desc or "DESC"))
    record = VersionRun(version, f"run here with stedgeai {version}",
                        commands=[relative_argv(a, out, install.root) for a in argvs],
                        outputs=f"runs/{version}")
    try:
        result = run(case, workdir)
    except ToolchainError as exc:
        record.error = exc.short()
        return record
    record.figures = {k: v for k, v in flat_metrics(result).items() if ":" not in k}
    record.misses = [summarize_miss(m) for m in check(case.bounds_for(stage), record.figures)]
    record.tool = dict(result.get("tool") or {})
    record.device = (result.get("validation") or {}).get("device")
    return record


def make_report(case: Case, stage: str, out: Path, *, failing: tuple[str, Any, RunStage],
                passing: tuple[str, Any, RunStage] | None = None,
                stored_passing: VersionRun | None = None, board_desc: str | None = None,
                bisect: bool = False, dump: Path | None = None) -> Report:
    """Write the report folder and its zip.

    :param failing: (version, install, runner) of the version that fails.
    :param passing: the same for a version that passes, when installed.
    :param stored_passing: the passing version's stored figures, when not installed.
    :param dump: a board dump (``stedge board-run``) of the failing build.
    :raises StedgeError: ``out`` exists and is not empty, or an absolute path would remain.
    """
    if out.exists() and any(out.iterdir()):
        raise StedgeError(f"{out}: exists and is not empty (give a new --out)")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    placed = _place_case(case, out)
    version, install, runner = failing
    failed = _run_version(placed, stage, version, runner, install, out, board_desc)
    other = stored_passing
    if passing is not None:
        other = _run_version(placed, stage, passing[0], passing[2], passing[1], out, board_desc)
    bisected = _bisect(placed, stage, version, runner, install, out) if bisect else None
    divergence = _diverge(placed, out, dump, failed) if dump is not None else None
    from .post import write_post

    installs = [install.root] + ([passing[1].root] if passing is not None else [])
    (out / "commands.txt").write_text(_commands_text(failed, other), encoding="utf-8")
    (out / "figures.json").write_text(json.dumps(
        {"case": case.name, "stage": stage, "failing": failed.to_json(),
         "passing": other.to_json() if other else None}, indent=2, default=str) + "\n",
        encoding="utf-8")
    if case.record_only:
        (out / "model" / case.model.name).unlink(missing_ok=True)
    dropped = prune(out)
    report = Report(out, out.parent / (out.name + ".zip"), case, stage, failed, other, bisected,
                    divergence, dropped)
    write_post(report)
    for path in out.rglob("*"):
        if path.is_file():
            rewrite_text(path, out, {str(out): ".", **{str(r): "<stedgeai>" for r in installs}})
    left = absolute_paths(out)
    if left:
        raise StedgeError(f"{out}: absolute paths of this machine remain, not shipped: "
                          + "; ".join(left[:5]))
    archive = shutil.make_archive(str(out), "zip", root_dir=out.parent, base_dir=out.name)
    report.zip = Path(archive)
    return report


def _commands_text(failed: VersionRun, other: VersionRun | None) -> str:
    import shlex

    lines = ["# Run from this folder. <stedgeai> is the install's path; DESC the board's",
             "# serial:PORT:BAUD (the validation firmware flashed with the generated network).",
             ""]
    for run in (failed, other):
        if run is None or not run.commands:
            continue
        lines.append(f"# stedgeai {run.version}")
        lines += [shlex.join(argv) for argv in run.commands] + [""]
    return "\n".join(lines)


def _bisect(case: Case, stage: str, version: str, runner: RunStage, install: Any,
            out: Path) -> dict[str, Any]:
    from ..bisect.search import bisect_stage

    work = out / "bisect-runs"
    report = bisect_stage(case, stage, version, runner, work, install_root=install.root)
    data = report.to_json()
    for run in data["runs"]:
        run["workdir"] = None  # the runs' folders are not kept: their figures are
    shutil.rmtree(work, ignore_errors=True)
    (out / "bisect.json").write_text(json.dumps(data, indent=2, default=str) + "\n",
                                     encoding="utf-8")
    return data


def _diverge(case: Case, out: Path, dump: Path, failed: VersionRun) -> dict[str, Any]:
    from ..errors import OracleError
    from ..oracle.accuracy.epoch_compare import diverge_epochs

    board = out / "board"
    board.mkdir()
    copy = board / dump.name
    shutil.copyfile(dump, copy)
    if dump.with_suffix(".json").is_file():
        side = json.loads(dump.with_suffix(".json").read_text(encoding="utf-8"))
        side.pop("c_info", None)
        side["model"] = f"model/{case.model.name}"
        copy.with_suffix(".json").write_text(json.dumps(side, indent=1) + "\n",
                                             encoding="utf-8")
    infos = sorted((out / "runs" / failed.version / "st_ai_output").glob("*c_info.json"))
    summary: dict[str, Any] = {"dump": f"board/{dump.name}"}
    try:
        if not infos:
            raise OracleError("the failing run wrote no c_info.json to map the epochs with")
        result = diverge_epochs(case.model if case.model.is_file() else None, copy, infos[0])
        first = result["first_divergent"]
        summary.update(
            c_info=infos[0].relative_to(out).as_posix(), compared=result["compared"],
            first_diverging_epoch=None if first is None else first["epoch"],
            describe=None if first is None else first["describe"],
            kind=None if first is None else first["kind"],
            model_nodes=[] if first is None else first["model_nodes"],
            cos=None if first is None else first["local_cos"] or first["cos"],
            unchecked_before=result["unchecked_before"])
    except (OracleError, StedgeError) as exc:
        summary["error"] = str(exc)
    (out / "divergence.json").write_text(json.dumps(summary, indent=2, default=str) + "\n",
                                         encoding="utf-8")
    return summary

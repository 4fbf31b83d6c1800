"""Run one stage of one case with one install, and turn its outputs into a Result."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ..case.model import Case
from ..errors import ReportParseError, ToolchainError
from ..result import Result
from .discovery import Install, ToolRun, run_tool, tail

_STAGE_COMMAND = {
    "generate": "generate",
    "analyze": "analyze",
    "validate-host": "validate",
    "validate-target": "validate",
}
# Strings first, so "//" inside a value ("//server/share/x.mpool") is kept; then comments
# and trailing commas, which ST's tools accept and json does not.
_STRING = r'"(?:\\.|[^"\\])*"'
_COMMENTS_RE = re.compile(_STRING + r"|//[^\n]*|/\*.*?\*/", re.DOTALL)
_TRAILING_COMMAS_RE = re.compile(_STRING + r"|,(?=\s*[}\]])")


@dataclass(frozen=True)
class StageRefusal:
    """A refusal the tool documents: ``stage`` does not apply to the target, so the item skips."""

    stages: tuple[str, ...]
    line: str  # the whole error line, ``E<nnn>(Kind): message``
    source: str  # where the refusal is documented or was seen


# Only these refusals skip an item. Any other error, including other "not supported" lines
# such as "E102(CliArgumentError): --address/--copy-weights-at arguments are not supported
# with the 'st-ai' c-api." (a misconfigured case), fails it.
STAGE_REFUSALS: tuple[StageRefusal, ...] = (
    StageRefusal(
        stages=("validate-host",),
        line="E102(CliArgumentError): Validation on host is not supported for devices based "
        "on Arm Cortex M55/M85 core.",
        source="stedgeai 4.x for stm32n6 (../shared/stedgeai-formats.md 2.4, a public note)",
    ),
)


def stage_refusal(stage: str, reason: str | None) -> StageRefusal | None:
    """The documented refusal of ``stage`` that ``reason`` (the tool's error line) is, if any."""
    text = " ".join((reason or "").split())
    for refusal in STAGE_REFUSALS:
        if stage in refusal.stages and text == refusal.line:
            return refusal
    return None


@dataclass
class StageRun:
    """What running a stage produced: the Result and how the tool run went."""

    result: Result
    tool: ToolRun


def build_argv(
    case: Case,
    stage: str,
    install: Install,
    workdir: Path,
    *,
    board_desc: str | None = None,
) -> list[str]:
    """The ``stedgeai`` command line of ``stage`` for ``case``, outputs under ``workdir``."""
    command = _STAGE_COMMAND[stage]
    argv = [
        str(install.executable),
        command,
        "--model",
        str(case.model),
        "--target",
        case.target,
        "--name",
        case.c_name,
        "--output",
        str(workdir / "st_ai_output"),
        "--workspace",
        str(workdir / "st_ai_ws"),
    ]
    if case.neural_art is not None:
        argv += ["--st-neural-art", neural_art_argument(case, workdir)]
    if case.memory_pool is not None:
        argv += ["--memory-pool", str(case.memory_pool)]
    if stage == "validate-host":
        argv += ["--mode", "host"]
    elif stage == "validate-target":
        if not board_desc:
            raise ToolchainError(argv, reason="validate-target needs a board (--stedge-board)")
        argv += ["--mode", "target", "--desc", board_desc]
    argv += list(case.options)
    return argv


def neural_art_argument(case: Case, workdir: Path) -> str:
    """``PROFILE[@FILE]`` for ``--st-neural-art``.

    When the case overrides the profile's mpool, a copy of the profile pointing at the
    case's mpool is written into the item's own folder, so the corpus is never edited.
    The tool resolves a profile's file paths against the profile's folder (the N6 reports'
    ``Compiler arguments`` line shows ``./my_mpools/x.mpool`` of ``N6_scripts/user_neuralart.json``
    loaded as ``N6_scripts/my_mpools/x.mpool``), and every real profile writes them relative
    (``./my_mpools/...``): the derived profile does the same, with the files copied beside it.
    """
    art = case.neural_art
    assert art is not None
    if art.file is None:
        return art.profile
    if art.mpool is None:
        return f"{art.profile}@{art.file}"
    profiles = load_loose_json(art.file)
    chosen = (profiles.get("Profiles") or {}).get(art.profile)
    if not isinstance(chosen, dict):
        known = ", ".join(sorted(profiles.get("Profiles") or {})) or "none"
        raise ToolchainError(
            [], reason=f"{art.file}: no profile {art.profile!r} in [Profiles]; found: {known}"
        )
    chosen = dict(chosen)
    workdir.mkdir(parents=True, exist_ok=True)
    chosen["memory_pool"] = _copy_beside(art.mpool, workdir)
    desc = chosen.get("memory_desc")
    if isinstance(desc, str) and desc.strip() and not _is_absolute(desc):
        source = art.file.parent / desc
        if not source.is_file():
            raise ToolchainError(
                [], reason=f"{art.file}: [Profiles.{art.profile}.memory_desc] {desc!r}: "
                f"no such file {source} (paths are relative to the profile file)"
            )
        chosen["memory_desc"] = _copy_beside(source, workdir)
    derived = workdir / "neural_art.json"
    derived.write_text(
        json.dumps({"Globals": profiles.get("Globals", {}), "Profiles": {art.profile: chosen}}, indent=2),
        encoding="utf-8",
    )
    return f"{art.profile}@{derived}"


_PROFILE_FILES = "my_mpools"


def _copy_beside(source: Path, workdir: Path) -> str:
    """Copy ``source`` into ``workdir/my_mpools/`` and return its path relative to ``workdir``."""
    folder = workdir / _PROFILE_FILES
    try:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / source.name)
    except OSError as exc:
        raise ToolchainError([], reason=f"cannot copy {source} beside the profile: {exc}") from None
    return f"./{_PROFILE_FILES}/{source.name}"


def _is_absolute(path: str) -> bool:
    # a POSIX, Windows drive or UNC path is absolute wherever the profile was written
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def load_loose_json(path: Path) -> dict[str, Any]:
    """Read a Neural-ART profile file: JSON with ``//`` comments and trailing commas, as ST's
    tools accept."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for pattern in (_COMMENTS_RE, _TRAILING_COMMAS_RE):
        text = pattern.sub(_keep_strings, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportParseError(path, f"not a Neural-ART profile file: {exc.msg}", exc.lineno) from None
    if not isinstance(data, dict):
        raise ReportParseError(path, "not a Neural-ART profile file: expected a JSON object")
    return data


def _keep_strings(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else ""


def run_stage(
    case: Case,
    stage: str,
    install: Install,
    workdir: Path,
    *,
    timeout: float,
    board_desc: str | None = None,
    env: dict[str, str] | None = None,
) -> StageRun:
    """Run ``stage`` and parse what the tool wrote.

    Raises :class:`ToolchainError` (with the command line, the exit status and the last
    lines of output) when the tool fails, hangs, or writes nothing readable.
    """
    from ..parsers import extract_diagnostics, parse_runs

    workdir.mkdir(parents=True, exist_ok=True)
    argv = build_argv(case, stage, install, workdir, board_desc=board_desc)
    run = run_tool(argv, cwd=workdir, timeout=timeout, env=env)
    diagnostics = extract_diagnostics(run.output)
    if run.returncode != 0:
        errors = [d for d in diagnostics if d.get("level") == "error"]
        raise ToolchainError(
            argv,
            returncode=run.returncode,
            output_tail=tail(run.output),
            reason=_diagnostic_text(errors[0]) if errors else None,
        )
    output_dir = workdir / "st_ai_output"
    try:
        # A validate-target folder also holds the generate that built the firmware: this
        # item's Result is the run of the command it ran, never a merge of the two.
        runs = parse_runs(output_dir)
        command = argv[1] if len(argv) > 1 else ""
        result = next((r for r in reversed(runs) if r.get("command") == command), runs[-1])
    except ReportParseError as exc:
        raise ToolchainError(
            argv,
            returncode=run.returncode,
            output_tail=tail(run.output),
            reason=f"unreadable output: {exc}",
        ) from None
    known = {(d.get("code"), d.get("message")) for d in result.get("diagnostics", [])}
    result.setdefault("diagnostics", []).extend(
        d for d in diagnostics if (d.get("code"), d.get("message")) not in known
    )
    tool = result.setdefault("tool", {})
    tool.setdefault("version", install.version)
    tool.setdefault("build", install.build)
    if install.revision:
        tool.setdefault("revision", install.revision)
    if tool.get("version") != install.version:
        result["diagnostics"].append(
            {
                "level": "warning",
                "code": None,
                "kind": "VersionMismatch",
                "message": f"outputs say version {tool.get('version')}, install says {install.version}",
            }
        )
    result["stage"] = stage
    return StageRun(result=result, tool=run)


def _diagnostic_text(diag: dict[str, Any]) -> str:
    code, kind, message = diag.get("code"), diag.get("kind"), diag.get("message", "")
    if code and kind:
        return f"{code}({kind}): {message}"
    return f"{kind}: {message}" if kind else str(message)

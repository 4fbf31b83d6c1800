"""Boards in a pytest session: options, the validate-target stage, board locks.

A validate-target item generates the case's network (without a board), takes one of the
``--stedge-board`` boards for itself (a file lock per port, shared by every process of the
session, xdist workers included: see :mod:`pytest_stedge.board.lock`), loads the network (hook ``pytest_stedge_load_board``),
checks that the validation firmware answers and holds that network, runs
``stedgeai validate --mode target``, and with ``--stedge-per-layer`` runs one per-layer
inference with the native client to name the first layer that diverges from the reference.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_stedge.errors import BoardError, OracleError, ToolchainError

from .errors import (
    BoardBusyError,
    BoardCommunicationError,
    BoardDisconnectedError,
    BoardNetworkMismatchError,
    BoardNotFoundError,
    BoardNotValidationFirmwareError,
    BoardProtocolVersionError,
    BoardTimeoutError,
)
from .lock import acquire_board, lock_dir
from .specs import BoardSpec, parse_board_spec, resolve_board_spec

if TYPE_CHECKING:
    from ..case.model import Case
    from ..tool.discovery import Install
    from ..tool.runner import StageRun

LOADER_PLACEHOLDERS = ("workdir", "output", "port", "baud", "model", "name", "desc")
_POLL = 0.1  # seconds between two sync attempts on a board still booting
SETTLE_S = 2.0  # how long a freshly loaded board may take to answer sync


class BoardLoaderError(BoardError):
    """The loader step (N6 loader script or the ini ``stedge_board_loader``) failed."""


# --- hooks ----------------------------------------------------------------------------
# Plain (not tryfirst): it beats the trylast built-in, and a conftest may still take over.
@pytest.hookimpl
def pytest_stedge_run_stage(
    config: pytest.Config,
    case: Case,
    stage: str,
    install: Install,
    workdir: Path,
    timeout: float,
    board_desc: str | None,
) -> StageRun | None:
    """Run validate-target on a board of this session; other stages are not ours."""
    if stage != "validate-target":
        return None
    return run_validate_target(config, case, install, workdir, timeout)


@pytest.hookimpl(trylast=True)
def pytest_stedge_load_board(
    config: pytest.Config, case: Case, install: Install, workdir: Path, board: str
) -> bool:
    """The ini ``stedge_board_loader`` command if set, else the install's N6 loader.

    Returns False when there is nothing to run (a target other than the N6 without a
    loader command): the board must then already hold the network.
    """
    from ..state import get_state

    spec = parse_board_spec(board)
    timeout = get_state(config).settings.timeout(case)  # flashing counts as part of the stage
    command = str(config.getini("stedge_board_loader") or "").strip()
    if command:
        argv = loader_argv(command, case=case, workdir=workdir, spec=spec)
        run_loader(argv, cwd=workdir, timeout=timeout)
        return True
    script = install.root / "scripts" / "N6_scripts" / "n6_loader.py"
    if case.target != "stm32n6":
        return False
    if not script.is_file():
        raise BoardLoaderError(
            f"{script} is missing (stedgeai {install.version} at {install.root}); set ini "
            "stedge_board_loader to the command that flashes the board")
    cfg = write_n6_loader_config(script.parent / "config_n6l.json", case, workdir)
    run_loader([sys.executable, str(script), "--n6-loader-config", str(cfg)], cwd=workdir,
               timeout=timeout)
    return True


# --- the stage ------------------------------------------------------------------------
def run_validate_target(
    config: pytest.Config, case: Case, install: Install, workdir: Path, timeout: float
) -> StageRun:
    """generate, take a board, load, check the firmware, validate, (per-layer); the board
    is released whatever happens. Board failures raise :class:`ToolchainError`."""
    from ..tool.runner import build_argv, run_stage

    texts = list(config.getoption("stedge_board") or [])
    stage_argv = [str(install.executable), "validate", "--mode", "target"]
    try:
        boards = resolve_boards(texts)
    except BoardError as exc:
        raise board_failure(stage_argv, exc) from exc
    run_stage(case, "generate", install, workdir, timeout=timeout)
    owner = f"{case.name} {workdir.name} pid {os.getpid()} " + os.environ.get(
        "PYTEST_XDIST_WORKER", "")
    try:
        lock = acquire_board([s for s, _ in boards], lock_dir(config), owner=owner,
                             wait=_float_ini(config, "stedge_board_wait", 1800.0))
    except BoardError as exc:
        raise board_failure(stage_argv, exc) from exc
    try:
        spec = lock.spec
        why = {s.text: w for s, w in boards}.get(spec.text, "")
        argv = build_argv(case, "validate-target", install, workdir, board_desc=spec.desc)
        header = header_bytes(install.version)
        try:
            loaded = config.hook.pytest_stedge_load_board(
                config=config, case=case, install=install, workdir=workdir, board=spec.desc)
            firmware = check_board(spec, case, workdir, header)
        except BoardError as exc:
            raise board_failure(argv, exc) from exc
        stage_run = run_stage(case, "validate-target", install, workdir, timeout=timeout,
                              board_desc=spec.desc)
        result = stage_run.result
        diags = result.setdefault("diagnostics", [])
        result["board"] = {"port": spec.port, "baud": spec.baud, "chosen_because": why,
                           **firmware}
        if why:
            diags.append(_diag("info", "BoardChosen", f"auto chose {spec.port}: {why}"))
        if not loaded:
            diags.append(_diag("info", "BoardNotLoaded", f"no loader for target {case.target}"
                               f": {spec.port} already held network {case.c_name!r}"))
        if config.getoption("stedge_per_layer"):
            try:
                per_layer(result, spec, case, workdir, header, timeout)
            except BoardError as exc:
                raise board_failure(argv, exc) from exc
        return stage_run
    finally:
        lock.release()


def resolve_boards(texts: Sequence[str]) -> list[tuple[BoardSpec, str]]:
    """Parse the board specs and pin ``auto`` to a port: [(spec, why it was chosen)]."""
    if not texts:
        raise BoardNotFoundError("validate-target needs a board: give --stedge-board")
    out = []
    for text in texts:
        spec, why = resolve_board_spec(parse_board_spec(text))
        out.append((spec, why))
    return out


def board_failure(argv: Sequence[str], exc: BoardError) -> ToolchainError:
    """The item's failure for a board error: what kind, then the client's message."""
    kinds: list[tuple[type[BoardError], str]] = [
        (BoardNotValidationFirmwareError, "not the validation firmware"),
        (BoardProtocolVersionError, "unknown validation protocol version"),
        (BoardNetworkMismatchError, "wrong network on the board"),
        (BoardBusyError, "board busy"),
        (BoardNotFoundError, "no board"),
        (BoardTimeoutError, "board timed out"),
        (BoardDisconnectedError, "board disconnected"),
        (BoardCommunicationError, "board link error"),
        (BoardLoaderError, "board loader failed"),
    ]
    label = next((text for cls, text in kinds if isinstance(exc, cls)), "board error")
    return ToolchainError(argv, reason=f"{label}: {exc}")


def header_bytes(version: str) -> int:
    """Packet header width of the validation firmware a ``stedgeai`` version builds."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] + [0, 0]
    return 1 if (parts[0], parts[1]) < (2, 2) else 2


def check_board(spec: BoardSpec, case: Case, workdir: Path, header: int, *,
                settle: float = SETTLE_S) -> dict[str, Any]:
    """Sync with the board and check it holds the case's network; what it says it is.

    A board just flashed may still be booting, or re-enumerating its USB port: sync is
    tried again for ``settle`` seconds before the board is declared not to answer.
    """
    from .client import BoardClient

    deadline = time.monotonic() + settle
    while True:
        client = BoardClient(spec, header_bytes=header)
        try:
            sync = client.connect()
            system = client.system_info()
            net = client.check_network(name=case.c_name, signature=generated_signature(workdir))
            return {"device": system.device, "protocol": sync.version, "runtime": sync.runtime,
                    "network": net.name}
        except (BoardNotValidationFirmwareError, BoardNotFoundError, BoardDisconnectedError):
            if time.monotonic() >= deadline:
                raise
        finally:
            client.close()
        time.sleep(_POLL)


def generated_signature(workdir: Path) -> str | None:
    """The network signature ``generate`` wrote in ``*_c_info.json`` (None if unknown)."""
    for path in sorted((workdir / "st_ai_output").glob("*c_info.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            value = data.get("signature") or data.get("network_signature")
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


# --- loader ---------------------------------------------------------------------------
def loader_argv(command: str, *, case: Case, workdir: Path, spec: BoardSpec) -> list[str]:
    """Split the ini command like a POSIX shell would (no shell runs it) and fill in the
    placeholders; unknown ``{...}`` words are left as they are."""
    values = {"workdir": str(workdir), "output": str(workdir / "st_ai_output"),
              "port": str(spec.port or ""), "baud": str(spec.baud), "model": str(case.model),
              "name": case.c_name, "desc": spec.desc}
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise BoardLoaderError(f"ini stedge_board_loader {command!r}: {exc}") from None
    out = []
    for word in words:
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        out.append(word)
    return out


def run_loader(argv: Sequence[str], *, cwd: Path, timeout: float) -> None:
    """Run the loader (output kept in ``cwd/board-loader.log``); raise
    :class:`BoardLoaderError` naming the command, its exit status and its last lines."""
    from ..tool.discovery import tail

    cwd.mkdir(parents=True, exist_ok=True)
    log = cwd / "board-loader.log"
    try:
        proc = subprocess.run(list(argv), cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode("utf-8", "replace")
        log.write_text(text, encoding="utf-8")
        raise BoardLoaderError(f"{shlex.join(argv)} timed out after {timeout:g} s; last "
                               f"lines:\n{tail(text)}") from None
    except OSError as exc:
        raise BoardLoaderError(f"{shlex.join(argv)} cannot start: {exc}") from None
    text = proc.stdout.decode("utf-8", "replace")
    log.write_text(text, encoding="utf-8")
    if proc.returncode != 0:
        raise BoardLoaderError(f"{shlex.join(argv)} exited with status {proc.returncode}; "
                               f"last lines:\n{tail(text)}")


def write_n6_loader_config(template: Path, case: Case, workdir: Path) -> Path:
    """``workdir/config_n6l.json``: the install's config (compiler, project, programmer
    paths) pointed at this item's generated ``network.c``."""
    cfg: dict[str, Any] = {}
    if template.is_file():
        try:
            loaded = json.loads(template.read_text(encoding="utf-8", errors="replace"))
            cfg = loaded if isinstance(loaded, dict) else {}
        except ValueError as exc:
            raise BoardLoaderError(f"{template}: not valid JSON ({exc})") from None
    cfg["network.c"] = str(workdir / "st_ai_output" / f"{case.c_name}.c")
    path = workdir / "config_n6l.json"
    path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return path


# --- per-layer ------------------------------------------------------------------------
def per_layer(result: dict[str, Any], spec: BoardSpec, case: Case, workdir: Path,
              header: int, timeout: float) -> None:
    """One per-layer inference with data: timings into ``board_timings`` and
    ``extra_metrics``, the divergence search into ``divergence`` and a diagnostic."""
    from .dump_run import run_dump

    dump = workdir / "board-dump.npz"
    nodes = run_dump(case.model, spec, out=dump, per_layer=True, seed=42, name=case.c_name,
                     header_bytes=header, timeout=timeout).nodes
    result["board_timings"] = [{"name": n["name"], "duration_ms": n["duration_ms"]}
                               for n in nodes]
    extra = result.setdefault("extra_metrics", {})
    for n in nodes:
        extra[f"board_ms:{n['name']}"] = n["duration_ms"]
    owner = {t: n["name"] for n in nodes for t in n.get("tensors", [])}
    diags = result.setdefault("diagnostics", [])
    # ATONN firmware records are unnamed epochs ("epoch_<n>" from their id): map them
    # through the c_info; records named after ONNX nodes compare by name below.
    epochs = any(re.fullmatch(r"epoch_\d+", n["name"]) for n in nodes)
    c_info = epoch_c_info(workdir) if case.target == "stm32n6" and epochs else None
    if c_info is not None:
        per_epoch(result, case.model, dump, c_info)
        return
    from pytest_stedge.oracle.accuracy.first_node import diverge

    try:
        report = diverge(case.model, dump)
    except OracleError as exc:
        diags.append(_diag("warning", "DivergenceUnavailable", f"per-layer dump {dump}: {exc}"))
        return
    table = [{**{k: _finite(v) for k, v in row.items()},
              "board_node": owner.get(row["tensor"], row["node"])} for row in report["rows"]]
    first = report.get("first_divergent")
    summary: dict[str, Any] = {"first_diverging": None, "table": table, "dump": str(dump)}
    if first is not None:
        name = owner.get(first["tensor"], first["node"])
        summary.update(first_diverging=name, tensor=first["tensor"], onnx_node=first["node"],
                       cos=_finite(first["cos"]), l2r=_finite(first["l2r"]))
        cos = f"cos {first['cos']:.2f}" if _finite(first["cos"]) is not None else "cos n/a"
        diags.append(_diag("warning", "FirstDivergence",
                           f"first diverging epoch/node: {name} ({cos} against the reference;"
                           f" ONNX node {first['node']}, tensor {first['tensor']})"))
    result["divergence"] = summary


def epoch_c_info(workdir: Path) -> Path | None:
    """The c_info generate wrote, when it holds Neural-ART epochs and buffers."""
    for path in sorted((workdir / "st_ai_output").glob("*c_info.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            continue
        nodes = ((data.get("graphs") or [{}])[0] or {}).get("nodes") if isinstance(
            data, dict) else None
        if data.get("buffers") and any(str(n.get("name", "")).startswith("epoch_")
                                       for n in nodes or [] if isinstance(n, dict)):
            return path
    return None


def per_epoch(result: dict[str, Any], model: Path, dump: Path, c_info: Path) -> None:
    """The N6 divergence search: records mapped through the c_info's epochs and buffers;
    the first diverging epoch into ``divergence`` and a FirstDivergence diagnostic."""
    from pytest_stedge.oracle.accuracy.epoch_compare import diverge_epochs

    diags = result.setdefault("diagnostics", [])
    try:
        report = diverge_epochs(model, dump, c_info)
    except OracleError as exc:
        diags.append(_diag("warning", "DivergenceUnavailable", f"per-layer dump {dump}: {exc}"))
        return
    keys = ("epoch", "kind", "buffer", "tensor", "cos", "l2r", "rmse", "ok", "record")
    table = [{**{k: _finite(row.get(k)) for k in keys}, "board_node": row["record"],
              "node": ", ".join(row["model_nodes"]), "op_type": row["kind"]}
             for row in report["rows"]]
    summary: dict[str, Any] = {"first_diverging": None, "table": table, "dump": str(dump),
                               "c_info": str(c_info), "per_epoch": True,
                               "unmapped": report["unmapped"][:50]}
    first = report["first_divergent"]
    if first is not None:
        summary.update(first_diverging=first["epoch"], kind=first["kind"],
                       describe=first["describe"], model_nodes=first["model_nodes"],
                       tensor=first["tensor"], buffer=first["buffer"],
                       cos=_finite(first["cos"]), l2r=_finite(first["l2r"]))
        nodes = ", ".join(first["model_nodes"]) or "none of the model's"
        cos = f"cos {first['cos']:.2f}" if _finite(first["cos"]) is not None else "cos n/a"
        diags.append(_diag("warning", "FirstDivergence",
                           f"first diverging epoch: {first['describe']} ({cos} against the "
                           f"reference; model nodes {nodes}; buffer {first['buffer']})"))
    result["divergence"] = summary


def divergence_lines(result: dict[str, Any]) -> list[str]:
    """Lines for an item's failure message: where the per-layer search found the first
    divergence (empty when none ran or none diverged)."""
    div = result.get("divergence")
    if not isinstance(div, dict) or not div.get("first_diverging"):
        return []
    cos = div.get("cos")
    where = div.get("describe") or div["first_diverging"]
    text = f"first diverging {'epoch' if div.get('per_epoch') else 'epoch/node'}: {where}"
    if isinstance(cos, (int, float)):
        text += f", cos {cos:.4f}"
    if div.get("model_nodes"):
        text += f"; model nodes {', '.join(div['model_nodes'])}"
    return [text]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _float_ini(config: pytest.Config, name: str, default: float) -> float:
    raw = str(config.getini(name) or "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise BoardError(f"ini {name} = {raw!r}: expected a number of seconds") from None


def _diag(level: str, kind: str, message: str) -> dict[str, Any]:
    return {"level": level, "code": None, "kind": kind, "message": message}

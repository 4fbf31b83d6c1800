"""One analyze/generate/validate run: model -> deployment -> files and console output."""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from .analysis import ModelError, load_model
from .cinfo import build_cinfo
from .context import Run
from .deploy import CompileError, deploy
from .faults import write_file
from .profiles import ProfileError, resolve_profile
from .report_mcu import generated_files, mcu_sections
from .report_n6 import n6_sections
from .summary import exec_summary, model_table
from .text import header
from .versions import ToolVersion

_N6_BOARD = "stm32 family - 0x486 - STM32N6xx @600/400MHz"


def _builtin_profiles(root: Path | None) -> Path:
    base = root if root is not None else Path(__file__).resolve().parent
    found = sorted(base.glob("Utilities/*/targets/stm32/resources/neural_art.json"))
    return found[0] if found else base / "neural_art.json"


def _opts(ns: argparse.Namespace) -> dict[str, Any]:
    return {
        "input_data_type": ns.input_data_type,
        "output_data_type": ns.output_data_type,
        "no_inputs_allocation": ns.no_inputs_allocation,
        "no_outputs_allocation": ns.no_outputs_allocation,
        "compression": ns.compression,
        "optimization": ns.optimization,
        "memory_pool": (ns.memory_pool or [None])[-1],
        "split_weights": ns.split_weights,
        "c_api": ns.c_api,
        "valinput": ns.valinput,
        "seed": ns.seed,
        "batch_size": ns.batch_size,
        "mode": ns.mode or "host",
        "classifier": ns.classifier,
        "eec": ns.enable_epoch_controller,
        "device_desc": _N6_BOARD
        if (ns.mode or "").startswith("target") and ns.target == "stm32n6"
        else (
            "stm32 family - 0x450 - STM32H7xx @480MHz"
            if (ns.mode or "").startswith("target")
            else None
        ),
    }


def execute(
    ns: argparse.Namespace,
    argv: list[str],
    ver: ToolVersion,
    model: Path,
    faults: dict[str, Any],
    root: Path | None,
    start: float,
) -> int:
    """Run the command and return the exit status."""
    try:
        facts = load_model(model)
    except ModelError as exc:
        print(f"E010(InvalidModelError): {exc}")
        return 1
    spec = ns.st_neural_art
    npu = ns.target == "stm32n6" and spec is not None and not spec.startswith("-")
    profile = None
    opts = _opts(ns)
    try:
        if npu:
            profile = resolve_profile(spec, _builtin_profiles(root))
        dep = deploy(facts, ver, opts, profile, faults)
    except ProfileError as exc:
        print(f"E102(CliArgumentError): {exc}")
        return 1
    except CompileError as exc:
        print(f"E103(CompilerError): {exc}")
        return 1
    output, workspace = Path(ns.output).resolve(), Path(ns.workspace).resolve()
    run = Run(
        ["stedgeai", *argv][1:],
        ns.command,
        ver,
        facts,
        dep,
        opts,
        ns.name,
        ns.target,
        output,
        workspace,
        root or Path.cwd(),
        profile,
        faults,
    )
    quiet = bool(ns.quiet)
    _pass_bars(len(facts.layers) * 3 + 7, quiet)
    if npu:
        print(" >>>> EXECUTING NEURAL ART COMPILER")
        print(f"   {run.root / 'Utilities' / 'linux' / 'atonn'}{run.compiler_args}")
        print()
        print(" <<<< DONE EXECUTING NEURAL ART COMPILER")
        print()
        if any(e.kind == "ec" for e in dep.epochs):
            print(" >>>> EXECUTING EPOCH_CONTROLLER POST_PROCESSING")
            print()
            print(" <<<< DONE EXECUTING EPOCH_CONTROLLER POST_PROCESSING")
            print()

    npz: dict[str, Any] | None = None
    val_lines: list[str] = []
    eval_lines: list[str] = []
    if ns.command == "validate":
        from .validate import run_validation, summary_table

        block, val_lines, npz, rows = run_validation(run)
        run.validation = block
        eval_lines = [""] + summary_table(rows, ver.key >= (4, 0, 0))

    body = _body(run, val_lines, eval_lines)
    report_lines = header(ver.banner, ["stedgeai", *argv][1:]) + body
    if not npu or ns.command == "validate":
        console = body
    else:
        console = exec_summary(run) + [""] + body
    for line in console:
        print(f" {line}" if line else "")
    if not faults.get("no_output"):
        _write(run, report_lines, npz, ns)
    elapsed = time.monotonic() - start
    verb = ns.command.upper() if ver.key >= (4, 0, 0) else ns.command
    print(f"Creating txt report file {output / f'{ns.name}_{ns.command}_report.txt'}")
    print()
    print(f"elapsed time ({verb}): {elapsed:.3f}s")
    return 0


def _pass_bars(total: int, quiet: bool) -> None:
    """tqdm-like `PASS:` bars on stderr, as the real tool draws them."""
    if quiet:
        return
    for done in (0, total // 2, total):
        pct = 100 * done // max(1, total)
        bar = ("█" * (pct // 10)).ljust(10)
        rate = "?it/s" if done == 0 else f"{40.0 + done:.2f}it/s"
        left = "?" if done == 0 else "00:00"
        print(f"PASS: {pct:3d}%|{bar}| {done}/{total} [00:00<{left}, {rate}]", file=sys.stderr)
    print(" " * 55, file=sys.stderr)


def _body(run: Run, val_lines: list[str], eval_lines: list[str]) -> list[str]:
    if run.npu and run.command != "validate":
        return model_table(run) + n6_sections(run)
    if run.npu:
        return exec_summary(run) + [""] + model_table(run) + ["", ""] + val_lines + eval_lines
    body = exec_summary(run) + [""] + model_table(run)
    body += mcu_sections(run, val_lines or None)
    if run.command == "generate":
        body += generated_files(run, _c_files(run))
    return body + eval_lines


def _c_files(run: Run) -> list[str]:
    nm = run.name
    if run.npu:
        names = [f"{nm}.c", f"{nm}.h"]
        names += [f"{nm}_atonbuf.{u.pool.fname}.raw" for u in run.dep.pools if u.weights]
        if any(e.kind == "ec" for e in run.dep.epochs):
            names.append(f"{nm}_ecblobs.h")
        return names + ([f"stai_{nm}.c", f"stai_{nm}.h"] if run.ver.key >= (3, 0, 0) else [])
    if run.st_ai_api:
        return [f"{nm}.c", f"{nm}.h", f"{nm}_data.c", f"{nm}_data.h", f"{nm}_details.h"]
    return [
        f"{nm}_data_params.h",
        f"{nm}_data_params.c",
        f"{nm}_data.h",
        f"{nm}_data.c",
        f"{nm}_config.h",
        f"{nm}.h",
        f"{nm}.c",
    ]


def _write(run: Run, report: list[str], npz: dict[str, Any] | None, ns: argparse.Namespace) -> None:
    out, faults, nm = run.output, run.faults, run.name
    out.mkdir(parents=True, exist_ok=True)
    if not ns.no_report:
        write_file(
            out / f"{nm}_{run.command}_report.txt", ("\n".join(report) + "\n").encode(), faults
        )
    doc = build_cinfo(run)
    blob = json.dumps(doc, indent=4, sort_keys=True).encode()
    write_file(out / f"{nm}_c_info.json", blob, faults)
    if run.command == "validate" and run.ver.key >= (3, 0, 0) and not ns.val_json:
        write_file(out / f"{nm}_c_info_valid.json", blob, faults)
    if npz is not None:
        buf = io.BytesIO()
        import numpy as np

        np.savez(buf, **npz)
        write_file(out / f"{nm}_val_io.npz", buf.getvalue(), faults)
        if ns.save_csv:
            for key, arr in npz.items():
                flat = np.asarray(arr).reshape(np.asarray(arr).shape[0], -1)
                text = "\n".join(",".join(str(v) for v in row) for row in flat)
                write_file(out / f"{nm}_val_{key.replace('_', '_', 1)}.csv", text.encode(), faults)
    if run.command == "generate":
        for fname in _c_files(run):
            stub = f"/* {fname}: generated by the fake stedgeai {run.ver.full} */\n"
            write_file(out / fname, stub.encode(), faults)
    if ns.no_workspace:
        return
    ws = run.workspace
    if run.npu:
        nad = ws / f"neural_art__{nm}"
        nad.mkdir(parents=True, exist_ok=True)
        raw = {k: v for k, v in doc.items() if k != "memory_footprint"}
        write_file(nad / "c_info.json", json.dumps(raw, indent=4, sort_keys=True).encode(), faults)
        assert run.profile is not None
        write_file(nad / "stm32n6.mpool", run.profile.mpool_file.read_bytes(), faults)
        ini = ["# Tool: atonn", f"# Version atonn.{run.ver.compiler}"]
        ini += [f"{opt.lstrip('-')}=true" for opt in run.profile.options.split()]
        write_file(nad / "atonn_options.ini", ("\n".join(ini) + "\n").encode(), faults)
    else:
        (ws / f"inspector_{nm}" / "workspace" / "generated").mkdir(parents=True, exist_ok=True)

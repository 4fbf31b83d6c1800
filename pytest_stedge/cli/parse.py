"""``stedge parse PATH [--json]``: read stedgeai outputs and print the Result."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

_EPILOG = """examples:
  stedge parse st_ai_output/                     summary of a generate/validate output folder
  stedge parse st_ai_output/network_c_info.json  one file
  stedge parse ~/.stm32cubemx/network_output --json > result.json
  stedge parse console.log                       a captured console (tqdm/ANSI are ignored)
  stedge parse logs.txt --run 2 --json           one run of a log holding a generate and a validate
"""


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``stedge parse``."""
    parser = subparsers.add_parser(
        "parse",
        help="Read stedgeai output files or folders into a Result",
        description=(
            "Read a stedgeai/stm32ai output file (text report, console capture, c_info.json, "
            "report.json, val_io.npz, validation CSV) or a whole output folder, and print the "
            "normalised Result: a readable summary by default, JSON with --json."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "path",
        help="an output file or folder (st_ai_output/, CubeMX .ai/, st_ai_ws/neural_art__network/)",
    )
    parser.add_argument("--json", action="store_true", help="print the Result as JSON")
    parser.add_argument(
        "--run",
        type=int,
        metavar="N",
        help="a file or folder holding several runs (an AI Studio log with a generate and a "
        "validate): print run N only (1 = the first). Default: each run, one after the other "
        "(with --json, a list)",
    )
    parser.set_defaults(handler=_parse_command)


# Names of files stedgeai writes (and our runner's log of its console): what marks a run folder.
_OUTPUT_SUFFIXES = ("c_info.json", "_report.txt", "_report.json", "_val_io.npz", "stedgeai.log")
_SHOWN = 8


def _parse_command(args: argparse.Namespace) -> int:
    from pytest_stedge.errors import ReportParseError
    from pytest_stedge.parsers import parse_runs
    from pytest_stedge.parsers.run_stages import pick_runs

    path = Path(args.path)
    try:
        runs = parse_runs(path)
    except ReportParseError:
        inner = run_folders(path) if path.is_dir() else []
        if not inner:
            raise
        shown = ", ".join(str(p) for p in inner[:_SHOWN])
        more = f" and {len(inner) - _SHOWN} more" if len(inner) > _SHOWN else ""
        raise ReportParseError(
            path,
            f"no stedgeai output in this folder itself, but {len(inner)} folder(s) below it "
            f"hold some: {shown}{more}. Parse one of them, e.g. stedge parse {inner[0]}",
        ) from None
    runs = pick_runs(path, runs, args.run)
    if args.json:
        printed: Any = [json_safe(r) for r in runs] if len(runs) > 1 else json_safe(runs[0])
        print(json.dumps(printed, indent=2, sort_keys=False, allow_nan=False))
        return 0
    for number, result in enumerate(runs, 1):
        if len(runs) > 1:
            print(f"{'' if number == 1 else chr(10)}== run {number} of {len(runs)}: "
                  f"{result.get('command', 'unknown')}")
        print(summary(result))
    return 0



def json_safe(result: dict[str, Any]) -> dict[str, Any]:
    """The Result with every NaN/infinite number as null, and a warning naming each.

    JSON has no NaN or Infinity (``json.dumps`` would print invalid JSON); an ``snr`` of
    ``inf`` (identical outputs) is a real figure, so the warning says what it was.
    """
    found: list[str] = []

    def clean(value: Any, where: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            found.append(f"{where} is {value}")
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    out: dict[str, Any] = clean(result, "")
    if found:
        out.setdefault("diagnostics", [])
        out["diagnostics"] = list(out["diagnostics"]) + [
            {
                "level": "warning",
                "code": "non-finite",
                "kind": "NonFiniteNumber",
                "message": f"{item}; printed as null (not a number JSON can hold)",
            }
            for item in found
        ]
    return out
def run_folders(folder: Path, depth: int = 3) -> list[Path]:
    """Folders under ``folder`` (down to ``depth`` levels) holding stedgeai outputs, sorted:
    the run folders of a work folder (``.stedge/work/run-3/<case>/<stage>-<version>/``),
    a folder of downloaded runs."""
    found: list[Path] = []
    level = [folder]
    for _ in range(depth):
        below = sorted(p for parent in level for p in _subfolders(parent))
        found += [p for p in below if _holds_output(p)]
        level = [p for p in below if p not in found]
    return sorted(found)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []


def _holds_output(folder: Path) -> bool:
    try:
        return any(p.name.lower().endswith(_OUTPUT_SUFFIXES) for p in folder.iterdir())
    except OSError:
        return False


def _bytes(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, float) and not math.isfinite(value):
        return "?"
    if abs(value) >= 2**64:
        return f"{value:,} B"
    if abs(value) >= 1024 * 1024:
        return f"{value:,} B ({value / 1024 / 1024:.2f} MiB)"
    if abs(value) >= 1024:
        return f"{value:,} B ({value / 1024:.2f} KiB)"
    return f"{value:,} B"


def summary(result: dict[str, Any]) -> str:
    """A readable multi-line summary of a Result."""
    lines: list[str] = []
    tool = result.get("tool") or {}
    version = tool.get("version", "unknown version")
    extra = " ".join(str(tool[k]) for k in ("build", "revision") if tool.get(k))
    lines.append(
        f"stedgeai {version}{' (' + extra + ')' if extra else ''}  {result.get('command', '?')}"
        f"  target={result.get('target', '?')}{'  Neural-ART' if result.get('neural_art') else ''}"
    )
    if tool.get("compiler"):
        lines.append(f"  Neural-ART compiler {tool['compiler']}")
    model = result.get("model") or {}
    if model:
        lines.append(
            f"{'model':<12}{model.get('name', '?')} ({model.get('type', '?')}) {model.get('hash', '')}".rstrip()
        )
    memory = result.get("memory") or {}
    for key, label in (("weights_bytes", "weights"), ("activations_bytes", "activations")):
        if key in memory:
            lines.append(f"{label:<12}{_bytes(memory[key])}")
    if memory.get("io_bytes"):
        lines.append(
            f"{'io':<12}in {_bytes(memory['io_bytes'][0])}, out {_bytes(memory['io_bytes'][1])}"
        )
    if "macc" in result:
        lines.append(f"{'macc':<12}{result['macc']:,}")
    for pool in memory.get("pools") or []:
        if pool.get("used_bytes"):
            size = f" / {_bytes(pool['size_bytes'])}" if pool.get("size_bytes") else ""
            lines.append(
                f"  pool {pool['name']:<18} {_bytes(pool['used_bytes'])}{size}"
                f"  (weights {_bytes(pool.get('weights_bytes'))}, activations {_bytes(pool.get('activations_bytes'))})"
            )
    epochs = result.get("epochs")
    if epochs:
        counts = ", ".join(f"{k} {epochs[k]}" for k in ("hw", "ec", "sw", "hybrid") if k in epochs)
        lines.append(f"{'epochs':<12}{epochs.get('total', '?')} ({counts})")
    from pytest_stedge.parsers.epoch_kinds import explain as explain_epochs

    for line in explain_epochs(epochs):
        label, _, text = line.partition(": ")
        lines.append(f"{label:<12}{text}")
    validation = result.get("validation") or {}
    if validation:
        head = ", ".join(
            f"{k} {validation[k]}"
            for k in ("mode", "samples", "duration_ms", "device")
            if k in validation
        )
        lines.append(f"{'validation':<12}{head}")
        for out in validation.get("outputs") or []:
            metrics = "  ".join(
                f"{k}={out[k]:.6g}"
                for k in ("acc", "rmse", "mae", "l2r", "snr", "nse", "cos")
                if k in out
            )
            lines.append(f"  {out.get('name', '?')}: {metrics}")
    for diag in result.get("diagnostics") or []:
        code = diag.get("code") or diag.get("kind", "")
        lines.append(f"{diag.get('level', 'error')}: {code}: {diag.get('message', '')}")
    for source in result.get("sources") or []:
        lines.append(f"{'source':<12}{source}")
    return "\n".join(lines)

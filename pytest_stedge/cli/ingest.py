"""``stedge ingest``: store a run recorded elsewhere as one version of one case.

The outputs of a Windows PC with the board or of ST's Developer Cloud are parsed
here and replayed by ``pytest corpus --stedge-version X`` on machines without that
install, through the same checks.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_stedge.options import add_store_options

from .figures import fmt_figure


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``ingest``."""
    parser = subparsers.add_parser(
        "ingest",
        help="Store a recorded stedgeai output folder as a version of a case",
        description="Parse an output folder (st_ai_output/, a CubeMX .ai/ folder, a workspace) "
        "and store its Result as the recording of CASE for stedgeai VERSION. "
        "`pytest corpus --stedge-version VERSION` then replays it where that version is "
        "not installed.",
        epilog="examples:\n"
        "  stedge ingest ~/win-share/st_ai_output --version 4.0.1 --case mvs-cnn/int8\n"
        "  stedge ingest dc-run/ --version 3.0.0 --case tcn-23x60 --stage validate-target",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", metavar="DIR", help="Output folder or file written by stedgeai")
    parser.add_argument("--version", required=True, help="Toolchain version it was made with")
    parser.add_argument("--case", required=True, metavar="NAME", help="Corpus case (folder[/variant])")
    parser.add_argument(
        "--stage",
        choices=["generate", "analyze", "validate-host", "validate-target"],
        default=None,
        help="Stage it stands for. Default: from the outputs (generate, analyze, or validate "
        "with its mode)",
    )
    parser.add_argument("--corpus", default="corpus", metavar="DIR", help="Corpus folder. Default: corpus")
    add_store_options(parser.add_argument, prefix="")
    parser.set_defaults(handler=_ingest)


def stage_of(result: dict[str, Any]) -> str:
    """The corpus stage a parsed Result stands for."""
    command = result.get("command") or "generate"
    if command == "validate":
        mode = (result.get("validation") or {}).get("mode")
        return "validate-target" if mode == "target" else "validate-host"
    return str(command)


def _ingest(args: argparse.Namespace) -> int:
    from pytest_stedge.corpus import iter_case_files, load_cases
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.parsers import parse_path
    from pytest_stedge.store.database import Store

    from .store import db_path

    corpus = Path(args.corpus)
    cases = {c.name: c for f in iter_case_files(corpus) for c in load_cases(f)}
    case = cases.get(args.case)
    if case is None:
        raise StedgeError(
            f"no case {args.case!r} in {corpus}; cases: {', '.join(sorted(cases)) or 'none'}"
        )
    result = parse_path(Path(args.path))  # parse fully before anything is written
    stage = args.stage or stage_of(result)
    version = (result.get("tool") or {}).get("version")
    if version and version != args.version:
        result.setdefault("diagnostics", []).append(
            {
                "level": "warning",
                "code": None,
                "kind": "VersionMismatch",
                "message": f"outputs say version {version}, ingested as {args.version}",
            }
        )
    result["stage"] = stage
    result["recorded_from"] = str(Path(args.path).resolve())
    with Store.open(db_path(args)) as store:
        store.add_recording(
            version=args.version,
            case_name=case.name,
            stage=stage,
            result=result,
            source=str(Path(args.path).resolve()),
            model_sha256=case.model_sha256(),
            options_hash=case.options_hash(),
        )
    from pytest_stedge.result import flat_metrics

    figures = (
        ", ".join(f"{k}={fmt_figure(v)}" for k, v in sorted(flat_metrics(result).items()))
        or "no figures"
    )
    print(f"stored {args.path} as {case.name} {stage} [{args.version}]: {figures}")
    return 0

"""``stedge ingest``: store a run recorded elsewhere as one version of one case.

The outputs of a Windows PC with the board or of ST's Developer Cloud are parsed
here and replayed by ``pytest corpus --stedge-version X`` on machines without that
install, through the same checks. They are checked first: the model hash the tool
printed must be the MD5 of the case's model and the version banner must be
``--version`` (``--force`` stores a mismatch marked not comparable). Each ingest is a
recorded run of its own, so ``stedge runs``, ``diff``, ``report`` and the dashboard see
it at once; a second ingest of the same case, stage and version needs ``--replace``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

from pytest_stedge.options import add_store_options

from .shared import fmt_figure


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
        "  stedge ingest dc-run/ --run 2 --version 3.0.0 --case tcn-23x60 --stage validate-target\n"
        "  stedge ingest logs.txt --run 2 --version 4.0.1 --case mvs-cnn/int8   (its validate)",
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
    parser.add_argument(
        "--run",
        type=int,
        metavar="N",
        help="The outputs hold several runs (an AI Studio log with a generate and a validate): "
        "store run N (1 = the first; `stedge parse PATH` lists them). Without it, the one "
        "run of --stage, else asked",
    )
    parser.add_argument("--corpus", default="corpus", metavar="DIR", help="Corpus folder. Default: corpus")
    parser.add_argument(
        "--force",
        action="store_true",
        help="Store outputs whose model hash or version banner does not match the case and "
        "--version; they are marked not comparable (diffs and baselines never compare them)",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="Replace the recording already stored for this case, stage and version (the "
        "earlier ingest stays in `stedge runs`)",
    )
    add_store_options(parser.add_argument, prefix="")
    parser.set_defaults(handler=_ingest)



def _ingest(args: argparse.Namespace) -> int:
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.parsers.run_stages import stage_of
    from pytest_stedge.result import flat_metrics
    from pytest_stedge.store.database import Store

    from ..case.load import load_cases
    from ..case.scan import iter_case_files
    from .shared import db_path

    check_version_text(args.version)
    corpus = Path(args.corpus)
    for given, what in ((Path(args.path), "output folder or file"), (corpus, "corpus folder")):
        if not given.exists():
            raise StedgeError(f"{given}: no such {what}")
    cases = {c.name: c for f in iter_case_files(corpus) for c in load_cases(f)}
    case = cases.get(args.case)
    if case is None:
        raise StedgeError(
            f"no case {args.case!r} in {corpus}; cases: {', '.join(sorted(cases)) or 'none'}"
        )
    source = Path(args.path).resolve()
    # parse fully before anything is written
    result = _one_run(Path(args.path), args.run, args.stage)
    refuse_without_figures(result, Path(args.path))
    stage = args.stage or stage_of(result)
    problems = mismatches(result, args.version, case.model)
    if problems and not args.force:
        raise StedgeError(
            f"{args.path} does not match case {case.name} and --version {args.version}: "
            + "; ".join(problems)
            + ". Ingest the outputs of this case's model made with that version, or pass "
            "--force to store them marked not comparable"
        )
    note = "; ".join(problems) or None
    if note:
        result.setdefault("diagnostics", []).append(
            {"level": "warning", "code": None, "kind": "NotComparable",
             "message": f"ingested with --force: {note}"}
        )
    result["stage"] = stage
    result["recorded_from"] = str(source)
    result.setdefault("options", case.stated_options())
    model_sha256 = None if note else case.model_sha256()
    options_hash = case.options_hash()
    metrics = flat_metrics(result)
    with Store.open(db_path(args)) as store, store.transaction():
        run_id = store.begin_run(
            argv=["stedge", "ingest", *_argv_of(args)], versions=[args.version], status="recorded"
        )
        store.add_recording(
            version=args.version, case_name=case.name, stage=stage, result=result,
            source=str(source), model_sha256=model_sha256, options_hash=options_hash,
            run_id=run_id, comparable=note is None, note=note, replace=args.replace,
        )
        store.add_items(run_id, [recorded_row(case, stage, args.version, result, metrics,
                                              model_sha256, options_hash)])
        store.finish_run(run_id, status="recorded", exitstatus=0)
    figures = ", ".join(f"{k}={fmt_figure(v)}" for k, v in sorted(metrics.items())) or "no figures"
    print(f"stored {args.path} as {case.name} {stage} [{args.version}]: {figures}")
    if note:
        print(f"marked not comparable: {note}")
    print(f"recorded as run {run_id}: `stedge runs`, `stedge report {run_id}` and `stedge diff` "
          f"show it; `pytest --stedge-version {args.version}` replays it")
    return 0


def _one_run(path: Path, number: int | None, stage: str | None = None) -> dict[str, Any]:
    """The run to store: the only one, run ``number``, the only one of ``stage`` (a
    validate-target folder also holds the generate that built the firmware), or the one the
    user picks."""
    from pytest_stedge.errors import StedgeError, describe_run
    from pytest_stedge.parsers import parse_runs
    from pytest_stedge.parsers.run_stages import pick_runs, stage_of

    runs = pick_runs(path, parse_runs(path), number)
    if len(runs) == 1:
        return runs[0]
    of_stage = [r for r in runs if stage is not None and stage_of(r) == stage]
    if len(of_stage) == 1:
        return of_stage[0]
    listed = "\n".join(f"  {i}: {describe_run(r)}" for i, r in enumerate(runs, 1))
    if not sys.stdin.isatty():
        raise StedgeError(
            f"{path} holds {len(runs)} runs; store one with --run N:\n{listed}"
        )
    print(f"{path} holds {len(runs)} runs:\n{listed}")
    answer = input(f"which one to store (1-{len(runs)})? ").strip()
    if not answer.isdigit():
        raise StedgeError(f"{answer!r} is not a run number; nothing stored")
    return pick_runs(path, runs, int(answer))[0]


def refuse_without_figures(result: dict[str, Any], given: Path) -> None:
    """Refuse outputs from which no figure could be read (a report cut after its header):
    stored, they would replay as an item that measured nothing. A run that ended in an
    error the tool printed (a board that never answered) is a recording of that failure
    and is kept.

    :raises StedgeError: naming the files read and what was looked for.
    """
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.result import PRECISION_PREFIX, flat_metrics

    figures = [k for k in flat_metrics(result) if not k.startswith(PRECISION_PREFIX)]
    errors = [d for d in result.get("diagnostics") or []
              if isinstance(d, dict) and d.get("level") == "error"]
    if figures or errors:
        return
    read = [str(s) for s in result.get("sources") or []] or [str(given)]
    raise StedgeError(
        f"{', '.join(read)}: no figure could be read (weights, activations, MACC, epochs or "
        "validation metrics) and no error the tool printed: the output looks cut short or is "
        "not a stedgeai report. Nothing was stored; ingest the complete outputs of the run"
    )


_VERSION_RE = re.compile(r"\d+(\.\d+){1,3}")


def check_version_text(version: str) -> None:
    """``--version`` names one release (``4.0.1``), never ``latest`` or a range."""
    from pytest_stedge.errors import StedgeError

    if not _VERSION_RE.fullmatch(version):
        raise StedgeError(
            f"--version {version!r}: give the stedgeai version the outputs were made with, "
            "as its banner prints it (e.g. 4.0.1); 'latest' or a range cannot be compared"
        )


def mismatches(result: dict[str, Any], version: str, model: Path) -> list[str]:
    """Why the outputs are not this case's model made with ``version``: the version banner
    against ``--version``, and the model hash the tool printed (the MD5 of its input
    model: ``model_hash`` in reports, the c_info input-model signature) against the
    case's model file."""
    problems = []
    banner = (result.get("tool") or {}).get("version")
    if not banner:
        problems.append(f"the outputs carry no version banner to check --version {version} against")
    elif banner != version:
        problems.append(f"the outputs say stedgeai {banner}, --version says {version}")
    printed = str((result.get("model") or {}).get("hash") or "").lower().removeprefix("0x")
    try:
        digest = hashlib.md5(model.read_bytes()).hexdigest()
    except OSError:
        digest = None
    if not printed:
        problems.append(f"the outputs carry no model hash to check against {model.name}")
    elif digest is None:
        problems.append(f"the case's model {model} is not here to check the hash 0x{printed}")
    elif printed != digest:
        problems.append(
            f"the outputs were made from a model with MD5 0x{printed}, the case's model "
            f"{model.name} has MD5 0x{digest}"
        )
    return problems


def recorded_row(
    case: Any, stage: str, version: str, result: dict[str, Any], metrics: dict[str, float],
    model_sha256: str | None, options_hash: str | None,
) -> Any:
    """The item an ingest stores: named like the pytest item that replays it."""
    from pytest_stedge.store.rows import ItemRow

    try:
        where = case.path.relative_to(Path.cwd().resolve())
    except ValueError:
        where = case.path
    param = f"{case.variant}-{version}" if case.variant else version
    return ItemRow(
        nodeid=f"{where.as_posix()}::{stage}[{param}]",
        case_name=case.name, stage=stage, version=version, outcome="recorded",
        model_sha256=model_sha256, options_hash=options_hash, recorded=True,
        message="ingested (expectations are checked when pytest replays it)",
        result=result, metrics=metrics,
        case={"case_path": str(case.path), "model_path": str(case.model),
              "target": case.target, "description": case.description},
    )


def _argv_of(args: argparse.Namespace) -> list[str]:
    out = [str(args.path), "--version", args.version, "--case", args.case]
    if args.run is not None:
        out += ["--run", str(args.run)]
    if args.stage:
        out += ["--stage", args.stage]
    return out + (["--force"] if args.force else []) + (["--replace"] if args.replace else [])

"""``stedge diverge``: where a board run leaves the reference.

Three dumps are read: a per-node dump of an ONNX model (``stedge board-run --per-layer``
on a board that reports ONNX nodes); an N6 dump (records per epoch, named after the
c_info's buffers: ``--c-info``); and a dump that holds the outputs only (the stock
firmware, or a run without ``--per-layer``, or the ``*_val_io.npz`` that ``stedgeai
validate`` writes), whose outputs are compared with ST's metrics against the case's
bounds, with what per-epoch data would need.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from pytest_stedge.case.lookup import find_case
from pytest_stedge.errors import StedgeError
from pytest_stedge.oracle.accuracy.board_dump import read_sidecar


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``diverge``."""
    p = subparsers.add_parser(
        "diverge",
        help="Name the first node or N6 epoch a board run gets wrong; compare its outputs",
        description="Runs the reference on the dump's own input and compares, in execution "
        "order, what the board wrote. With --c-info (an N6 compilation), each epoch's buffers "
        "are mapped to your model's tensors and recomputed from the board's own inputs of "
        "that epoch, so the first epoch named is the first one wrong for its inputs. A dump "
        "with outputs only (the stock firmware) is judged on its outputs with stedgeai "
        "validate's metrics; exit status 1 when they miss the bounds (--case, else "
        "--min-cos).",
        epilog="examples:\n  stedge diverge model.onnx layers.npz\n"
        "  stedge diverge model.tflite n6.npz --c-info st_ai_output/network_c_info.json\n"
        "  stedge diverge n6.npz --c-info st_ai_output/network_c_info.json   # the OE model\n"
        "  stedge diverge model.tflite n6.npz --c-info network_c_info.json "
        "--case corpus/real/n6-blazeface-128\n"
        "  stedge diverge st_ai_output/network_val_io.npz      # validate's own outputs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", type=Path, metavar="[MODEL] DUMP",
                   help="the model (.onnx; .tflite with --c-info or for outputs; optional with "
                        "--c-info: the *_OE_*.onnx beside it) and the dump (.npz of stedge "
                        "board-run, or stedgeai validate's *_val_io.npz)")
    p.add_argument("--c-info", type=Path, metavar="JSON",
                   help="the network_c_info.json generate wrote for the N6 compilation (default: "
                        "the one stedge board-run --c-info recorded in the dump)")
    p.add_argument("--oe-model", type=Path, help="the tool's *_OE_*.onnx (default: beside "
                   "--c-info)")
    p.add_argument("--q-json", type=Path, help="its *_OE_*_Q.json (default: beside --c-info)")
    p.add_argument("--case", metavar="CASE",
                   help="take the output bounds (val_cos, val_snr ...) from this case.toml or "
                        "case folder, for the validate-target stage")
    p.add_argument("--min-cos", type=float, default=0.99, help="tolerance on cos (default 0.99)")
    p.add_argument("--max-l2r", type=float, help="tolerance on l2r (default: none)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=cmd_diverge)


def cmd_diverge(args: argparse.Namespace) -> int:
    """Dispatch on what the dump holds (see the module docstring)."""
    from pytest_stedge.oracle.accuracy.io_verdict import is_val_io
    from pytest_stedge.oracle.accuracy.metrics import load_arrays

    if len(args.files) > 2:
        raise StedgeError(f"diverge takes [MODEL] DUMP, got {len(args.files)} files")
    if args.case:
        find_case(args.case)  # a case that does not exist is an error on every path
    model, dump = (args.files[0], args.files[1]) if len(args.files) == 2 else (None, args.files[0])
    if is_val_io(load_arrays(dump)):
        return _outputs_only(args, model, dump, None, "validate")
    meta = read_sidecar(dump)
    c_info = args.c_info or (Path(meta["c_info"]) if meta.get("c_info") else None)
    if c_info is not None:
        from pytest_stedge.oracle.accuracy.board_dump import read_dump
        from pytest_stedge.oracle.accuracy.epoch_plan import load_plan

        data = read_dump(dump, load_plan(c_info))
        outputs = set(meta.get("outputs") or [])  # an output buffer's data is the output's
        with_data = [t for r in data.records for t, v in r.tensors.items()
                     if v.size and t not in outputs]
        if with_data:
            return _epochs(args, model, dump, c_info)
        return _outputs_only(args, model, dump, c_info, "no intermediate data" if data.records
                             else "outputs only")
    if model is None:
        raise StedgeError(f"{dump}: give the MODEL it ran (or --c-info for an N6 dump)")
    if meta.get("mode") == "io" or not meta.get("nodes") and meta:
        return _outputs_only(args, model, dump, None, "outputs only")
    if model.suffix.lower() != ".onnx":
        raise StedgeError(
            f"{model}: a per-layer dump is compared node by node on an ONNX model; for an N6 "
            "board give the compilation's network_c_info.json with --c-info (its epochs map "
            "to this model's tensors)")
    return _nodes(args, model, dump)



def _bounds(args: argparse.Namespace) -> tuple[list[Any], str]:
    """The output bounds: the case's val_* expectations of validate-target, else cos."""
    from pytest_stedge.case.model import Bound

    if args.case:
        case = find_case(args.case)
        found = [b for stage in ("", "validate-target") for b in case.expect.get(stage, ())
                 if b.metric.startswith("val_")]
        if found:
            return found, f"the bounds of case {case.name} ({case.path})"
    bounds = [Bound("val_cos", min=args.min_cos)]
    if args.max_l2r is not None:
        bounds.append(Bound("val_l2r", max=args.max_l2r))
    return bounds, "--min-cos" + (" and --max-l2r" if args.max_l2r is not None else "")



def _outputs_only(args: argparse.Namespace, model: Path | None, dump: Path,
                  c_info: Path | None, why: str) -> int:
    from pytest_stedge.oracle.accuracy.io_verdict import (
        PER_EPOCH_NEEDS,
        dump_outputs,
        val_io_outputs,
    )
    from pytest_stedge.verdict.expect import check, summarize_miss

    if why == "validate":
        rows = val_io_outputs(dump)
    else:
        if model is None and c_info is not None:
            from pytest_stedge.oracle.accuracy.epoch_names import find_oe_files

            model = args.oe_model or find_oe_files(c_info)[0]
        if model is None:
            raise StedgeError(f"{dump}: give the MODEL the board ran (no *_OE_*.onnx beside "
                              f"{c_info})")
        rows = dump_outputs(model, dump, c_info, oe_model=args.oe_model, q_json=args.q_json)
    bounds, source = _bounds(args)
    from pytest_stedge.oracle.accuracy.io_verdict import flat

    figures = flat(rows)
    misses = check(bounds, figures)
    if args.json:
        print(json.dumps(_jsonable({"mode": "outputs", "why": why, "outputs": rows,
                                    "figures": figures, "bounds": source,
                                    "misses": [summarize_miss(m) for m in misses],
                                    "per_epoch_needs": PER_EPOCH_NEEDS}), indent=2))
        return 1 if misses else 0
    said = {"validate": f"{dump.name} holds the board's outputs beside the tool's reference",
            "no intermediate data": "the board sent its epoch records without data",
            "outputs only": "the dump holds the board's outputs only"}[why]
    print(f"{said}: the outputs are compared with ST's metrics")
    print(f"{'output':<28}{'reference':<28}{'cos':>10}{'snr':>10}{'rmse':>13}{'l2r':>11}")
    for row in rows:
        print(f"{row['name'][:27]:<28}{str(row['reference'])[:27]:<28}{row['cos']:>10.6f}"
              f"{row['snr']:>10.3f}{row['rmse']:>13.9f}{row['l2r']:>11.6f}")
    if misses:
        print(f"outputs FAIL {source}: " + "; ".join(summarize_miss(m) for m in misses))
    else:
        print(f"outputs pass {source}")
    print(f"note: no epoch can be named from outputs alone: {PER_EPOCH_NEEDS}")
    return 1 if misses else 0


def _epochs(args: argparse.Namespace, model: Path | None, dump: Path, c_info: Path) -> int:
    from pytest_stedge.oracle.accuracy.epoch_compare import diverge_epochs

    result = diverge_epochs(model, dump, c_info, oe_model=args.oe_model,
                            q_json=args.q_json, min_cos=args.min_cos, max_l2r=args.max_l2r)
    first = result["first_divergent"]
    if args.json:
        print(json.dumps(_jsonable(result), indent=2))
        return 1 if first else 0
    print(f"reference: {result['reference']} on the dump's input; {result['naming']}")
    print(f"verdict per epoch: {result['local']}")
    for note in result["notes"]:
        print(f"  {note}")
    print(f"{'epoch':<11}{'kind':<8}{'buffer':<34}{'model tensor':<32}{'cos':>9}"
          f"{'local cos':>11}")
    for row in result["rows"]:
        mark = "" if row["ok"] else "  <-- wrong for its inputs"
        local = "-" if row["local_cos"] is None else f"{row['local_cos']:.6f}"
        print(f"{row['epoch'][:10]:<11}{str(row['kind'])[:7]:<8}{row['buffer'][:33]:<34}"
              f"{str(row['tensor'])[-31:]:<32}{row['cos']:>9.5f}{local:>11}{mark}")
    if result["unmapped"]:
        print(f"{len(result['unmapped'])} record tensor(s) not compared:")
        for item in result["unmapped"][:20]:
            print(f"  {item['record']} {item['tensor']}: {item['reason']}")
        if len(result["unmapped"]) > 20:
            print(f"  ... and {len(result['unmapped']) - 20} more (--json lists them all)")
    if first:
        nodes = ", ".join(first["model_nodes"]) or "none of the model's (front-end generated)"
        cos = first["local_cos"] if first["local_cos"] is not None else first["cos"]
        print(f"first diverging epoch: {first['describe']}, cos {cos:.6f} "
              f"({first['checked']}); model nodes: {nodes}; buffer {first['buffer']} = "
              f"{first['tensor']}")
        if result["unchecked_before"]:
            print(f"  or one of the epochs before it that wrote nothing comparable: "
                  f"{', '.join(result['unchecked_before'])}")
        return 1
    print(f"no epoch is wrong for its inputs ({result['compared']} buffers compared over "
          f"{result['records']} records)")
    return 0


def _nodes(args: argparse.Namespace, model: Path, dump: Path) -> int:
    from pytest_stedge.oracle.accuracy.first_node import diverge

    result = diverge(model, dump, min_cos=args.min_cos, max_l2r=args.max_l2r)
    if args.json:
        print(json.dumps(_jsonable(result), indent=2))
        return 1 if result["first_divergent"] else 0
    print(f"input: {result['input_source']}")
    print(f"{'node':<40}{'op':<18}{'cos':>12}{'l2r':>12}")
    for row in result["rows"]:
        mark = "" if row["ok"] else "  <-- first divergent"
        print(f"{row['node'][:39]:<40}{row['op_type'][:17]:<18}{row['cos']:>12.6f}"
              f"{row['l2r']:>12.6f}{mark}")
    if result["unmatched"]:
        print(f"{len(result['unmatched'])} dump key(s) not in the model: "
              f"{', '.join(result['unmatched'][:5])}")
    first = result["first_divergent"]
    if first:
        print(f"first divergent node: {first['node']} ({first['op_type']}), "
              f"cos {first['cos']:.6f}")
        return 1
    print(f"no node leaves the tolerance ({result['compared']} compared)")
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return _jsonable(value.item())
    return value

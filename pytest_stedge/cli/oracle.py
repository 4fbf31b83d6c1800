"""``stedge oracle``, ``stedge reference`` and ``stedge metrics`` (``stedge diverge``: cli/diverge.py)."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register this module's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "oracle",
        help="What a model needs: facts and activation memory, independent of the tool",
        description="Facts (operators, quantized and float nodes, weights) and activation memory "
        "as the target deploys it (a floor by construction: the least any order, fusion and "
        "in-place write the tool could choose holds; the expected figure of the typical "
        "deployment, placed in the mpool's pools) of an ONNX or TFLite model (an ST _OE_ model "
        "with the _Q.json beside it). With --c-info, the tool's figure measured from its own "
        "named buffers, with one unexplained figure for what the parts do not account for. "
        "Rules per target family: docs/oracle.md.",
        epilog="examples:\n  stedge oracle model.tflite                      (the N6 NPU)\n"
        "  stedge oracle model.tflite --target stm32n6 --options --st-neural-art\n"
        "  stedge oracle model.tflite --target stm32n6     (software path: no --st-neural-art)\n"
        "  stedge oracle model.onnx --target stm32h7 --options --no-inputs-allocation\n"
        "  stedge oracle model.onnx --target stm32n6 --mpool my.mpool\n"
        "  stedge oracle model.tflite --c-info st_ai_output/network_c_info.json\n"
        "  stedge oracle model.onnx --json > oracle.json\n"
        "  stedge oracle model.tflite --target stm32n6 --version 2.2.0   epoch placement",
        formatter_class=fmt,
    )
    p.add_argument("model", type=Path, help="ONNX or TFLite model (Keras: convert it first)")
    p.add_argument(
        "--target",
        help="stedgeai --target, meaning what the tool means: without --target the oracle "
        "models the N6 NPU (stm32n6 with --st-neural-art); --target stm32n6 alone is the "
        "software path (stedgeai without --st-neural-art), add --options --st-neural-art or "
        "--mpool for the NPU",
    )
    p.add_argument(
        "--options",
        action="append",
        default=[],
        metavar="OPTIONS",
        help="stedgeai options: one option (--options --st-neural-art) or several as one "
        "string ('--st-neural-art --no-inputs-allocation'); repeatable. Read: "
        "--st-neural-art, --no-inputs-allocation, --no-outputs-allocation, "
        "--input-data-type, --output-data-type, --memory-pool",
    )
    p.add_argument("--mpool", type=Path, help="N6 .mpool or MCU --memory-pool JSON")
    p.add_argument("--c-info", type=Path, help="the tool's network_c_info.json for this model")
    p.add_argument(
        "--version",
        dest="tool_version",
        metavar="VERSION",
        help="predict the N6 epoch placement for this stedgeai version (e.g. 2.2.0): every "
        "node HW/EC/SW/hybrid with the rule and the real runs behind it",
    )
    p.add_argument(
        "--placement-table",
        type=Path,
        metavar="FILE",
        help="placement table to use (default: the one built from the real runs, "
        "tools/build_placement_table.py)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument(
        "--tensors", action="store_true", help="also list every buffer with its lifetime"
    )
    p.set_defaults(handler=_oracle)

    p = subparsers.add_parser(
        "reference",
        help="Run onnxruntime on the tool's default validation stimulus",
        description="Reference inference: 10 samples, seed 42, float inputs uniform in [0,1), "
        "int8 inputs over their whole range then quantized (stedgeai's default). Saves "
        "m_inputs_N and m_outputs_N like a *_val_io.npz.",
        epilog="examples:\n  stedge reference model.onnx --out ref.npz\n"
        "  stedge reference model.onnx --out ref.npz --samples 100 --seed 0",
        formatter_class=fmt,
    )
    p.add_argument("model", type=Path, help="ONNX model")
    p.add_argument("--out", type=Path, required=True, help="npz file to write")
    p.add_argument("--samples", type=int, default=10, help="number of samples (default 10)")
    p.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    p.set_defaults(handler=_reference)

    p = subparsers.add_parser(
        "metrics",
        help="The tool's validation metrics between a reference and a prediction",
        description="Per output: rmse, mae, l2r (over the prediction's norm), mean (reference "
        "minus prediction), std (ddof 1), nse, cos, snr and acc for classifiers, with stedgeai's "
        "definitions. Integer outputs are dequantized first, as the tool does: with the scale "
        "and zero point the validate report or c_info.json beside REFERENCE states, or with "
        "--scale/--zero-point; an integer output with neither is refused.",
        epilog="examples:\n  stedge metrics st_ai_output/network_val_io.npz\n"
        "  stedge metrics dump/network_val_io.npz --scale 0.000666033 --zero-point -128\n"
        "  stedge metrics ref.npz board_outputs.npy --json",
        formatter_class=fmt,
    )
    p.add_argument("reference", type=Path, help="reference .npy/.npz/.csv, or a *_val_io.npz alone")
    p.add_argument("prediction", type=Path, nargs="?", help="prediction .npy/.npz/.csv")
    p.add_argument(
        "--scale", type=float,
        help="dequantization scale of integer outputs (default: as the files beside state it)",
    )
    p.add_argument(
        "--zero-point", type=int, default=None,
        help="dequantization zero point (default: as stated beside, else 0 with --scale)",
    )
    p.add_argument(
        "--classifier",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force or skip ACC (default: auto-detect)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_metrics)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _dump(value: Any) -> None:
    print(json.dumps(_jsonable(value), indent=2))


def _b(n: Any) -> str:
    return "unknown" if n is None else f"{n:,} B"


def _split_options(values: list[str]) -> list[str]:
    import shlex

    words: list[str] = []
    for value in values:
        words.extend(shlex.split(value))
    return words


def _oracle(args: argparse.Namespace) -> int:
    from pytest_stedge.oracle.deployment.settings import deployment_for
    from pytest_stedge.oracle.memory.analysis import analyze_graph
    from pytest_stedge.oracle.model.files import open_graph

    options = _split_options(args.options)
    target = args.target
    if args.target is None and args.c_info is not None and not options:
        from pytest_stedge.oracle.deployment.recorded import deployment_options
        from pytest_stedge.oracle.memory.explain import load_c_info, run_arguments

        target, words = run_arguments(load_c_info(args.c_info))  # the run's own deployment
        options = deployment_options(words, args.c_info.parent)
    deployment = deployment_for(target, options, args.mpool)  # bad options before the model
    graph = open_graph(args.model)  # parsed once: the memory analysis and the placement read it
    report = analyze_graph(graph, details=args.tensors, deployment=deployment)
    if args.c_info:
        from pytest_stedge.oracle.memory.explain import explain_c_info

        report["c_info"] = explain_c_info(report, args.c_info)
        floor = report["lower_bound_bytes"]
        if floor:
            report["activations_ratio"] = report["c_info"]["reported_bytes"] / floor
    if args.tool_version:
        report["placement"] = _placement(args, options, graph)
    if args.json:
        _dump(report)
        return 0
    print(f"model: {args.model} ({report['format']})")
    dep = report["deployment"]
    io = []
    if not dep["inputs_in_activations"]:
        io.append("inputs outside")
    if not dep["outputs_in_activations"]:
        io.append("outputs outside")
    default = " (no --target: the N6 NPU)" if target is None and not options else ""
    print(f"deployment: {dep['meaning']}{default}")
    print(
        f"  {dep['target']} ({dep['family']}), alignment {dep['alignment']}"
        + (f", {', '.join(io)} the activations" if io else "")
        + (f", mpool {dep['mpool']} ({_b(dep['onchip_bytes'])} on chip)" if dep["mpool"] else "")
    )
    for note in report["notes"]:
        print(f"note: {note}")
    ops = ", ".join(
        f"{k} {v}" for k, v in sorted(report["op_counts"].items(), key=lambda kv: -kv[1])
    )
    print(f"operators ({sum(report['op_counts'].values())}): {ops}")
    if report["qdq"]:
        print(
            f"quantized nodes: {report['quantized_nodes']}; float nodes (software, Cortex-M55): "
            f"{len(report['float_nodes'])}"
        )
        for node in report["float_nodes"][:20]:
            print(f"  float: {node['name']} ({node['op_type']})")
        if len(report["float_nodes"]) > 20:
            print(f"  ... and {len(report['float_nodes']) - 20} more")
    print(f"parameters: {report['params']:,}; weights as deployed: {_b(report['weight_bytes'])}")
    print(f"activation tensors: {report['tensors']} over {report['steps']} steps")
    print(f"  floor (lower bound):    {_b(report['lower_bound_bytes'])}")
    print(f"  expected (offset plan): {_b(report['expected_bytes'])} (aligned, checked)")
    print(f"  naive (no reuse):       {_b(report['naive_bytes'])}")
    if report["streamed_tensors"]:
        print(f"  streamed, never stored: {len(report['streamed_tensors'])} tensor(s)")
    if report["overlaid"]:
        print(f"  overlaid on their input: {len(report['overlaid'])} output(s)")
    peak = ", ".join(f"{p['name']} {_b(p['bytes'])}" for p in report["peak"])
    print(f"  peak at {report['peak_node']}: {peak}")
    if report["unresolved_tensors"]:
        names = ", ".join(report["unresolved_tensors"][:10])
        print(
            f"  WARNING: {len(report['unresolved_tensors'])} tensor(s) with unresolved shapes are "
            f"left out of the figures above: {names}"
        )
    for buf in report.get("buffers") or []:
        print(
            f"    {buf['name']}: {_b(buf['bytes'])} steps {buf['start']}-{buf['end']} @ {buf['offset']}"
        )
    explained = report.get("c_info")
    if explained:
        print(
            f"\nc_info: {explained['c_info']} ({explained['pairing']['status']}: {explained['pairing']['detail']})"
        )
        for pool in explained["pools"]:
            if pool["buffers"]:
                where = "external" if pool["external"] else "internal"
                print(
                    f"  pool {pool['name']} ({where}): used {_b(pool['used_bytes'])}, liveness "
                    f"{_b(pool['liveness_bytes'])}, address union {_b(pool['union_bytes'])}, "
                    f"{pool['buffers']} buffers"
                )
        print(f"  liveness of the tool's own buffers: {_b(explained['tool_bound_bytes'])}")
        print(
            f"  reported activations {_b(explained['reported_bytes'])}, measured at epoch "
            f"{explained['epoch']} =")
        for part in explained["parts"]:
            if part["bytes"] or part["kind"] in ("model", "tool_tensors"):
                print(f"    {part['bytes']:+,} B  {part['kind']}: {part['words']}")
                named = part["buffers"]
                if named:
                    more = f" ... and {len(named) - 5} more" if len(named) > 5 else ""
                    print(f"        {', '.join(named[:5])}{more}")
        unexplained = explained["unexplained_bytes"]
        print(f"    {unexplained:+,} B  UNEXPLAINED: what the parts above do not account for")
        if explained["floor_tensors_missing"]:
            print(
                "        floor tensors the tool never holds together: "
                + ", ".join(explained["floor_tensors_missing"][:5])
            )
        print(f"  {explained['summary']}")
        if report.get("activations_ratio") is not None:
            print(f"  activations_ratio (reported / floor): {report['activations_ratio']:.3f}")
        if args.tensors:
            print("  tool buffers (pool @ offset, bytes, epochs):")
            for buf in explained["buffers"]:
                kind = "" if buf["kind"] == "core" else f" {buf['kind']}"
                print(
                    f"    {buf['name']}: {buf['pool']} @ {buf['offset']}, {_b(buf['bytes'])}, "
                    f"epochs {buf['start']}-{buf['end']}{kind}"
                )
    if report.get("placement"):
        from pytest_stedge.oracle.placement.predict import format_plan

        print()
        for line in format_plan(report["placement"]):
            print(line)
    return 0


def _placement(args: argparse.Namespace, options: list[str], graph: Any) -> dict[str, Any]:
    """The predicted N6 epoch placement for ``--version`` of the already read ``graph``."""
    from pytest_stedge.oracle.placement.predict import predict_placement
    from pytest_stedge.oracle.placement.table import load_table

    table = load_table(args.placement_table)
    return predict_placement(graph, args.tool_version, options=options, table=table)


def _reference(args: argparse.Namespace) -> int:
    import numpy as np

    from pytest_stedge.oracle.accuracy.reference import reference_outputs

    result = reference_outputs(args.model, samples=args.samples, seed=args.seed)
    arrays = {k: v for k, v in result.items() if k.startswith("m_")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, **arrays)
    for key, value in arrays.items():
        print(f"{key}: {tuple(value.shape)} {value.dtype}")
    print(f"wrote {args.out}")
    return 0


def _metrics(args: argparse.Namespace) -> int:
    from pytest_stedge.oracle.accuracy.metrics import compute_metrics, load_arrays, pair_outputs

    reference = load_arrays(args.reference)
    prediction = load_arrays(args.prediction) if args.prediction else None
    where = f"{args.reference}" + (f" / {args.prediction}" if args.prediction else "")
    rows = []
    notes = []
    for name, ref, pred in pair_outputs(reference, prediction, where):
        scale, zero_point, source = _dequantization(args, name, ref, pred)
        metrics = compute_metrics(
            ref, pred, scale=scale, zero_point=zero_point, classifier=args.classifier
        )
        row: dict[str, Any] = {"name": name, **metrics}
        if scale is not None:
            row.update(scale=scale, zero_point=zero_point, dequantized_from=source)
            notes.append(f"{name}: integer data dequantized with s={scale!r} zp={zero_point} "
                         f"({source})")
        rows.append(row)
    if args.json:
        _dump(rows)
        return 0
    for note in notes:
        print(note)
    # The tool's own layout: 9 decimals for rmse/mae/l2r, 6 for the others.
    widths = {"acc": ("{:>9.2f}%", 10), "rmse": ("{:>14.9f}", 14), "mae": ("{:>14.9f}", 14)}
    widths.update({"l2r": ("{:>14.9f}", 14), "snr": ("{:>12.6f}", 12)})
    keys = ["acc", "rmse", "mae", "l2r", "mean", "std", "nse", "cos", "snr"]
    print(f"{'output':<16}" + "".join(f"{k:>{widths.get(k, ('', 11))[1]}}" for k in keys))
    for row in rows:
        cells = []
        for key in keys:
            pattern, width = widths.get(key, ("{:>11.6f}", 11))
            value = row.get(key)
            cells.append(f"{'n.a.':>{width}}" if value is None else pattern.format(value))
        print(f"{row['name']:<16}" + "".join(cells))
    return 0


def _dequantization(
    args: argparse.Namespace, name: str, ref: Any, pred: Any
) -> tuple[float | None, int | None, str]:
    """(scale, zero point, where they come from) for one output; (None, None, "") for float
    data. Integer data without stated or given parameters is refused: its metrics would be
    in quantized units, not the tool's."""
    import numpy as np

    from pytest_stedge.errors import OracleError
    from pytest_stedge.oracle.accuracy.output_quant import stated_quantization

    if not any(np.issubdtype(np.asarray(a).dtype, np.integer) for a in (ref, pred)):
        return None, None, ""
    if args.scale is not None:
        return args.scale, args.zero_point or 0, "--scale/--zero-point"
    number = re.search(r"(\d+)$", name)
    stated = stated_quantization(args.reference).get(int(number.group(1)) if number else 1)
    if stated is None:
        raise OracleError(
            f"{args.reference}: output {name} holds integer codes, and no validate report or "
            "c_info.json beside it states their scale and zero point; give them with "
            "--scale S --zero-point ZP (the validate report's notes read 'dequantized with "
            "s=S zp=ZP')"
        )
    zero_point = stated.zero_point if args.zero_point is None else args.zero_point
    return stated.scale, zero_point, stated.source

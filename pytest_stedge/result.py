"""The normalised Result (DESIGN.md §3) and the flat metrics derived from it.

A Result is a plain JSON-serialisable ``dict``: every backend and parser produces
one, and the store, the checks, the diffs and the reports read only it. Keys that
are not known are absent, never 0.

The flat metric names (``activations_bytes``, ``epochs_sw``, ``val_cos`` ...) used
by expectations, the store and the diff are derived here, in one place.

Beyond DESIGN.md §3 a Result may carry: ``stage``; ``oracle`` (the oracle's figures for
the model: ``lower_bound_bytes``, ``plan_bytes``, ``float_nodes`` ...); ``memory.sections``
(the "Requested memory size by section" table); ``validation.rows`` (every row of the
evaluation table, not only X-cross); ``epochs.list[].to`` (epoch-controller ranges);
``board``, ``board_timings``, ``divergence`` and ``extra_metrics`` (target validation).

Rounded figures: a figure the tool printed only rounded (``3.936 MB`` in an N6 report
without its section table) is stored as the rounded byte count, and
``memory.precision[<key>]`` says by how many bytes it may be off (half its last printed
digit, rounded up); exact figures have no entry. Pools read from such a report carry
``precision_bytes`` (the largest error of their figures) and ``precision`` (the error of
their ``weights_bytes`` and ``activations_bytes`` each: ``768  B`` is exact). The flat metrics carry it as ``precision:<metric>``, so that the
diff and the gate never call a change inside the rounding a regression.

Also: ``epochs.ec_blobs`` (epoch-controller blobs the run compiled); ``epochs.list[].blob``
(an EC blob of a c_info whose epochs the file does not list); ``run.service_dir``
(Developer Cloud's ``rootDir-<uuid>``: the files of one run name the same one);
``memory.pools[].user_allocated`` (an I/O buffer pool the application allocates);
``memory.split_from_buffers`` (the per-kind figures were split from the c_info's pools and
buffers: weights placed in RAM, where ``memory_footprint`` counts a pool in both kinds) and
``memory.shared_pools`` (the pools holding weights and activations);
``options`` (the options that made the run, as words: ``--target``, the case's options, the
Neural-ART profile and pool by name; what the run's options hash stands for, shown when two
runs do not compare);
``provenance`` (a replayed public run: its repository and files, each with its URL,
commit and md5, as ``recordings.json`` states them).

``memory.activations_bytes`` is the activation memory the tool allocates: user-allocated
I/O buffers are in ``io_bytes``, not in it, as c_info ``memory_footprint``, report.json
``ram_size`` and the report's section table state it (2.0.0 N6 reports also print a
memory-usage total that counts user I/O pools; the Result does not use that total when
the exact section table is there), so versions compare like for like.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

SCHEMA = "stedge.result/1"

Result = dict[str, Any]
Direction = Literal["lower", "higher", "none"]


@dataclass(frozen=True)
class MetricSpec:
    """What a flat metric means: its unit and which way is better."""

    name: str
    unit: str
    direction: Direction
    help: str
    stages: tuple[str, ...]  # stage families that produce it: "toolchain", "validate", "oracle"


_TOOL = ("toolchain",)
_VAL = ("validate",)

METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in [
        MetricSpec("weights_bytes", "B", "lower", "weights in flash", _TOOL),
        MetricSpec("activations_bytes", "B", "lower", "activation RAM", _TOOL),
        MetricSpec(
            "activations_external_bytes",
            "B",
            "lower",
            "activations placed in external RAM (hyperRAM, SDRAM): 5-20x slower",
            _TOOL,
        ),
        MetricSpec("io_in_bytes", "B", "lower", "input buffers", _TOOL),
        MetricSpec("io_out_bytes", "B", "lower", "output buffers", _TOOL),
        MetricSpec("macc", "MACC", "lower", "multiply-accumulates", _TOOL),
        MetricSpec("epochs_total", "epochs", "lower", "all epochs", _TOOL),
        MetricSpec("epochs_hw", "epochs", "none", "hardware epochs", _TOOL),
        MetricSpec("epochs_ec", "epochs", "none", "epoch-controller epochs", _TOOL),
        MetricSpec("epochs_sw", "epochs", "lower", "software epochs", _TOOL),
        MetricSpec("epochs_hybrid", "epochs", "lower", "hybrid (??) epochs", _TOOL),
        MetricSpec("val_cos", "", "higher", "cosine similarity (worst output)", _VAL),
        MetricSpec("val_snr", "dB", "higher", "signal-to-noise ratio (worst output)", _VAL),
        MetricSpec("val_l2r", "", "lower", "L2 relative error (worst output)", _VAL),
        MetricSpec("val_rmse", "", "lower", "root mean squared error (worst output)", _VAL),
        MetricSpec("val_mae", "", "lower", "mean absolute error (worst output)", _VAL),
        MetricSpec("val_nse", "", "higher", "Nash-Sutcliffe efficiency (worst output)", _VAL),
        MetricSpec("val_acc", "%", "higher", "classification accuracy (worst output)", _VAL),
        MetricSpec("duration_ms", "ms", "lower", "inference time per sample", _VAL),
        MetricSpec(
            "activations_lower_bound_bytes",
            "B",
            "none",
            "oracle: liveness lower bound of activation memory",
            ("oracle", "toolchain"),
        ),
        MetricSpec(
            "float_nodes",
            "nodes",
            "lower",
            "oracle: compute nodes left in float in a QDQ model (they run in software on the NPU)",
            ("oracle",),
        ),
        MetricSpec(
            "activations_ratio",
            "x",
            "lower",
            "reported activations / oracle lower bound",
            _TOOL,
        ),
    ]
}

# For val_* metrics, "worst output" means the minimum of higher-is-better metrics
# and the maximum of lower-is-better ones.
_VAL_KEYS = ("cos", "snr", "l2r", "rmse", "mae", "nse", "acc")


def new_result(command: str, **fields: Any) -> Result:
    """Return an empty Result for ``command`` with ``fields`` set."""
    result: Result = {"schema": SCHEMA, "command": command}
    result.update({k: v for k, v in fields.items() if v is not None})
    return result


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


# "precision:activations_bytes" = how many bytes activations_bytes may be off (rounded).
PRECISION_PREFIX = "precision:"


def flat_metrics(result: Result) -> dict[str, float]:
    """Derive the flat metrics of DESIGN.md §3 from a Result.

    Only metrics the Result knows are returned: a missing figure stays missing. A figure
    only known rounded adds ``precision:<metric>`` (its possible error, same unit).

    :raises ReportParseError: naming the Result's first source when a figure overflows a
        float (the parsers refuse such files; a Result from elsewhere may still hold one).
    """
    try:
        return _flat_metrics(result)
    except OverflowError as exc:
        from .errors import ReportParseError

        source = (result.get("sources") or ["<Result without sources>"])[0]
        raise ReportParseError(source, f"a figure overflows a float ({exc})") from None


def _flat_metrics(result: Result) -> dict[str, float]:
    out: dict[str, float] = {}
    memory = result.get("memory") or {}
    precision: Any = memory.get("precision")
    if not isinstance(precision, dict):
        precision = {}
    for key in ("weights_bytes", "activations_bytes"):
        value = _number(memory.get(key))
        if value is not None:
            out[key] = value
            error = _number(precision.get(key))
            if error:
                out[PRECISION_PREFIX + key] = error
    external = _external_activations(memory.get("pools"))
    if external is not None:
        out["activations_external_bytes"] = external[0]
        if external[1]:
            out[PRECISION_PREFIX + "activations_external_bytes"] = external[1]
    io = memory.get("io_bytes")
    if isinstance(io, (list, tuple)) and len(io) == 2:
        for key, value in zip(("io_in_bytes", "io_out_bytes"), io):
            number = _number(value)
            if number is not None:
                out[key] = number
    macc = _number(result.get("macc"))
    if macc is not None:
        out["macc"] = macc
    epochs = result.get("epochs") or {}
    for kind in ("total", "hw", "ec", "sw", "hybrid"):
        value = _number(epochs.get(kind))
        if value is not None:
            out[f"epochs_{kind}"] = value
    validation = result.get("validation") or {}
    outputs = [o for o in validation.get("outputs") or [] if isinstance(o, dict)]
    for key in _VAL_KEYS:
        values = [v for v in (_number(o.get(key)) for o in outputs) if v is not None]
        values = [v for v in values if not math.isnan(v)]
        if values:
            worse_is_low = METRICS[f"val_{key}"].direction == "higher"
            out[f"val_{key}"] = min(values) if worse_is_low else max(values)
    duration = _number(validation.get("duration_ms"))
    if duration is not None:
        out["duration_ms"] = duration
    oracle = result.get("oracle") or {}
    float_nodes = oracle.get("float_nodes")
    if isinstance(float_nodes, list):
        out["float_nodes"] = float(len(float_nodes))
    bound = _number(oracle.get("lower_bound_bytes"))
    if bound is not None:
        out["activations_lower_bound_bytes"] = bound
        if "activations_bytes" in out and bound > 0:
            out["activations_ratio"] = out["activations_bytes"] / bound
            error = out.get(PRECISION_PREFIX + "activations_bytes")
            if error:
                out[PRECISION_PREFIX + "activations_ratio"] = error / bound
    # Figures a backend measured that have no name of their own here (board timings
    # per epoch block: "board_ms:<node>"); they are stored and shown, never gated.
    for name, value in (result.get("extra_metrics") or {}).items():
        number = _number(value)
        if number is not None:
            out[str(name)] = number
    return out


# Pools the tool places outside the chip: STM32N6 hyperRAM (xSPI1), MCU external SDRAM.
_EXTERNAL_POOL_RE = re.compile(r"hyperram|xspi1|sdram|external|extram|psram", re.IGNORECASE)


def _external_activations(pools: Any) -> tuple[float, float] | None:
    """Activation bytes in external pools and their rounding; None without per-pool figures."""
    if not isinstance(pools, list) or not pools:
        return None
    total = error = 0.0
    for pool in pools:
        if not isinstance(pool, dict) or not _EXTERNAL_POOL_RE.search(str(pool.get("name", ""))):
            continue
        value = _number(pool.get("activations_bytes"))
        total += value or 0.0
        if value:
            error += _number(pool.get("precision_bytes")) or 0.0
    return total, error


def metric_applies(metric: str, stage: str) -> bool:
    """Whether ``stage`` is expected to measure ``metric``.

    Unknown metric names (for example from a user's hook) apply to every stage.
    """
    spec = METRICS.get(metric)
    if spec is None:
        return True
    family = stage_family(stage)
    return family in spec.stages


def stage_family(stage: str) -> str:
    """Map a stage name to the family that decides which metrics it produces."""
    if stage == "oracle":
        return "oracle"
    if stage.startswith("validate"):
        return "validate"
    return "toolchain"


def software_ops(result: Result) -> list[str]:
    """Operator types that ran in SW or hybrid epochs, as the Result lists them."""
    ops = result.get("software_ops") or []
    return [str(op) for op in ops]

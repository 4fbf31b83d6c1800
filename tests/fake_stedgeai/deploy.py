"""The fake compiler back end: epochs, buffers with lifetimes, and a memory planner.

Deterministic: the same model, version, options and faults always give the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .analysis import FUSABLE, SW_ONLY, Layer, ModelFacts, Tensor
from .profiles import MemPool, Profile
from .versions import ToolVersion

_SHAPE_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}
_COMPUTE = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
# Preference order of activation pools (fast NPU RAM first, external RAM last).
_ACT_ORDER = ["npuRAM5", "npuRAM4", "npuRAM3", "npuRAM6", "cpuRAM2", "cpuRAM1", "flexMEM"]


class CompileError(Exception):
    """The network does not fit; reported as an `E103(...)` line."""


@dataclass
class Epoch:
    """One epoch: its printed number, kind (hw, ec, sw, hybrid) and layers."""

    num: int
    kind: str
    layers: list[Layer]
    extra_ops: list[str] = field(default_factory=list)

    @property
    def ops(self) -> list[str]:
        """Operator types run in this epoch."""
        return [layer.op for layer in self.layers] + self.extra_ops


@dataclass
class Buffer:
    """A deployed buffer (activation or weight) with its placement."""

    id: int
    name: str
    size: int
    shape: list[int]
    quantized: bool
    is_param: bool
    start: int
    end: int
    pool: str = ""
    offset: int = 0
    tensor: Tensor | None = None


@dataclass
class PoolUse:
    """A pool with what was placed in it."""

    pool: MemPool
    id: int
    activations: int = 0
    weights: int = 0
    buffers: list[int] = field(default_factory=list)

    @property
    def used(self) -> int:
        """Bytes used (activations and weights)."""
        return self.activations + self.weights


@dataclass
class Deployment:
    """Everything the report writers need."""

    layers: list[Layer]
    epochs: list[Epoch]
    first_epoch: int
    buffers: list[Buffer]
    pools: list[PoolUse]
    inputs: list[Tensor]
    outputs: list[Tensor]
    activations_bytes: int
    weights_bytes: int
    io_bytes: list[int]
    npu: bool

    @property
    def counts(self) -> dict[str, int]:
        """Epoch counts by kind."""
        out = {"hw": 0, "ec": 0, "sw": 0, "hybrid": 0}
        for e in self.epochs:
            out[e.kind] += 1
        return out


def _fold_io(
    facts: ModelFacts, opts: dict[str, Any], fold_default: bool
) -> tuple[list[Layer], dict[str, Tensor], list[str], list[str]]:
    """Drop boundary Q/DQ when the deployed I/O is int8 (3.0+ default on the NPU)."""
    tensors = dict(facts.tensors)
    in_names, out_names = list(facts.inputs), list(facts.outputs)
    in_type, out_type = opts.get("input_data_type"), opts.get("output_data_type")
    fold_in = in_type in ("int8", "uint8") or (fold_default and in_type is None)
    fold_out = out_type in ("int8", "uint8") or (fold_default and out_type is None)
    layers: list[Layer] = []
    rename: dict[str, str] = {}
    for layer in facts.layers:
        if layer.boundary and layer.op == "QuantizeLinear" and fold_in:
            src, dst = layer.inputs[0], layer.outputs[0]
            rename[dst] = src
            q = tensors[dst]
            tensors[src] = Tensor(src, q.shape, True, q.scale, q.zero_point)
            continue
        if layer.boundary and layer.op == "DequantizeLinear" and fold_out:
            src, dst = layer.inputs[0], layer.outputs[0]
            out_names = [src if o == dst else o for o in out_names]
            continue
        layers.append(
            Layer(
                layer.index,
                layer.name,
                layer.op,
                [rename.get(i, i) for i in layer.inputs],
                layer.outputs,
                layer.weights,
                layer.macc,
                layer.quantized,
                layer.boundary,
            )
        )
    return layers, tensors, in_names, out_names


def _classify(layer: Layer, facts: ModelFacts, ver: ToolVersion, npu: bool) -> str:
    if not npu or layer.boundary or not layer.quantized or layer.op in SW_ONLY:
        return "sw"
    if layer.op == "PRelu" and ver.key < (2, 2, 0):
        return "sw"  # known bug: PReLU ran in software before 2.2
    return "hw"


def _epochs(
    layers: list[Layer],
    facts: ModelFacts,
    ver: ToolVersion,
    profile: Profile | None,
    faults: dict[str, Any],
    first: int,
    eec: bool = False,
) -> list[Epoch]:
    epochs: list[Epoch] = []
    for layer in layers:
        kind = _classify(layer, facts, ver, True)
        prev = epochs[-1] if epochs else None
        chained = prev is not None and bool(set(layer.inputs) & set(prev.layers[-1].outputs))
        if (
            prev
            and prev.kind == "hw"
            and kind == "hw"
            and chained
            and (layer.op in FUSABLE or layer.op in _SHAPE_OPS)
        ):
            prev.layers.append(layer)
            continue
        epochs.append(Epoch(0, kind, [layer]))
    hw = [e for e in epochs if e.kind == "hw"]
    if profile is not None and profile.has("--Oalt-sched") and ver.key[:2] == (2, 1):
        # known bug: the alternate scheduler turned non-convolution epochs into hybrid ones on 2.1
        picked = [e for e in hw if e.layers[0].op not in _COMPUTE] or hw[-1:]
        for e in picked:
            e.kind = "hybrid"
    n_hybrid = int(faults.get("hybrid_epochs", 0) or 0)
    for e in [e for e in epochs if e.kind == "hw"][::-1][:n_hybrid]:
        e.kind = "hybrid"
    extra = faults.get("extra_sw_epochs")
    if extra:
        names = list(extra) if isinstance(extra, list) else ["Transpose", "Reshape", "Gather"]
        count = len(extra) if isinstance(extra, list) else int(extra)
        step = max(1, len(epochs) // (count + 1))
        for k in range(count):
            pos = min(len(epochs), step * (k + 1) + k)
            epochs.insert(pos, Epoch(0, "sw", [], [names[k % len(names)]]))
    if eec or (profile is not None and profile.has("--enable-epoch-controller")):
        for e in epochs:
            if e.kind == "hw":
                e.kind = "ec"
    for i, e in enumerate(epochs):
        e.num = first + i
    return epochs


def _place(bufs: list[Buffer], pools: list[PoolUse], align: int, bounded: bool) -> None:
    """Greedy first-fit by decreasing size over lifetime-overlapping buffers."""
    placed: dict[str, list[Buffer]] = {p.pool.name: [] for p in pools}
    for buf in sorted(bufs, key=lambda b: (-b.size, b.start, b.id)):
        for use in pools:
            others = [o for o in placed[use.pool.name] if o.start <= buf.end and buf.start <= o.end]
            cands = sorted({0} | {-(-(o.offset + o.size) // align) * align for o in others})
            fit = next(
                (
                    c
                    for c in cands
                    if all(c + buf.size <= o.offset or o.offset + o.size <= c for o in others)
                ),
                None,
            )
            if fit is None or (bounded and fit + buf.size > use.pool.size):
                continue
            buf.pool, buf.offset = use.pool.name, fit
            placed[use.pool.name].append(buf)
            use.activations = max(use.activations, fit + buf.size)
            use.buffers.append(buf.id)
            break
        else:
            left = sum(b.size for b in bufs if not b.pool)
            raise CompileError(
                f"not enough memory in the memory pools: total bytes left unallocated={left}"
            )


def deploy(
    facts: ModelFacts,
    ver: ToolVersion,
    opts: dict[str, Any],
    profile: Profile | None,
    faults: dict[str, Any],
) -> Deployment:
    """Compile ``facts`` for the NPU (``profile`` given) or for a Cortex-M (``profile`` None)."""
    npu = profile is not None
    fold = npu and ver.key >= (3, 0, 0)
    layers, tensors, in_names, out_names = _fold_io(facts, opts, fold)
    first = 2 if ver.key >= (4, 0, 0) else 1
    if npu:
        epochs = _epochs(layers, facts, ver, profile, faults, first, bool(opts.get("eec")))
    else:
        epochs = [Epoch(i + 1, "sw", [layer]) for i, layer in enumerate(layers)]
    where: dict[int, int] = {id(layer): e.num for e in epochs for layer in e.layers}
    last = epochs[-1].num + 1 if epochs else first
    inflate = float(faults.get("inflate_activations", 1) or 1)

    prod: dict[str, int] = {n: first - 1 for n in in_names}
    cons: dict[str, int] = {n: last for n in out_names}
    for layer in layers:
        for o in layer.outputs:
            prod.setdefault(o, where[id(layer)])
        for i in layer.inputs:
            cons[i] = max(cons.get(i, 0), where[id(layer)])
    skip_in = opts.get("no_inputs_allocation", False)
    skip_out = opts.get("no_outputs_allocation", False)
    bufs: list[Buffer] = []
    io = [0, 0]
    for name, t in tensors.items():
        if name not in prod or (name not in cons and name not in out_names):
            continue
        start, end = prod[name], cons.get(name, prod[name])
        if npu and start == end and name not in out_names and name not in in_names:
            continue  # produced and consumed inside one epoch: streamed, never stored
        size = max(1, int(t.nbytes * inflate))
        if (name in in_names and skip_in) or (name in out_names and skip_out):
            io[0 if name in in_names else 1] += t.nbytes
            continue
        bufs.append(
            Buffer(len(bufs) + 1, name, size, t.shape, t.quantized, False, start, end, tensor=t)
        )

    wfactor = float(faults.get("weights_factor", 1) or 1)
    wbufs = [
        Buffer(
            0,
            w.name,
            max(1, int(w.nbytes * wfactor)),
            w.shape,
            w.quantized,
            True,
            first - 2 if first > 1 else 0,
            last,
        )
        for w in facts.weights.values()
    ]
    if npu:
        assert profile is not None
        uses = [PoolUse(p, i + 1) for i, p in enumerate(profile.pools)]
        rank = {n: i for i, n in enumerate(_ACT_ORDER)}
        act_pools = sorted(
            [u for u in uses if u.pool.rights == "ACC_WRITE" and u.pool.size > 0],
            key=lambda u: (rank.get(u.pool.name, 99), u.pool.address),
        )
        _place(bufs, act_pools, 8, True)
        read = [u for u in uses if u.pool.rights == "ACC_READ" and u.pool.size > 0]
        wpool = read[0] if read else (act_pools[0] if act_pools else uses[0])
    else:
        heap = MemPool("heap_overlay_pool", "", 0, -1, "ACC_WRITE", "LOW", "HIGH", False)
        wmem = MemPool("weights_array", "", 0, -1, "ACC_READ", "UNDEF", "UNDEF", False)
        uses = [PoolUse(heap, 0), PoolUse(wmem, 1)]
        _place(bufs, uses[:1], 4, False)
        wpool = uses[1]
    offset = wpool.activations
    for b in wbufs:
        b.id = len(bufs) + 1
        b.pool, b.offset = wpool.pool.name, offset
        offset += -(-b.size // 8) * 8 if npu else b.size
        wpool.buffers.append(b.id)
        bufs.append(b)
    wpool.weights = sum(b.size for b in wbufs)
    acts = sum(u.activations for u in uses)
    return Deployment(
        layers,
        epochs,
        first,
        bufs,
        uses,
        [tensors[n] for n in in_names],
        [tensors[n] for n in out_names],
        acts,
        wpool.weights,
        io,
        npu,
    )

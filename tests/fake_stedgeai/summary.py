"""`Exec/report summary (<cmd>)` and the `Model name - ...` table."""

from __future__ import annotations

from .context import Run
from .text import human, io_row, n, oshape, short, table


def exec_summary(run: Run) -> list[str]:
    """The key/value summary block (MCU reports; N6 console)."""
    f, d = run.facts, run.dep
    opts = "allocate-inputs, allocate-outputs"
    if run.opts.get("split_weights"):
        opts += ", split-weights"
    if run.st_ai_api:
        opts += ", use-lite-runtime, use-st-ai"
    top = [
        ("model file", str(f.path)),
        ("type", "onnx"),
        ("c_name", run.name),
        ("compression", run.opts.get("compression") or "lossless"),
        ("options", opts),
        ("optimization", run.opts.get("optimization") or "balanced"),
        ("target/series", run.series),
    ]
    if run.opts.get("memory_pool"):
        top.append(("memory pool", str(run.opts["memory_pool"])))
    top += [("workspace dir", str(run.workspace)), ("output dir", str(run.output))]
    if run.command == "validate" and run.opts.get("valinput"):
        top.append(("vinput files", ", ".join(run.opts["valinput"])))
    fmt = "ss/sa per channel" if f.qdq else "float"
    top += [
        ("model_fmt", fmt),
        ("model_name", f.name),
        ("model_hash", f"0x{f.md5}"),
        ("params #", f"{n(f.params)} items ({human(f.float_weights_bytes)})"),
    ]
    ins, outs = d.inputs, d.outputs
    mid: list[tuple[str, str]] = []
    for i, t in enumerate(ins):
        mid.append((f"input {i + 1}/{len(ins)}", io_row(t, t.shape)))
    if len(ins) > 1:
        mid.append(("inputs (total)", f"{sum(t.nbytes for t in ins)} Bytes"))
    for i, t in enumerate(outs):
        mid.append((f"output {i + 1}/{len(outs)}", io_row(t, t.shape)))
    segs = sum(1 for u in d.pools if u.activations)
    weights = f"{n(d.weights_bytes)} B ({human(d.weights_bytes)}) (1 segment)"
    if f.qdq and f.float_weights_bytes:
        delta = d.weights_bytes - f.float_weights_bytes
        weights += f" / {n(delta)}({100.0 * delta / f.float_weights_bytes:.1f}%) vs float model"
    a, (i_b, o_b) = d.activations_bytes, d.io_bytes
    mid += [
        ("macc", n(f.macc)),
        ("weights (ro)", weights),
        ("activations (rw)", f"{n(a)} B ({human(a)}) ({segs} segment{'s' if segs > 1 else ''}) *"),
        (
            "ram (total)",
            f"{n(a + i_b + o_b)} B ({human(a + i_b + o_b)}) = {n(a)} + {n(i_b)} + {n(o_b)}",
        ),
    ]
    width = max(len(v) for _, v in top + mid) + 22
    rows = [f"{k:<19}:   {v}".ljust(width) for k, v in top]
    rows2 = [f"{k:<19}:   {v}".ljust(width) for k, v in mid]
    rule = "-" * width
    note = (
        "(*) 'input'/'output' buffers can be used from the activations buffer"
        if run.ver.key < (2, 2, 0)
        else "(*) 'input'/'output' buffers are allocated in the activations buffer"
    )
    return [f"Exec/report summary ({run.command})", rule, *rows, rule, *rows2, rule, note, ""]


def model_table(run: Run) -> list[str]:
    """`Model name - <name>` and its table; the c_* columns only on the MCU path."""
    f, d = run.facts, run.dep
    mcu = not run.npu
    rows: list[list[str | list[str]]] = []
    for t in d.inputs:
        row: list[str | list[str]] = [
            "0",
            f"{short(t.name)} ({'Input, ' if mcu else ''})",
            oshape(t.shape),
            "",
            "",
            "",
        ]
        rows.append(row + (["|", "", "", ""] if mcu else []))
    names = {o: layer.name for layer in d.layers for o in layer.outputs}
    for k, layer in enumerate(d.layers):
        w = [f.weights[x] for x in layer.weights if x in f.weights]
        items = sum(x.items for x in w)
        psize = f"{n(items)}/{n(sum(x.nbytes for x in w))}" if w else ""
        out_t = f.tensors.get(layer.outputs[0]) if layer.outputs else None
        shape = out_t.shape if out_t else [1]
        kind = f"{layer.op}, {layer.op}" if mcu else layer.op
        conn = [short(names.get(i, i)) for i in layer.inputs] or [""]
        row = [
            str(layer.index + 1),
            f"{short(layer.name)} ({kind})",
            oshape(shape),
            psize,
            n(layer.macc) if layer.macc else "",
            conn,
        ]
        if mcu:
            last = k == len(d.layers) - 1
            row += ["|", "", "", f"{_c_type(layer.op)}_[{'o][' if last else ''}{k}]"]
        rows.append(row)
    heads = [
        "m_id",
        "layer (type,original)" if mcu else "layer (original)",
        "oshape",
        "param/size",
        "macc",
        "connected to",
    ]
    if mcu:
        heads += ["|", "c_size", "c_macc", "c_type"]
    out = [f"Model name - {f.name}"] + table(heads, rows, right=(4, 5), groups=True)
    wts = f.float_weights_bytes if f.qdq else f.weights_bytes
    if mcu:
        out.append(
            f"model/c-model: macc={n(f.macc)}/{n(f.macc)}  weights={n(wts)}/"
            f"{n(d.weights_bytes)}  activations=--/{n(d.activations_bytes)} "
            f"io=--/{n(sum(d.io_bytes))}"
        )
    else:
        out.append(f"model: macc={n(f.macc)} weights={n(wts)} activations=-- io=--")
    return out


def _c_type(op: str) -> str:
    """C layer kind of an ONNX operator (MCU runtime naming)."""
    return {
        "Conv": "Conv2D",
        "Gemm": "Dense",
        "MatMul": "Dense",
        "Relu": "Nonlinearity",
        "Sigmoid": "Nonlinearity",
        "Tanh": "Nonlinearity",
        "Clip": "Nonlinearity",
        "PRelu": "Nonlinearity",
        "LeakyRelu": "Nonlinearity",
        "Elu": "Nonlinearity",
        "Add": "Eltwise",
        "Mul": "Eltwise",
        "Sub": "Eltwise",
        "Concat": "Concat",
        "QuantizeLinear": "Conversion",
        "DequantizeLinear": "Conversion",
        "MaxPool": "Pool",
        "AveragePool": "Pool",
        "GlobalAveragePool": "Pool",
        "Softmax": "Nonlinearity",
        "Reshape": "Reshape",
        "Flatten": "Reshape",
        "Transpose": "Transpose",
    }.get(op, op)


c_type = _c_type

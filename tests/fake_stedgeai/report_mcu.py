"""Cortex-M (c-graph style) report sections: C-graph summary, arrays, layers, complexity."""

from __future__ import annotations

from .context import Run
from .summary import c_type
from .text import n, table


def _arrays(run: Run) -> list[tuple[str, int, int, str, str, str]]:
    """(name, items, bytes, domain, c-type, comment) sorted by name, as the tool lists them."""
    d, f = run.dep, run.facts
    ins = {t.name for t in d.inputs}
    outs = {t.name for t in d.outputs}
    arrays = []
    for b in d.buffers:
        items = f.weights[b.name].items if b.is_param else (b.tensor.elems if b.tensor else b.size)
        ctyp = ("const " if b.is_param else "") + ("int8_t" if b.quantized else "float")
        dom = "weights/weights" if b.is_param else "activations/**default**"
        com = "/input" if b.name in ins else "/output" if b.name in outs else ""
        suffix = "" if b.is_param else "_output"
        arrays.append((b.name + suffix, items, b.size, dom, ctyp, com))
    return sorted(arrays)


def mcu_sections(run: Run, validate_lines: list[str] | None = None) -> list[str]:
    """Sections after the model table; ``validate_lines`` go after the C-layers (validate)."""
    d, f = run.dep, run.facts
    arrays = _arrays(run)
    index = {a[0]: i for i, a in enumerate(arrays)}
    out = [
        "",
        "",
        "",
        "Generated C-graph summary",
        "-" * 120,
        f"{'model name':<22}: {f.name}",
        f"{'c-name':<22}: {run.name}",
        f"{'c-node #':<22}: {len(d.layers)}",
        f"{'c-array #':<22}: {len(arrays)}",
        f"{'activations size':<22}: {d.activations_bytes} (1 segment)",
        f"{'weights size':<22}: {d.weights_bytes} (1 segment)",
        f"{'macc':<22}: {f.macc}",
        f"{'inputs':<22}: {[t.name + '_output' for t in d.inputs]}",
        f"{'outputs':<22}: {[t.name + '_output' for t in d.outputs]}",
        "",
        f"C-Arrays ({len(arrays)})",
    ]
    out += table(
        ["c_id", "name (*_array)", "item/size", "domain/mem-pool", "c-type", "comment"],
        [[str(i), a[0], f"{a[1]}/{a[2]}", a[3], a[4], a[5]] for i, a in enumerate(arrays)],
    )
    rows: list[list[str | list[str]]] = []
    for k, layer in enumerate(d.layers):
        rom = sum(f.weights[w].nbytes for w in layer.weights if w in f.weights)
        tens = [f"I: {i}_output" for i in layer.inputs] + [f"W: {w}" for w in layer.weights]
        tens += [f"O: {o}_output" for o in layer.outputs[:1]]
        refs = [
            str(index.get(t.split(": ", 1)[1], index.get(t.split(": ", 1)[1][:-7], "")))
            for t in tens
        ]
        rows.append(
            [
                str(k),
                layer.name,
                str(layer.index + 1),
                c_type(layer.op),
                str(layer.macc),
                str(rom),
                tens,
                [f"({r})" for r in refs],
            ]
        )
    out += ["", f"C-Layers ({len(d.layers)})"]
    out += table(
        [
            "c_id",
            "name (*_layer)",
            "id",
            "layer_type",
            "macc",
            "rom",
            "tensors",
            "shape (array id)",
        ],
        rows,
        groups=True,
    )
    out += [""] + (validate_lines or []) + ["", "", "Number of operations per c-layer"]
    kinds = []
    for k, layer in enumerate(d.layers):
        q = "s8" if layer.quantized else "f32"
        kind = f"smul_{q}_{q}" if layer.op in ("Conv", "Gemm", "MatMul") else f"op_{q}_{q}"
        kinds.append((k, layer, kind))
    ops = table(
        ["c_id", "m_id", "name (type)", "#op", "type"],
        [
            [
                str(k),
                str(layer.index + 1),
                f"{layer.name} ({c_type(layer.op)})",
                n(layer.macc),
                kind,
            ]
            for k, layer, kind in kinds
        ],
        right=(3, 4),
    )
    end = ops[1].index("#op") + 3
    out += ops + [f"total{n(f.macc):>{end - 5}} ", "", "Number of operation types"]
    totals: dict[str, int] = {}
    for _, layer, kind in kinds:
        totals[kind] = totals.get(kind, 0) + layer.macc
    macc = max(1, f.macc)
    out += table(
        ["operation type", "#", "%"],
        [[k, n(v), f"{100.0 * v / macc:.1f}%"] for k, v in totals.items()],
        right=(1, 2),
    )[:-1]
    out += ["", "Complexity report (model)"]
    rom_total = max(1, d.weights_bytes)
    crow = []
    roms = [sum(f.weights[w].nbytes for w in la.weights if w in f.weights) for la in d.layers]
    top_m = max([la.macc for la in d.layers] + [1]) / macc
    top_r = max(roms + [1]) / rom_total
    for k, layer in enumerate(d.layers):
        pm, pr = 100.0 * layer.macc / macc, 100.0 * roms[k] / rom_total
        crow.append(
            [
                str(layer.index + 1),
                layer.name,
                f"{'|' * max(1, round(16 * pm / 100 / top_m)):<16} {pm:5.1f}%",
                f"{'|' * max(1, round(16 * pr / 100 / top_r)):<16} {pr:5.1f}%",
                f"[{k}]",
            ]
        )
    out += table(["m_id", "name", "c_macc", "c_rom", "c_id"], crow)
    out.append(
        f"macc={n(f.macc)} weights={n(d.weights_bytes)} act={n(d.activations_bytes)} "
        f"ram_io={n(sum(d.io_bytes))}"
    )
    return out


def generated_files(run: Run, names: list[str]) -> list[str]:
    """`Generated files (N)` with absolute paths."""
    paths = [str(run.output / nm) for nm in names]
    width = max(len(p) for p in paths) if paths else 10
    return [
        "",
        "",
        f"Generated files ({len(paths)})",
        "-" * width + " ",
        *[p.ljust(width) + " " for p in paths],
    ]

"""Text helpers shared by the report writers: number formats, dashed tables, header lines."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from .analysis import Tensor

RULE = "-" * 84
DOUBLE = "=" * 84


def n(value: int) -> str:
    """`1,234,567`."""
    return f"{value:,}"


def human(nbytes: float) -> str:
    """`512 B`, `107.41 KiB`, `3.50 MiB` as in the summary rows."""
    if nbytes < 1024:
        return f"{int(nbytes)} B"
    if nbytes < 2 * 1024 * 1024:
        return f"{nbytes / 1024:.2f} KiB"
    return f"{nbytes / 1024 / 1024:.2f} MiB"


def io_size(nbytes: int) -> str:
    """`784 Bytes`, `147.00 KBytes`."""
    return f"{nbytes} Bytes" if nbytes < 1024 else f"{nbytes / 1024:.2f} KBytes"


def mem(nbytes: int) -> str:
    """Neural-ART memory figure: 10 wide, 3 decimals, unit `B`, `kB` or `MB`."""
    if nbytes == 0:
        return f"{0:>10d}  B"
    if nbytes < 1024:
        return f"{nbytes:>10d}  B"
    if nbytes < 1024 * 1024:
        return f"{nbytes / 1024:>10.3f} kB"
    return f"{nbytes / 1024 / 1024:>10.3f} MB"


def header(banner: str, argv: Sequence[str]) -> list[str]:
    """The 3-line report header and its blank line."""
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return [
        banner,
        f"Created date          : {when}",
        f"Parameters            : {' '.join(argv)}",
        "",
    ]


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str | list[str]]],
    right: Sequence[int] = (),
    groups: bool = False,
) -> list[str]:
    """A dashed table; a cell may be a list (continuation lines); ``groups`` rules each row."""
    widths = [max(len(h), 6 if i == 0 else 0) for i, h in enumerate(headers)]
    for row in rows:
        for i, cell in enumerate(row):
            for part in cell if isinstance(cell, list) else [cell]:
                widths[i] = max(widths[i], len(part))

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        ]
        return " ".join(out) + " "

    rule = " ".join("-" * w for w in widths) + " "
    out = [rule, line(headers), rule]
    for row in rows:
        depth = max(len(c) if isinstance(c, list) else 1 for c in row)
        for k in range(depth):
            cells = []
            for c in row:
                part = c if isinstance(c, str) else (c[k] if k < len(c) else "")
                cells.append(part if k == 0 or not isinstance(c, str) else "")
            out.append(line(cells))
        if groups:
            out.append(rule)
    if not groups:
        out.append(rule)
    return out


def short(name: str, width: int = 30) -> str:
    """Long layer names abbreviated the tool's way (`StatefulPartitione..eOp0_const`)."""
    return name if len(name) <= width else f"{name[:18]}..{name[-10:]}"


def oshape(shape: list[int]) -> str:
    """`[b:1,h:20,w:50,c:16]` from an NCHW (or NC, NCL) shape."""
    if len(shape) == 4:
        b, c, h, w = shape
        return f"[b:{b},h:{h},w:{w},c:{c}]"
    if len(shape) == 3:
        b, c, h = shape
        return f"[b:{b},h:{h},c:{c}]"
    if len(shape) == 2:
        return f"[b:{shape[0]},c:{shape[1]}]"
    return "[" + ",".join(f"b:{d}" if i == 0 else f"c:{d}" for i, d in enumerate(shape)) + "]"


def ctype(t: Tensor) -> str:
    """`int8` / `f32`."""
    return "int8" if t.quantized else "f32"


def io_row(t: Tensor, shape: list[int]) -> str:
    """`'input', int8(1x1x28x28), 784 Bytes, QLinear(0.003921163,-128,int8), activations`."""
    dims = "x".join(str(d) for d in shape)
    q = f", QLinear({t.scale:.9f},{t.zero_point},int8)" if t.quantized and t.scale else ""
    return f"'{t.name}', {ctype(t)}({dims}), {io_size(t.nbytes)}{q}, activations"

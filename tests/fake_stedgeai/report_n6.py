"""STM32N6 Neural-ART report sections (generate/analyze with --st-neural-art)."""

from __future__ import annotations

from .context import Run
from .deploy import Epoch
from .text import DOUBLE, RULE, mem


def compilation(run: Run) -> list[str]:
    """`Compilation details`."""
    return [
        "Compilation details",
        RULE,
        f"Compiler version: {run.ver.compiler}",
        f"Compiler arguments: {run.compiler_args}",
        DOUBLE,
    ]


def _pct(part: int, whole: int) -> str:
    return f"({100.0 * part / whole if whole > 0 else 0.0:>6.2f} % used)"


def memory_usage(run: Run) -> list[str]:
    """`Memory usage information` and `Used memory ranges`."""
    title = "Memory usage information"
    if run.ver.key >= (2, 1, 0):
        title += "  (input/output buffers are included in activations)"
    uses = sorted(run.dep.pools, key=lambda u: u.pool.address)
    lines = [title, RULE]
    for u in uses:
        p = u.pool
        rng = f"[0x{p.address:08X} - 0x{p.address + p.size:08X}]"
        lines.append(
            f"\t{p.name:<10} {rng}: {mem(u.used)} / {mem(p.size)}  {_pct(u.used, p.size)} -- "
            f"weights: {mem(u.weights)} {_pct(u.weights, p.size)}  activations: "
            f"{mem(u.activations)} {_pct(u.activations, p.size)}"
        )
    tw = sum(u.weights for u in uses)
    ta = sum(u.activations for u in uses)
    lines += [
        "---",
        "Total:"
        + " " * 40
        + mem(tw + ta)
        + " " * 34
        + "-- weights: "
        + mem(tw)
        + " " * 18
        + "activations: "
        + mem(ta)
        + " " * 19,
        DOUBLE,
        "",
        "",
        "Used memory ranges",
        RULE,
    ]
    for u in uses:
        if u.used:
            p = u.pool
            lines.append(
                f"\t{p.name:<10} [0x{p.address:08X} - 0x{p.address + p.size:08X}]: "
                f"0x{p.address:08X}-0x{p.address + u.used:08X}"
            )
    lines.append(DOUBLE)
    return lines


def ec_blobs(epochs: list[Epoch]) -> int:
    """Number of epoch-controller blobs: one per run of consecutive EC epochs."""
    count, prev = 0, ""
    for e in epochs:
        if e.kind == "ec" and prev != "ec":
            count += 1
        prev = e.kind
    return count


def epochs_v2(run: Run) -> list[str]:
    """2.x list: `epoch 1       HW`, `epoch 2      -SW-   (  op  )`, `epoch 76      ??`."""
    eps = run.dep.epochs
    sw = sum(1 for e in eps if e.kind == "sw")
    out = [
        "Epochs details",
        RULE,
        f"Total number of epochs: {len(eps)} of which {sw} implemented in software",
        "---",
        "epoch ID   HW/SW/EC Operation (SW only)",
    ]
    label = {"hw": "HW", "ec": "EC", "sw": "-SW-", "hybrid": "??"}
    for e in eps:
        line = f"epoch {e.num:<4}{label[e.kind]:^10}"
        if e.kind == "sw":
            line += f"({e.ops[0]:^20})"
        out.append(line)
    out.append(DOUBLE + " ")
    return out


def ec_runs(epochs: list[Epoch]) -> list[list[Epoch]]:
    """Runs of consecutive EC epochs: one epoch-controller blob each (the 2.0.0 c_info names
    blob "_ec_blob_1" for epochs 1.., "_ec_blob_21" for the run starting at epoch 21)."""
    runs: list[list[Epoch]] = []
    prev = ""
    for e in epochs:
        if e.kind == "ec":
            if prev == "ec":
                runs[-1].append(e)
            else:
                runs.append([e])
        prev = e.kind
    return runs


def epochs_v3(run: Run) -> list[str]:
    """3.x/4.x boxed table with the SW / hybrid / HW counts; an EC blob is one row
    ``| epochs    2 -> 6 |  EC  |`` (real 4.0.0 Dev Cloud and 4.0.1 AI Studio reports)."""
    eps = run.dep.epochs
    c = run.dep.counts
    out = [
        "Epochs details",
        RULE,
        f"{'Total number of epochs':<51}{len(eps):>4}",
        f"{'>> pure software (SW) epochs':<51}{c['sw']:>4}",
        f"{'>> hybrid epochs (using both software and hardware)':<51}{c['hybrid']:>4}",
        (f"{'>> pure hardware (HW or EC) epochs':<51}{c['hw'] + c['ec']:>4}  (implemented in "
         f"{ec_blobs(eps)} epoch controller blobs/meta epochs)"),
        "---",
    ]
    label = {"hw": "HW", "ec": "EC", "sw": "SW", "hybrid": "Hybrid"}
    rows: list[tuple[str, str, str]] = []
    for e in eps:
        if e.kind == "ec":
            if rows and rows[-1][1] == "EC":
                continue  # the blob's row is written at its first epoch
            blob = next(r for r in ec_runs(eps) if r[0] is e)
            rows.append((f"epochs {blob[0].num:>4} -> {blob[-1].num}", "EC", ""))
            continue
        details = ", ".join(dict.fromkeys(e.ops)) if e.kind in ("sw", "hybrid") else ""
        rows.append((f"epoch_{e.num}", label[e.kind], details))
    w0 = max([len("epoch ID")] + [len(r[0]) for r in rows])
    w1 = max([len("Type")] + [len(r[1]) for r in rows]) + 2
    w2 = max([len("Details")] + [len(r[2]) for r in rows])
    border = f"+{'-' * (w0 + 2)}+{'-' * w1}+{'-' * (w2 + 2)}+"
    out += [border, f"| {'epoch ID':<{w0}} |{'Type':^{w1}}| {'Details':<{w2}} |", border]
    out += [f"| {a:<{w0}} |{b:^{w1}}| {d:<{w2}} |" for a, b, d in rows]
    out += [border, DOUBLE]
    return out


def n6_sections(run: Run) -> list[str]:
    """Everything after the model table."""
    body = ["", "", "", "", ""] + compilation(run) + [""] + memory_usage(run) + [""]
    body += epochs_v3(run) if run.ver.key >= (3, 0, 0) else epochs_v2(run)
    return body

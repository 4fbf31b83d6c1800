"""c_info graph parts: node records, Neural-ART epoch nodes, EC blobs, access/power estimates."""

from __future__ import annotations

from typing import Any

from .context import Run
from .deploy import Epoch

_MAPPING = {"hw": "NODE_HW", "ec": "NODE_EC", "sw": "NODE_SW", "hybrid": "NODE_SW_HW"}
_UNITS = {
    "Conv": "CONV_ACC_V2",
    "Gemm": "CONV_ACC_V2",
    "MatMul": "CONV_ACC_V2",
    "MaxPool": "POOL_ACC_V2",
    "AveragePool": "POOL_ACC_V2",
    "GlobalAveragePool": "POOL_ACC_V2",
}


def make_node(
    run: Run,
    nid: int,
    name: str,
    mapping: str,
    op: str,
    inputs: list[int],
    outputs: list[int],
    subs: list[dict[str, Any]],
    macc: int = 0,
    attrs: dict[str, Any] | None = None,
    sw: list[str] | None = None,
) -> dict[str, Any]:
    """One `graphs[0].nodes[]` record (`type` from 3.0, `description` before)."""
    node: dict[str, Any] = {
        "attributes": attrs or {},
        "id": nid,
        "inputs": inputs,
        "macc": macc,
        "mapping": mapping,
        "name": name,
        "original_nodes": [],
        "outputs": outputs,
        "scratchs": [],
        "subgraph_nodes": subs,
        "sw_functions": sw or [],
    }
    if run.ver.key >= (3, 0, 0):
        node["type"] = op
    else:
        node["description"] = f"Node kind={op}" if op and run.npu and subs == [] else op
    return node


def epoch_nodes(run: Run, ids: dict[str, int]) -> tuple[list[dict[str, Any]], list[int]]:
    """Top-level epoch nodes (params pseudo-epoch, epochs, return) and their ids."""
    d = run.dep
    v3 = run.ver.key >= (3, 0, 0)
    nodes: list[dict[str, Any]] = []
    nid = 1
    top_ids: list[int] = []

    def add(
        name: str,
        mapping: str,
        subs: list[tuple[str, str, str, list[int], list[int]]],
        ins: list[int],
        outs: list[int],
    ) -> None:
        nonlocal nid
        me = nid
        nid += 1
        sub_nodes = []
        for sname, smap, sop, si, so in subs:
            attrs = {"HWUnit": f"{_UNITS.get(sop, 'ARITH_ACC_V2')} 0"} if smap == "NODE_HW" else {}
            sub_nodes.append(make_node(run, nid, sname, smap, sop, si, so, [], attrs=attrs))
            nid += 1
        nodes.append(make_node(run, me, name, mapping, "", ins, outs, sub_nodes))
        top_ids.append(me)

    no_x = "NODE_NO_X" if v3 else "NODE_HW"
    add("epoch_0", no_x, [(w, no_x, "Param", [], []) for w in run.facts.weights], [], [])
    if d.first_epoch == 2:
        add("epoch_1", "NODE_NO_X", [("Transpose_1", "NODE_NO_X", "Transpose", [], [])], [], [])
    sw_map = "NODE_SW_INTEGER" if v3 else "NODE_SW"
    blob_of = {e.num: blob for blob in _ec_runs(d.epochs) for e in blob}
    for e in d.epochs:
        if v3 and e.kind == "ec":
            # 3.0+: ONE NODE_EC node per epoch-controller blob, named after the blob and
            # holding the operators of all its epochs (2.x kept one node per epoch)
            blob = blob_of[e.num]
            if e is not blob[0]:
                continue
            subs = [
                (
                    layer.name,
                    "NODE_HW",
                    layer.op,
                    [ids[i] for i in layer.inputs if i in ids]
                    + [ids[w] for w in layer.weights if w in ids],
                    [ids[o] for o in layer.outputs if o in ids],
                )
                for member in blob
                for layer in member.layers
            ]
            ins = sorted({i for sub in subs for i in sub[3]})
            outs = sorted({o for sub in subs for o in sub[4]})
            add(f"_ec_blob_{e.num}", "NODE_EC", subs, ins, outs)
            continue
        subs = []
        for k, layer in enumerate(e.layers):
            if e.kind == "sw" or (e.kind == "hybrid" and k == 0):
                smap = sw_map if layer.quantized else "NODE_SW"
            else:
                smap = "NODE_HW"
            subs.append(
                (
                    layer.name,
                    smap,
                    layer.op,
                    [ids[i] for i in layer.inputs if i in ids]
                    + [ids[w] for w in layer.weights if w in ids],
                    [ids[o] for o in layer.outputs if o in ids],
                )
            )
        for op in e.extra_ops:
            subs.append((f"{op}_inserted_{e.num}", sw_map, op, [], []))
        ins = sorted({i for s in subs for i in s[3]})
        outs = sorted({o for s in subs for o in s[4]})
        add(f"epoch_{e.num}", _MAPPING[e.kind], subs, ins, outs)
    end = (d.epochs[-1].num + 1) if d.epochs else d.first_epoch
    ret = "NODE_NO_X" if v3 else "NODE_SW"
    outs = [ids[t.name] for t in d.outputs if t.name in ids]
    add(f"epoch_{end}", ret, [("__NN__RETURN__", ret, "Return", outs, [])], outs, [])
    return nodes, top_ids


def _ec_runs(epochs: list[Epoch]) -> list[list[Epoch]]:
    """Runs of consecutive EC epochs: one blob each."""
    runs: list[list[Epoch]] = []
    for e in epochs:
        if e.kind == "ec" and runs and runs[-1][-1].num == e.num - 1 and runs[-1][-1].kind == "ec":
            runs[-1].append(e)
        elif e.kind == "ec":
            runs.append([e])
    return runs


def ec_blobs(epochs: list[Epoch]) -> list[dict[str, Any]]:
    """`ec_blobs_info`: one blob per run of consecutive EC epochs.

    Every real file in ../shared has ``"ec_blobs_info": []`` (no EC run); the shape of an
    entry is ours (``name`` as the blob node, ``epochs`` its epoch numbers).
    """
    return [
        {"id": k, "name": f"_ec_blob_{run[0].num}", "epochs": [e.num for e in run]}
        for k, run in enumerate(_ec_runs(epochs), start=1)
    ]


def estimates(
    run: Run, nodes: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`memory_accesses` and `power_estimates` keyed by epoch node id."""
    sizes = {b.id: (b.size, b.pool) for b in run.dep.buffers}
    pool_ids = {u.pool.name: u.id for u in run.dep.pools}
    macc = {f"epoch_{e.num}": sum(layer.macc for layer in e.layers) for e in run.dep.epochs}
    accesses, power = [], []
    for node in nodes:
        per: dict[int, list[int]] = {}
        for key, bids in (("r", node["inputs"]), ("w", node["outputs"])):
            for bid in bids:
                size, pool = sizes.get(bid, (0, ""))
                slot = per.setdefault(pool_ids.get(pool, 0), [0, 0])
                slot[0 if key == "r" else 1] += size
        for mp, (r, w) in sorted(per.items()):
            accesses.append(
                {
                    "mpool_id": mp,
                    "node_id": node["id"],
                    "read_cycles": r // 8,
                    "reads": r,
                    "write_cycles": w // 8,
                    "writes": w,
                }
            )
        cycles = macc.get(node["name"], 0) // 288
        power.append(
            {
                "average_acc_power_mw": 40 if cycles else 0,
                "average_memory_power_mw": 12 if cycles else 0,
                "compute_cycles": cycles,
                "max_cycles": cycles,
                "node_id": node["id"],
                "ops": macc.get(node["name"], 0),
            }
        )
    return accesses, power

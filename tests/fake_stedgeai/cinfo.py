"""`<name>_c_info.json` (json_schema_version 2.0) for the NPU and the Cortex-M paths."""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
from typing import Any

from .analysis import Tensor
from .cinfo_graph import ec_blobs, epoch_nodes, estimates, make_node
from .context import Run
from .deploy import Buffer, PoolUse
from .summary import c_type


def _buffer(b: Buffer, run: Run, pool_ids: dict[str, int]) -> dict[str, Any]:
    t = b.tensor
    q = b.quantized
    intq: dict[str, Any] = {}
    if q and t is not None and t.scale is not None:
        intq = {"axis": -1, "offsets": [t.zero_point or 0], "scales": [round(t.scale, 9)]}
    elif q and b.is_param:
        intq = {"axis": 1, "offsets": [0], "scales": [0.0078125]}
    if run.npu:
        fmt = "STAI_FORMAT_S8" if q else "STAI_FORMAT_FLOAT32"
        flags, name = "", b.name
    else:
        fmt = "STAI_FORMAT_S8" if q else "STAI_FORMAT_FLOAT"
        flags = (
            "STAI_FLAG_WEIGHTS|STAI_FLAG_CONST|STAI_FLAG_PREALLOCATED"
            if b.is_param
            else "STAI_FLAG_PREALLOCATED|STAI_FLAG_ACTIVATIONS"
        )
        name = f"{b.name}_array" if b.is_param else f"{b.name}_output_array"
    return {
        "alignment": 8 if run.npu else 4,
        "batch": b.shape[1] if len(b.shape) > 1 else 1,
        "channel_first": True,
        "channel_last": len(b.shape) <= 2,
        "epochs": {"end": b.end, "start": b.start},
        "flags": flags,
        "format": fmt,
        "id": b.id,
        "intq": intq,
        "is_param": b.is_param,
        "mpool_id": pool_ids.get(b.pool, 0),
        "name": name,
        "nbits": 8 if q else 32,
        "offset_start": b.offset,
        "qmn": {"m": 7, "n": 0, "sign": 1} if q else {},
        "shape": list(b.shape),
        "shape_map": [],
        "size_bytes": b.size,
    }


def _pool(u: PoolUse, run: Run) -> dict[str, Any]:
    p = u.pool
    if not run.npu:
        return {
            "address": "NULL" if p.rights == "ACC_WRITE" else f"s_{run.name}_weights_array_u64",
            "alignment": 4 if p.rights == "ACC_WRITE" else 0,
            "attributes": {
                "latency": p.latency,
                "score": 768 if p.rights == "ACC_WRITE" else 0,
                "throughput": p.throughput,
            },
            "buffers": u.buffers,
            "id": u.id,
            "name": p.name,
            "offset_start": 0,
            "persistent": p.rights != "ACC_WRITE",
            "rights": p.rights,
            "size_bytes": -1,
            "subpools": [],
            "used_size_bytes": u.used,
            "user_allocated": False,
            "virtual": False,
        }
    fast = p.throughput == "HIGH"
    out = {
        "address": str(p.address),
        "alignment": 8,
        "attributes": {
            "burst_max_length": 4294967295,
            "burst_penalty": 0,
            "byte_width": 8 if p.address < 0x70000000 else 1,
            "freq_ratio": 1.25 if fast else 2.5,
            "latency": p.latency,
            "read_power": 18.531 if fast else 110.0,
            "score": 94 if fast else 50,
            "throughput": p.throughput,
            "use_for_initrs": p.address >= 0x70000000,
            "write_power": 16.201 if fast else 400.0,
        },
        "buffers": u.buffers,
        "cacheable": "CACHEABLE_ON" if p.cacheable else "CACHEABLE_OFF",
        "fname": f"atonbuf.{p.fname}.raw",
        "id": u.id,
        "name": p.name,
        "offset_start": 0,
        "persistent": True,
        "pipelined": "PIPELINED_ON",
        "rights": p.rights,
        "size_bytes": p.size,
        "subpools": [],
        "used_size_bytes": u.used,
        "user_allocated": False,
    }
    if run.ver.key < (2, 1, 0):
        del out["fname"]
    return out


def _virtual_pool(uses: list[PoolUse], run: Run) -> dict[str, Any] | None:
    """The combined pool the compiler adds with --enable-virtual-mem-pools."""
    assert run.profile is not None
    if not run.profile.has("--enable-virtual-mem-pools"):
        return None
    subs = [
        u
        for u in uses
        if u.pool.rights == "ACC_WRITE" and u.pool.size > 0 and u.pool.address < 0x70000000
    ]
    if len(subs) < 2:
        return None
    base = _pool(subs[0], run)
    base.update(
        {
            "id": len(uses) + 1,
            "name": "_".join(u.pool.name for u in reversed(subs)),
            "buffers": [],
            "size_bytes": sum(u.pool.size for u in subs),
            "address": str(min(u.pool.address for u in subs)),
            "subpools": [u.id for u in subs],
            "used_size_bytes": sum(u.used for u in subs),
        }
    )
    if "fname" in base:
        base["fname"] = ""
    return base


def _io(t: Tensor) -> dict[str, Any]:
    q = t.quantized and t.scale is not None
    fmt = {
        "quantizer": "UNIFORM" if q else "NONE",
        "scale": [t.scale] if q else [],
        "size": 8 if t.quantized else 32,
        "type": "SIGNED" if t.quantized else "FLOAT",
        "zero": [t.zero_point] if q else [],
    }
    smap = ["BATCH", "CH", "H", "W"][: len(t.shape)] if len(t.shape) != 2 else ["BATCH", "CH"]
    return {
        "c_shape_map": smap,
        "data_format": fmt,
        "name": t.name,
        "shape": list(t.shape),
        "shape_map": smap,
    }


def build_cinfo(run: Run) -> dict[str, Any]:
    """The c_info document of ``run``."""
    d, f, ver = run.dep, run.facts, run.ver
    pool_ids = {u.pool.name: u.id for u in d.pools}
    buffers = [_buffer(b, run, pool_ids) for b in d.buffers]
    ids = {b.name: b.id for b in d.buffers}
    pools = [_pool(u, run) for u in d.pools]
    now = _dt.datetime.now(_dt.UTC)
    sig = "0x" + hashlib.sha1((f.md5 + ver.full + run.name).encode()).hexdigest()[:16]
    core: dict[str, Any] = {
        "arguments": " ".join(run.argv),
        "environment": [],
        "input_model": {
            "model_files": [{"name": f.path.name, "signature": f"0x{f.md5}"}],
            "n_params": f.params,
            "name": f.name,
            "size": f.float_weights_bytes,
            "type": "onnx",
        },
        "name": "ST.EdgeAI.Core",
        "version": ver.full,
    }
    env: dict[str, Any] = {
        "generated_model": {},
        "network_signature": sig,
        "test_name": "",
        "tools": [core],
    }
    if run.npu:
        core["input_model"]["generated_time"] = ""
        files = [f"{run.name}.c"] + [f"atonbuf.{u.pool.fname}.raw" for u in d.pools]
        env["generated_model"] = {
            "generated_time": now.isoformat(),
            "n_params": 0,
            "model_files": [{"name": x, "signature": ""} for x in files],
            "name": run.name,
            "size": 0,
            "type": "",
        }
        env["target"] = ""
        env["tools"].append(
            {
                "arguments": run.compiler_args,
                "environment": [],
                "input_model": {
                    "generated_time": now.isoformat(),
                    "model_files": [{"name": f"{f.path.stem}_OE_3_3_1.onnx", "signature": sig}],
                    "n_params": 0,
                    "name": run.name,
                    "size": 0,
                    "type": "",
                },
                "name": "ATONN Compiler",
                "version": ver.compiler,
            }
        )
        virt = _virtual_pool(d.pools, run)
        if virt:
            pools.append(virt)
        nodes, top = epoch_nodes(run, ids)
        edges = [
            {
                "attributes": {},
                "buffer": 0,
                "edge_kind": "EDGE_FLOW",
                "end": {"node_id": b, "port": 0},
                "id": k + 1,
                "name": f"epoch_dep_{k}_{k + 1}",
                "start": {"node_id": a, "port": 0},
            }
            for k, (a, b) in enumerate(itertools.pairwise(top))
        ]
    else:
        names = [
            f"{run.name}{s}"
            for s in (
                "_data_params.h",
                "_data_params.c",
                "_data.h",
                "_data.c",
                "_config.h",
                ".h",
                ".c",
            )
        ]
        env["generated_model"] = {
            "generated_time": now.isoformat(),
            "name": run.name,
            "model_files": [
                {"name": x, "signature": "0x" + hashlib.md5((x + f.md5).encode()).hexdigest()}
                for x in names
            ],
        }
        nodes, edges = [], []
        for k, layer in enumerate(d.layers):
            ins = [ids[i] for i in layer.inputs if i in ids] + [ids[w] for w in layer.weights]
            outs = [ids[o] for o in layer.outputs if o in ids]
            nodes.append(
                make_node(
                    run,
                    k + 1,
                    layer.name,
                    "NODE_SW",
                    c_type(layer.op),
                    ins,
                    outs,
                    [],
                    macc=layer.macc,
                    sw=[f"forward_{layer.op.lower()}"],
                )
            )
            nodes[-1]["original_nodes"] = [str(layer.index + 1)]
        for k, (a, b) in enumerate(itertools.pairwise(nodes)):
            edges.append(
                {
                    "buffer": a["outputs"][0] if a["outputs"] else 0,
                    "edge_kind": "EDGE_MEMORY",
                    "end": {"node_id": b["id"], "port": 0},
                    "id": k,
                    "name": f"n{a['id']}-p0_n{b['id']}-p0",
                    "start": {"node_id": a["id"], "port": 0},
                }
            )
    gone = None if ver.key < (4, 0, 0) else 0
    doc: dict[str, Any] = {
        "buffers": buffers,
        "environment": env,
        "graphs": [
            {
                "edges": edges,
                "id": 0,
                "inputs": [ids[t.name] for t in d.inputs if t.name in ids],
                "name": run.name if run.npu else f.name,
                "nodes": nodes,
                "original_inputs": [_io(t) for t in d.inputs],
                "original_outputs": [_io(t) for t in d.outputs],
                "outputs": [ids[t.name] for t in d.outputs if t.name in ids],
            }
        ],
        "json_schema_version": "2.0",
        "memory_footprint": {
            "activations": d.activations_bytes,
            "io": list(d.io_bytes),
            "kernel_flash": gone,
            "kernel_ram": gone,
            "series": "generic",
            "toolchain": None,
            "toolchain_flash": gone,
            "toolchain_ram": gone,
            "weights": d.weights_bytes,
        },
        "memory_pools": pools,
    }
    if run.npu:
        doc["memory_accesses"], doc["power_estimates"] = estimates(run, nodes)
        if ver.key >= (2, 2, 0):
            doc["ec_blobs_info"] = ec_blobs(d.epochs)
    if run.validation is not None:
        doc["validation"] = run.validation
        env["device"] = run.opts.get("device_desc") or "x86_64, x86_64, Linux"
    return doc

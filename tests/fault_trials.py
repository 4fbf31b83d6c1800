"""Fault-location trials: every real N6 compilation in ../shared with a matching model,
served by the board simulator with a fault at one epoch at a time.

For each c_info (one per distinct file) whose buffers and epochs are known and whose OE
model (the ONNX the simulator serves in the c_info's names) is in ../shared, the
simulator serves one healthy per-layer run over the wire, and one run per fault: every
buffer from the faulty epoch on holds values uncorrelated with the right ones. Each
run is judged by ``stedge diverge`` with each model a user may give: the user's own
``.tflite``/``.onnx`` (when in ../shared), the OE model, and no model. A fault is
*located* when the first diverging epoch is the faulty one, or the faulty epoch is
among those ``diverge`` names as unchecked before it (they wrote nothing comparable).

The faulty runs are derived from the healthy one by corrupting its records from the
faulty epoch on with the simulator's own corruption (deterministic), which is what the
simulator sends; ``test_fault_location`` checks that on one fault over the wire.

    python tests/fault_trials.py            # every epoch of every compilation: the table
    python tests/fault_trials.py --spread 20
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@dataclass
class Compilation:
    """One real c_info and the models that match it."""

    c_info: Path
    epochs: int  # executed epochs
    oe: Path | None  # the OE model the c_info records (what the simulator serves)
    user: list[Path] = field(default_factory=list)  # the user's models it records
    duplicates: list[Path] = field(default_factory=list)  # byte-identical copies

    @property
    def label(self) -> str:
        """The c_info's path under ../shared."""
        return str(self.c_info.relative_to(SHARED))


def _md5(path: Path) -> str:
    return "0x" + hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def compilations(shared: Path = SHARED) -> tuple[list[Compilation], list[tuple[str, str]]]:
    """Every N6 c_info of ../shared with epochs and buffers, with its models; and the
    c_infos left out, with why."""
    from pytest_stedge.errors import OracleError
    from pytest_stedge.oracle.accuracy.epoch_names import compiled_from
    from pytest_stedge.oracle.accuracy.epoch_plan import load_plan

    models: dict[str, list[Path]] = {}
    for path in sorted([*shared.rglob("*.onnx"), *shared.rglob("*.tflite")]):
        models.setdefault(_md5(path), []).append(path)
    found: dict[str, Compilation] = {}
    left_out: list[tuple[str, str]] = []
    for info in sorted(shared.rglob("*c_info*.json")):
        try:
            plan = load_plan(info)
        except OracleError as exc:
            if "epoch" in str(exc) or "buffers" in str(exc):
                text = info.read_text(errors="replace")
                if '"stm32n6' in text or "neural_art" in text or "aton" in text:
                    left_out.append((str(info.relative_to(shared)), str(exc).split(": ", 1)[1]))
            continue
        digest = _md5(info)
        if digest in found:
            found[digest].duplicates.append(info)
            continue
        sigs = compiled_from(info)
        matched = [m for s in sigs for m in models.get(s, [])]
        oe = next((m for m in matched if "_OE_" in m.name and m.suffix == ".onnx"), None)
        user = [m for m in matched if "_OE_" not in m.name]
        if not matched:
            left_out.append((str(info.relative_to(shared)),
                             f"no model in ../shared has the md5 it records ({', '.join(sigs)})"))
            continue
        found[digest] = Compilation(info, len(plan.executed_epochs()), oe, user)
    return list(found.values()), left_out


def spread(names: list[str], count: int | None) -> list[str]:
    """``count`` epochs spread evenly over ``names`` (all when ``count`` is None or more)."""
    if count is None or count >= len(names):
        return list(names)
    step = (len(names) - 1) / (count - 1)
    return [names[round(i * step)] for i in range(count)]


def healthy_dump(comp: Compilation, out: Path, fault: str | None = None) -> Path:
    """A per-layer run of the simulator serving the OE model as the c_info says, over
    the wire, written as ``stedge board-run --per-layer`` writes it."""
    from pytest_stedge.board.dump_run import run_dump
    from pytest_stedge.board.sim.simulator import BoardSimulator, Faults

    assert comp.oe is not None
    with BoardSimulator(comp.oe, c_info=comp.c_info,
                        faults=Faults(wrong_from_node=fault)) as sim:
        sim.signature = ""
        url = sim.start_socket()
        run_dump(comp.oe, url, out=out, per_layer=True)
    return out


def faulty_dump(healthy: Path, epoch: str, out: Path) -> Path:
    """``healthy`` with every record from ``epoch`` on corrupted as the simulator
    corrupts them (:meth:`SimModel.maybe_corrupt`), its outputs too."""
    import numpy as np

    from pytest_stedge.board.sim.model import SimModel

    meta = json.loads(healthy.with_suffix(".json").read_text())
    with np.load(healthy) as f:
        arrays = {k: f[k] for k in f.files}
    names = [n["name"] for n in meta["nodes"]]
    start = names.index(epoch)
    for node in meta["nodes"][start:]:
        for tname in node["tensors"]:
            if tname in arrays:
                arrays[tname] = SimModel.maybe_corrupt(arrays[tname], True)
    for oname in meta["outputs"]:
        if oname in arrays:
            arrays[oname] = SimModel.maybe_corrupt(arrays[oname], True)
    np.savez(out, **arrays)
    shutil.copyfile(healthy.with_suffix(".json"), out.with_suffix(".json"))
    return out


@dataclass
class Tally:
    """Trials of one compilation judged with one model."""

    comp: Compilation
    model: str
    faults: int = 0
    located: int = 0
    exact: int = 0
    healthy_ok: int = 0
    healthy: int = 0
    misses: list[str] = field(default_factory=list)


def run_trials(comp: Compilation, work: Path, count: int | None) -> list[Tally]:
    """Every chosen fault judged with every model; the healthy run too."""
    from pytest_stedge.oracle.accuracy.epoch_compare import EpochComparer
    from pytest_stedge.oracle.accuracy.epoch_plan import load_plan

    healthy = healthy_dump(comp, work / "healthy.npz")
    executed = [e.name for e in load_plan(comp.c_info).executed_epochs()]
    chosen = spread(executed, count)
    dumps = {e: faulty_dump(healthy, e, work / f"{e}.npz") for e in chosen}
    choices: list[tuple[str, Path | None]] = [(m.name, m) for m in comp.user]
    choices += [(f"OE {comp.oe.name}" if comp.oe else "OE", comp.oe), ("no model", None)]
    tallies = []
    for label, model in choices:
        q_json = comp.oe.with_name(comp.oe.stem + "_Q.json") if comp.oe else None
        comparer = EpochComparer(model, comp.c_info, oe_model=comp.oe,
                                 q_json=q_json if q_json and q_json.is_file() else None)
        tally = Tally(comp, label)
        result = comparer.compare(healthy)
        tally.healthy, tally.healthy_ok = 1, int(result["first_divergent"] is None)
        if result["first_divergent"] is not None:
            tally.misses.append(f"healthy -> {result['first_divergent']['epoch']}")
        for epoch, dump in dumps.items():
            result = comparer.compare(dump)
            first = result["first_divergent"]
            tally.faults += 1
            where = first["epoch"] if first else None
            if where == epoch:
                tally.exact += 1
                tally.located += 1
            elif first is not None and epoch in result["unchecked_before"]:
                tally.located += 1
            else:
                tally.misses.append(f"{epoch} -> {where}")
        tallies.append(tally)
    return tallies


def main(argv: list[str] | None = None) -> int:
    """Print the trial table (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spread", type=int, default=None,
                        help="faults at this many epochs spread over each graph (default all)")
    args = parser.parse_args(argv)
    if not SHARED.is_dir():
        print(f"{SHARED} is absent: no real compilations to try")
        return 1
    comps, left_out = compilations()
    print("| c_info | executed epochs | model given to diverge | faults located | of which at "
          "the epoch itself | healthy board: no divergence |")
    print("|---|---|---|---|---|---|")
    failed = False
    for comp in comps:
        if comp.oe is None:
            why = ("its OE model (what the simulator serves, and what maps its buffer names) "
                   "is not in ../shared")
            left_out.append((comp.label, why))
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for t in run_trials(comp, Path(tmp), args.spread):
                same = f" (+{len(comp.duplicates)} identical)" if comp.duplicates else ""
                print(f"| {comp.label}{same} | {comp.epochs} | {t.model} | "
                      f"{t.located}/{t.faults} | {t.exact} | {t.healthy_ok}/{t.healthy} |")
                failed |= t.located != t.faults or t.healthy_ok != t.healthy
                for miss in t.misses:
                    print(f"|  | | miss: {miss} | | | |")
        sys.stdout.flush()
    print()
    for label, why in left_out:
        print(f"- not tried: {label}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())

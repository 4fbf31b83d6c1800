"""Rebuild the corpus models reproducibly: normalised serialisation, sha256 pins
checked against each case.toml, graph-and-weight comparison with committed models.

The corpus's own ``build.py`` lists :class:`Recipe` objects (which file, and a
function that builds the model from fixed seeds); this module turns them into
files. Builders are deterministic, but what a producing library records about
itself (onnxruntime's producer version and metadata) and the order of
initializers may change between its releases, so :func:`normalise` fixes those.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pytest_stedge.errors import StedgeError

if TYPE_CHECKING:
    import onnx

PRODUCER = "pytest-stedge corpus/build.py"


class CorpusBuildError(StedgeError):
    """The corpus build refused to write, or its recipes could not be loaded."""


@dataclass(frozen=True)
class Recipe:
    """One model file of the corpus: ``path`` (relative to the corpus root) is what
    ``build()`` returns, normalised and serialised."""

    path: str
    build: Callable[[], onnx.ModelProto | bytes]  # bytes: a TFLite flatbuffer, as written


@dataclass(frozen=True)
class Pin:
    """A sha256 a case.toml pins for a model (``where`` is None for the top level,
    else the variant name)."""

    case_toml: Path
    where: str | None
    sha256: str | None


@dataclass
class Built:
    """Outcome for one recipe."""

    path: str
    sha256: str
    size: int
    status: str = "built"  # written | unchanged | differs | missing | mismatch
    notes: list[str] = field(default_factory=list)


# -- building -------------------------------------------------------------------


def build_bytes(recipe: Recipe) -> bytes:
    """Build and normalise one recipe; return the serialised model."""
    model = recipe.build()
    if isinstance(model, bytes):  # a TFLite flatbuffer: deterministic as written
        return model
    return bytes(normalise(model).SerializeToString(deterministic=True))


def normalise(model: onnx.ModelProto) -> onnx.ModelProto:
    """Strip what depends on the producing library's version (producer fields,
    metadata, doc strings, inferred value_info) and sort initializers by name."""
    model.producer_name = PRODUCER
    model.producer_version = ""
    model.doc_string = ""
    del model.metadata_props[:]
    graph = model.graph
    graph.doc_string = ""
    del graph.value_info[:]
    for node in graph.node:
        node.doc_string = ""
    inits = sorted(graph.initializer, key=lambda t: t.name)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    return model


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


# -- comparing --------------------------------------------------------------------


def compare_models(expected: onnx.ModelProto, actual: onnx.ModelProto) -> list[str]:
    """Differences of graph and weights between two models (empty when equal).

    Compares node order, operator types, names, wiring and attributes, graph inputs
    and outputs, opsets, and every initializer's name, type, shape and values.
    """
    from onnx import numpy_helper

    diffs: list[str] = []
    eg, ag = expected.graph, actual.graph
    if [(o.domain, o.version) for o in expected.opset_import] != [
        (o.domain, o.version) for o in actual.opset_import
    ]:
        diffs.append("opset_import differs")
    for kind in ("input", "output"):
        ev = [v.SerializeToString(deterministic=True) for v in getattr(eg, kind)]
        av = [v.SerializeToString(deterministic=True) for v in getattr(ag, kind)]
        if ev != av:
            diffs.append(f"graph {kind}s differ")
    if len(eg.node) != len(ag.node):
        diffs.append(f"node count {len(eg.node)} != {len(ag.node)}")
    for index, (en, an) in enumerate(zip(eg.node, ag.node)):
        if en.SerializeToString(deterministic=True) != an.SerializeToString(deterministic=True):
            diffs.append(f"node {index} ({en.op_type} {en.name!r}) differs from {an.op_type} {an.name!r}")
    e_inits = {t.name: t for t in eg.initializer}
    a_inits = {t.name: t for t in ag.initializer}
    for name in sorted(set(e_inits) ^ set(a_inits)):
        side = "expected only" if name in e_inits else "built only"
        diffs.append(f"initializer {name!r}: {side}")
    for name in sorted(set(e_inits) & set(a_inits)):
        ea, aa = numpy_helper.to_array(e_inits[name]), numpy_helper.to_array(a_inits[name])
        if ea.dtype != aa.dtype or ea.shape != aa.shape:
            diffs.append(f"initializer {name!r}: {ea.dtype}{ea.shape} != {aa.dtype}{aa.shape}")
        elif ea.tobytes() != aa.tobytes():
            diffs.append(f"initializer {name!r}: values differ")
    return diffs


# -- pins -------------------------------------------------------------------------


def collect_pins(root: Path) -> dict[Path, list[Pin]]:
    """Every model file a case.toml under ``root`` refers to, with the sha256 it pins.

    Reads the raw TOML (not :func:`load_cases`) so that a corpus whose model files
    are missing can still be rebuilt.
    """
    pins: dict[Path, list[Pin]] = {}
    for case_toml in sorted(Path(root).rglob("case.toml")):
        try:
            raw = tomllib.loads(case_toml.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise CorpusBuildError(f"{case_toml}: cannot read: {exc}") from None
        variants = raw.get("variants")
        entries: list[tuple[str | None, dict[str, Any]]] = [(None, raw)]
        if isinstance(variants, dict):
            entries = []
            for name, overrides in variants.items():
                if not isinstance(overrides, dict):
                    continue
                merged = {**raw, **overrides}
                where = name if "model" in overrides or "sha256" in overrides else None
                entries.append((where, merged))
        for where, table in entries:
            model = table.get("model")
            if not isinstance(model, str) or model.startswith("onnx-light:"):
                continue
            sha = table.get("sha256")
            pin = Pin(case_toml, where, sha if isinstance(sha, str) else None)
            path = (case_toml.parent / model).resolve()
            if pin not in pins.setdefault(path, []):
                pins[path].append(pin)
    return pins


def write_pin(pin: Pin, sha256: str) -> None:
    """Set the sha256 of ``pin`` in its case.toml, keeping comments and layout."""
    import tomlkit

    doc = tomlkit.parse(pin.case_toml.read_text(encoding="utf-8"))
    table: Any = doc if pin.where is None else doc["variants"][pin.where]
    table["sha256"] = sha256
    pin.case_toml.write_text(tomlkit.dumps(doc), encoding="utf-8")


def _describe(pin: Pin) -> str:
    where = "sha256" if pin.where is None else f"variants.{pin.where}.sha256"
    return f"{pin.case_toml} {where} = {pin.sha256}"


# -- the corpus build -------------------------------------------------------------


def build_corpus(
    recipes: Sequence[Recipe],
    root: Path,
    out: Path | None = None,
    force: bool = False,
    check: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Built]:
    """Build every recipe; write into ``out`` (default: the corpus ``root``).

    Writing into the corpus pins each model's sha256 in the case.toml files that
    name it (where no pin exists yet, or every pin with ``force``). A model whose
    pin differs from what the build produces is not written unless ``force``:
    :class:`CorpusBuildError` lists every such pin. With ``check`` nothing is
    written; each :class:`Built` says whether the committed file and pins agree.
    """
    root = Path(root).resolve()
    out = root if out is None else Path(out).resolve()
    pins = collect_pins(out if not check else root)
    built: list[Built] = []
    payloads: dict[str, bytes] = {}
    for recipe in recipes:
        if progress is not None:
            progress(recipe.path)
        data = build_bytes(recipe)
        payloads[recipe.path] = data
        built.append(Built(recipe.path, sha256_bytes(data), len(data)))
    if check:
        for item in built:
            target = root / item.path
            _check_against(item, payloads[item.path], target, pins.get(target.resolve(), []))
        return built
    conflicts = [
        f"{item.path}: build gives {item.sha256}, but {_describe(pin)}"
        for item in built
        for pin in pins.get((out / item.path).resolve(), [])
        if pin.sha256 is not None and pin.sha256 != item.sha256
    ]
    if conflicts and not force:
        raise CorpusBuildError(
            "refusing to overwrite models whose case.toml pins another sha256 "
            "(rerun with --force to overwrite them and update the pins):\n  "
            + "\n  ".join(conflicts)
        )
    for item in built:
        target = out / item.path
        previous = target.read_bytes() if target.is_file() else None
        if previous == payloads[item.path]:
            item.status = "unchanged"
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            partial.write_bytes(payloads[item.path])
            os.replace(partial, target)
            item.status = "written"
        for pin in pins.get(target.resolve(), []):
            if pin.sha256 != item.sha256 and (pin.sha256 is None or force):
                write_pin(pin, item.sha256)
                item.notes.append(f"pinned in {pin.case_toml.relative_to(out)}")
    return built


def _check_against(item: Built, data: bytes, committed: Path, pins: list[Pin]) -> None:
    import onnx

    if not committed.is_file():
        item.status = "missing"
        item.notes.append(f"{committed} does not exist")
        return
    if file_bytes_sha(committed) == item.sha256:
        item.status = "unchanged"
    else:
        diffs = compare_models(onnx.load(committed), onnx.load_from_string(data))
        item.status = "differs"
        item.notes.extend(diffs[:5] or ["same graph and weights, other bytes"])
    for pin in pins:
        if pin.sha256 != item.sha256:
            if item.status == "unchanged":
                item.status = "mismatch"
            item.notes.append(f"pin {_describe(pin)}")


def file_bytes_sha(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return sha256_bytes(Path(path).read_bytes())


# -- loading a corpus's build script -----------------------------------------------


def load_module(path: Path, name: str) -> ModuleType:
    """Import a module (or, for a folder, a package) from ``path`` under ``name``."""
    path = Path(path)
    if name in sys.modules:
        return sys.modules[name]
    if path.is_dir():
        spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)]
        )
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CorpusBuildError(f"{path}: cannot be imported as {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_recipes(root: Path) -> list[Recipe]:
    """The recipes of the corpus at ``root``: ``recipes()`` of its ``build.py``."""
    script = Path(root) / "build.py"
    if not script.is_file():
        raise CorpusBuildError(f"{script}: not found; a corpus is rebuilt by its build.py")
    module = load_module(script, "stedge_corpus_build_" + sha256_bytes(str(script.resolve()).encode())[:12])
    recipes = getattr(module, "recipes", None)
    if not callable(recipes):
        raise CorpusBuildError(f"{script}: defines no recipes() function returning Recipe objects")
    result = list(recipes())
    if not all(isinstance(r, Recipe) for r in result):
        raise CorpusBuildError(f"{script}: recipes() must return Recipe objects")
    return result

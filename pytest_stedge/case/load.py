"""Read ``corpus/<case>/case.toml`` into :class:`Case` objects, refusing bad input.

Format (every path is relative to the case folder and must stay inside the corpus)::

    description = "10-layer Conv+ReLU CNN, int8"
    model = "model.onnx"                 # or a "onnx-light:<name>" reference
    target = "stm32n6"
    name = "network"                     # C name (-n), default "network"
    options = ["--input-data-type", "uint8"]
    stages = ["generate", "validate-host", "validate-target"]   # default ["generate"]
    oracle = true                        # run the oracle stage (default true)
    markers = ["n6", "int8"]
    bugs = ["prelu-sw-int8"]             # known bugs this case reproduces
    timeout = 600                        # seconds per tool run (default: --stedge-timeout)
    memory_pool = "../profiles/mcu.json" # MCU targets: --memory-pool FILE

    [neural_art]                         # STM32N6 NPU: --st-neural-art PROFILE[@FILE]
    profile = "default"
    file = "../profiles/neural_art.json" # omit for the install's built-in profiles
    mpool = "../profiles/stm32n6.mpool"  # overrides the profile's memory_pool

    [expect]                             # checked on every stage that measures the metric
    activations_bytes = { max = 2_700_000 }
    [expect.validate-target]             # only on that stage
    val_cos = { min = 0.99 }

    [baseline]                           # bands against the baseline version
    activations_bytes = "+3%"

    [variants.int8]                      # optional: each variant is a case of its own
    model = "model_int8.onnx"            # any top-level key may be overridden
"""


from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:  # tomllib's own upstream, compiled: parses case files ~2.5x faster (collection speed)
    import tomli as toml_reader
except ImportError:  # pragma: no cover - the pure-Python standard library parser
    import tomllib as toml_reader  # type: ignore[no-redef]

from ..errors import CaseError
from .all_errors import every_error
from .boundary import one_case
from .bounds import BASELINE_HELP, EXPECT_HELP, parse_baseline_bands, parse_expectations
from .model import STAGES, Case, NeuralArt
from .owned_options import refuse_owned_options
from .paths import (
    find_corpus_root,
    inside_corpus,
    os_reason,
    real_case_path,
    resolve_model,
    resolved_root,
)
from .record_only import parse_model_table
from .scan import PathCache
from .suggest import did_you_mean

_TOP_KEYS: dict[str, str] = {
    "description": "a string",
    "model": "a path to an .onnx/.tflite/.h5/.keras file in the case folder, 'onnx-light:<name>', "
    "or a table {file, sha256 or md5, source, size, licence} naming a model the corpus does not ship",
    "target": "a target name such as 'stm32n6' or 'stm32h7'",
    "name": "a C identifier (the -n/--name of stedgeai)",
    "options": "a list of strings (extra stedgeai arguments)",
    "stages": f"a list drawn from {', '.join(STAGES)}",
    "oracle": "true or false",
    "markers": "a list of pytest marker names",
    "bugs": "a list of known-bug ids (corpus/bugs/<id>.toml)",
    "timeout": "a positive number of seconds, at most 86,400 (one day)",
    "memory_pool": "a path to an MCU --memory-pool JSON file",
    "sha256": "the sha256 hex digest the model file must have",
    "neural_art": "a table with profile, file, mpool",
    "expect": EXPECT_HELP,
    "baseline": BASELINE_HELP,
    "variants": "a table of named variants, each overriding top-level keys",
}
_NEURAL_ART_KEYS = ("profile", "file", "mpool")
_TARGET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@one_case  # any failure while loading the file is its CaseError
def load_cases(
    case_toml: Path, corpus_root: Path | None = None, *, cache: PathCache | None = None
) -> list[Case]:
    """Read one case.toml into its case and its variants; raise :class:`CaseError`.

    :param cache: folders resolved by earlier calls of the same collection.
    """
    case_toml = case_toml if isinstance(case_toml, Path) else Path(case_toml)
    folder_text, file_name = os.path.split(str(case_toml))
    scanned = None if cache is None else cache.scanned.get(folder_text)
    local: frozenset[str] = frozenset()  # files known to be in the real case folder
    if cache is not None and scanned is not None and file_name in scanned.names:
        # A folder scan saw it: absolute, a regular file in a folder that is no symlink.
        real = scanned.real / file_name
        above = os.path.dirname(folder_text)
        if corpus_root is not None:
            root = resolved_root(case_toml, corpus_root)
        elif above in cache.roots:
            root = cache.roots[above]
        else:
            root = cache.roots[above] = resolved_root(case_toml, find_corpus_root(case_toml))
        if cache.is_inside(scanned.real.parent, root):
            local = scanned.names
        base_name = os.path.basename(folder_text)
    else:
        real = real_case_path(case_toml, cache)  # once: the case's paths are built on it
        # The corpus is found from where the case file sits, not where a symlink leads: a
        # case folder linked from outside brings none of its surroundings in.
        given = Path(os.path.abspath(case_toml))
        if corpus_root is not None:
            root = resolved_root(case_toml, corpus_root)
        elif cache is not None:  # the root depends only on the folder above the case folder
            key = os.path.dirname(os.path.dirname(str(given)))
            if key not in cache.roots:
                cache.roots[key] = resolved_root(case_toml, find_corpus_root(given))
            root = cache.roots[key]
        else:
            root = resolved_root(case_toml, find_corpus_root(given))
        # The folder's name as it sits in the corpus, not where a symlink leads.
        base_name = given.parent.name
    try:
        raw = toml_reader.loads(case_toml.read_bytes().decode("utf-8"))
    except toml_reader.TOMLDecodeError as exc:
        raise CaseError(case_toml, None, f"not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CaseError(case_toml, None, f"not UTF-8 text: {exc}") from None
    except (OSError, ValueError) as exc:  # missing, unreadable, a symlink loop
        raise CaseError(case_toml, None, f"cannot read the case file: {os_reason(exc)}") from None
    variants = raw.pop("variants", None)

    def build_once(name: str, variant: str | None, values: Mapping[str, Any]) -> Case:
        try:
            return _build_case(real, root, name, variant, values, local)
        except CaseError as exc:  # named as the user wrote it, not where a link leads
            if exc.path == case_toml:
                raise
            raise CaseError(case_toml, exc.key, exc.message) from None

    def build(name: str, variant: str | None, values: Mapping[str, Any]) -> Case:
        prefix = f"variants.{variant}." if variant else ""
        return every_error(lambda v: build_once(name, variant, v), values, prefix)

    if variants is None:
        return [build(base_name, None, raw)]
    if not isinstance(variants, dict) or not variants:
        raise CaseError(case_toml, "variants", f"expected {_TOP_KEYS['variants']}")
    cases = []
    for variant, overrides in variants.items():
        if not _TARGET_RE.fullmatch(variant):  # it becomes part of item names and ids
            raise CaseError(case_toml, f"variants.{variant}",
                            f"variant name {variant!r}: expected letters, digits, '_', '.', '-'")
        if not isinstance(overrides, dict):
            raise CaseError(case_toml, f"variants.{variant}", "expected a table")
        if "variants" in overrides:
            raise CaseError(case_toml, f"variants.{variant}.variants", "variants do not nest")
        merged = _merge(raw, overrides)
        cases.append(build(f"{base_name}/{variant}", variant, merged))
    return cases


def check_model_pin(case: Case, actual_sha256: str) -> None:
    """Refuse a case whose model is not the file its ``sha256`` pins (the model changed)."""
    if case.sha256 is not None and case.sha256.lower() != actual_sha256.lower():
        key = f"variants.{case.variant}.sha256" if case.variant else "sha256"
        raise CaseError(
            case.path,
            key,
            f"the model {case.model.name} has sha256 {actual_sha256}, the case pins "
            f"{case.sha256}: the model changed. Rebuild it (python corpus/build.py) or, "
            "if the change is wanted, pin the new hash",
        )


def _merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if key in ("expect", "baseline", "neural_art") and isinstance(value, dict):
            inner = dict(merged.get(key) or {})
            inner.update(value)
            merged[key] = inner
        else:
            merged[key] = value
    return merged


def _build_case(
    path: Path,
    root: Path,
    name: str,
    variant: str | None,
    raw: Mapping[str, Any],
    local: frozenset[str] = frozenset(),
) -> Case:
    prefix = f"variants.{variant}." if variant else ""

    def fail(key: str, message: str) -> CaseError:
        return CaseError(path, prefix + key, message)

    unknown = raw.keys() - _TOP_KEYS.keys()
    if unknown:
        first = min(unknown)
        raise fail(first, f"unknown key {first!r}{did_you_mean(first, _TOP_KEYS)}; "
                          f"accepted keys: {', '.join(sorted(_TOP_KEYS))}")

    def string(key: str, default: str | None = None) -> str | None:
        value = raw.get(key, default)
        if value is not None and not isinstance(value, str):
            raise fail(key, f"expected {_TOP_KEYS[key]}, got {type(value).__name__} {value!r}")
        if value is not None and "\0" in value:
            raise fail(key, f"{value!r} holds a NUL character; expected {_TOP_KEYS[key]}")
        return value

    def strings(key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = raw.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(key, f"expected {_TOP_KEYS[key]}, got {value!r}")
        for item in value:
            if "\0" in item:
                raise fail(key, f"{item!r} holds a NUL character; expected {_TOP_KEYS[key]}")
        return tuple(value)

    model_source = None
    if isinstance(raw.get("model"), dict):
        model_source = parse_model_table(path, prefix + "model", raw["model"])
        # where it would be (not shipped), and inside the corpus like any other path
        model = inside_corpus(path, root, model_source.file, prefix + "model.file")
    else:
        model_ref = string("model")
        if not model_ref:
            raise fail("model", f"missing; expected {_TOP_KEYS['model']}")
        model = resolve_model(path, root, model_ref, prefix + "model", local)
    target = string("target")
    if not target:
        raise fail("target", f"missing; expected {_TOP_KEYS['target']}")
    if not _TARGET_RE.fullmatch(target):
        raise fail("target", f"expected {_TOP_KEYS['target']} (letters, digits, '_', '.', '-'), "
                             f"got {target!r}")
    c_name = string("name", "network") or "network"
    if not (c_name.isidentifier() and c_name.isascii()):
        raise fail("name", f"expected {_TOP_KEYS['name']}, got {c_name!r}")
    stages = strings("stages", ("generate",))
    for stage in stages:
        if stage not in STAGES:
            raise fail("stages", f"unknown stage {stage!r}; accepted: {', '.join(STAGES)}")
    if len(set(stages)) != len(stages):
        twice = next(s for s in stages if stages.count(s) > 1)
        raise fail("stages", f"stage {twice!r} is listed twice; list each stage once")
    oracle = raw.get("oracle", True)
    if not isinstance(oracle, bool):
        raise fail("oracle", f"expected true or false, got {oracle!r}")
    timeout = raw.get("timeout")
    if timeout is not None:
        from ..options import timeout_problem

        problem = timeout_problem(timeout)
        if problem:
            raise fail("timeout", problem)
    options = strings("options")
    refuse_owned_options(path, prefix + "options", options)
    markers = strings("markers")
    for marker in markers:
        if not marker.isidentifier() or not marker.isascii():
            raise fail("markers", f"marker {marker!r}: expected {_TOP_KEYS['markers']} "
                                  "(letters, digits and '_')")
    memory_pool = raw.get("memory_pool")
    memory_pool_path = (
        None if memory_pool is None else inside_corpus(path, root, memory_pool, prefix + "memory_pool")
    )
    if memory_pool_path is not None and not memory_pool_path.is_file():
        raise fail("memory_pool", f"file not found: {memory_pool_path}")
    sha = string("sha256")
    if model_source is not None and model_source.sha256 and sha and sha != model_source.sha256:
        raise fail("sha256", "differs from model.sha256; give the digest once, in the model table")
    return Case(
        name=name,
        path=path,
        corpus_root=root,
        model=model,
        target=target,
        variant=variant,
        description=string("description", "") or "",
        c_name=c_name,
        options=options,
        stages=stages,
        oracle=oracle,
        markers=markers,
        bugs=strings("bugs"),
        timeout=None if timeout is None else float(timeout),
        memory_pool=memory_pool_path,
        neural_art=_neural_art(path, root, raw.get("neural_art"), prefix),
        sha256=sha or (model_source.sha256 if model_source else None),
        model_source=model_source,
        expect=parse_expectations(path, raw.get("expect"), prefix),
        baseline=parse_baseline_bands(path, raw.get("baseline"), prefix),
    )


def _neural_art(path: Path, root: Path, raw: Any, prefix: str) -> NeuralArt | None:
    if raw is None:
        return None
    key = prefix + "neural_art"
    if not isinstance(raw, dict):
        raise CaseError(path, key, f"expected {_TOP_KEYS['neural_art']}, got {raw!r}")
    unknown = sorted(set(raw) - set(_NEURAL_ART_KEYS))
    if unknown:
        raise CaseError(
            path, f"{key}.{unknown[0]}",
            f"unknown key{did_you_mean(unknown[0], _NEURAL_ART_KEYS)}; "
            f"accepted: {', '.join(_NEURAL_ART_KEYS)}"
        )
    profile = raw.get("profile", "default")
    if not isinstance(profile, str) or not profile or "@" in profile or "\0" in profile:
        # PROFILE@FILE is how the harness names the file: an '@' here would name another
        raise CaseError(path, f"{key}.profile", f"expected a profile name (no '@' or NUL; the "
                                                f"file is neural_art.file), got {profile!r}")
    file = raw.get("file")
    mpool = raw.get("mpool")
    file_path = None if file is None else inside_corpus(path, root, file, f"{key}.file")
    mpool_path = None if mpool is None else inside_corpus(path, root, mpool, f"{key}.mpool")
    for sub, value in (("file", file_path), ("mpool", mpool_path)):
        if value is not None and not value.is_file():
            raise CaseError(path, f"{key}.{sub}", f"file not found: {value}")
    if mpool_path is not None and file_path is None:
        raise CaseError(
            path, f"{key}.mpool", "an mpool needs a profile file to override (set neural_art.file)"
        )
    return NeuralArt(profile=profile, file=file_path, mpool=mpool_path)

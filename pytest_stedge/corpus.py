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

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # tomllib's own upstream, compiled: parses case files ~2.5x faster (collection speed)
    import tomli as toml_reader
except ImportError:  # pragma: no cover - the pure-Python standard library parser
    import tomllib as toml_reader  # type: ignore[no-redef]

from .errors import CaseError
from .owned_options import refuse_owned_options
from .record_only import ModelSource, parse_model_table
from .result import METRICS

STAGES = ("generate", "analyze", "validate-host", "validate-target")
ALL_STAGES = ("oracle", *STAGES)
EXPECT_BOUNDS = ("min", "max", "exact", "rel", "abs")
_BOUND_NAMES = frozenset(EXPECT_BOUNDS)
_LIMIT_NAMES = frozenset(("min", "max", "exact"))
ONNX_LIGHT_PREFIX = "onnx-light:"

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
    "expect": "a table of metric = {min, max, exact, rel, abs}",
    "baseline": "a table of metric = band ('+3%', '+1024', '0')",
    "variants": "a table of named variants, each overriding top-level keys",
}
_NEURAL_ART_KEYS = ("profile", "file", "mpool")
_TARGET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_PROJECT_MARKERS = ("pyproject.toml", ".git", "pytest.ini", "setup.cfg", "tox.ini", "setup.py")


@dataclass(frozen=True)
class Bound:
    """One expectation on one metric: min/max/exact with optional tolerances."""

    metric: str
    min: float | None = None
    max: float | None = None
    exact: float | None = None
    rel: float = 0.0
    abs: float = 0.0


@dataclass(frozen=True)
class NeuralArt:
    """The ``--st-neural-art`` choice of a case."""

    profile: str
    file: Path | None = None
    mpool: Path | None = None


@dataclass(frozen=True)
class Case:
    """One corpus case (or one variant of it), validated and with resolved paths."""

    name: str
    path: Path  # the case.toml
    corpus_root: Path
    model: Path
    target: str
    variant: str | None = None
    description: str = ""
    c_name: str = "network"
    options: tuple[str, ...] = ()
    stages: tuple[str, ...] = ("generate",)
    oracle: bool = True
    markers: tuple[str, ...] = ()
    bugs: tuple[str, ...] = ()
    timeout: float | None = None
    memory_pool: Path | None = None
    neural_art: NeuralArt | None = None
    sha256: str | None = None
    expect: dict[str, tuple[Bound, ...]] = field(default_factory=dict)  # "" = all stages
    baseline: dict[str, str] = field(default_factory=dict)
    model_source: ModelSource | None = None  # record-only: the model is not in the corpus

    @property
    def record_only(self) -> bool:
        """Whether the corpus names this case's model without shipping it."""
        return self.model_source is not None

    @property
    def folder(self) -> Path:
        """The case's folder."""
        return self.path.parent

    def model_sha256(self) -> str:
        """sha256 of the model file (identity of the model for comparisons); for a
        record-only case whose file is absent, the declared identity."""
        if self.model_source is not None and not self.model.is_file():
            return self.model_source.identity()
        return file_sha256(self.model)

    def options_hash(self) -> str:
        """A stable hash of everything besides the model that changes the tool's output."""
        payload = {
            "target": self.target,
            "c_name": self.c_name,
            "options": list(self.options),
            "memory_pool": _digest_or_none(self.memory_pool),
            "neural_art": None
            if self.neural_art is None
            else {
                "profile": self.neural_art.profile,
                "file": _digest_or_none(self.neural_art.file),
                "mpool": _digest_or_none(self.neural_art.mpool),
            },
        }
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def bounds_for(self, stage: str) -> tuple[Bound, ...]:
        """The expectations to check on ``stage``: generic ones, then the stage's own."""
        from .result import metric_applies

        generic = [b for b in self.expect.get("", ()) if metric_applies(b.metric, stage)]
        specific = list(self.expect.get(stage, ()))
        overridden = {b.metric for b in specific}
        return tuple([b for b in generic if b.metric not in overridden] + specific)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _digest_or_none(path: Path | None) -> str | None:
    return None if path is None or not path.is_file() else file_sha256(path)


def find_corpus_root(case_toml: Path) -> Path:
    """The corpus root of a case: the nearest ancestor named ``corpus`` or holding ``bugs/``
    or ``profiles/``, never above the project (a folder with ``pyproject.toml``, ``.git``,
    ``pytest.ini`` ...); else the case folder's parent."""
    # Walk up from where the case sits, not from where a symlinked case folder leads: a
    # folder linked in from outside must not bring its own surroundings as the corpus.
    folder = Path(os.path.abspath(case_toml)).parent
    for parent in folder.parents:
        if parent.name == "corpus" or (parent / "bugs").is_dir() or (parent / "profiles").is_dir():
            return parent
        if any((parent / marker).exists() for marker in _PROJECT_MARKERS):
            break
    return folder.parent


CASE_FILE = "case.toml"
_VENV_MARK = "pyvenv.cfg"  # a virtualenv: pytest skips it by rules of its own


@dataclass(frozen=True)
class FolderScan:
    """One listing of a folder, with what collection and the recordings search need."""

    files: frozenset[str]  # names of the entries that are no folder
    subfolders: tuple[str, ...]  # paths of the sub-folders that are no symlink
    #: a plain case folder (a case.toml, no Python, no sub-folder, no virtualenv): the
    #: names of its regular files that are no symlink; None for any other folder
    plain: tuple[str, ...] | None


def scan_folder(folder: str) -> FolderScan | None:
    """List ``folder`` once (None if it cannot be read)."""
    files, subfolders, regular = set(), [], []
    has_case, plain = False, True
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    is_folder = entry.is_dir()
                except OSError:
                    is_folder = False
                link = entry.is_symlink()
                if is_folder:
                    plain = False
                    if not link:
                        subfolders.append(entry.path)
                    continue
                name = entry.name
                files.add(name)
                if name.endswith(".py") or name == _VENV_MARK:
                    plain = False
                elif name == CASE_FILE and not has_case:
                    has_case = entry.is_file()
                if not link:
                    regular.append(name)
    except OSError:
        return None
    return FolderScan(frozenset(files), tuple(subfolders),
                      tuple(regular) if plain and has_case else None)


@dataclass(frozen=True)
class ScannedFolder:
    """A case folder (no symlink) a folder scan saw: where it really is, its regular files."""

    real: Path
    names: frozenset[str]


@dataclass
class PathCache:
    """Paths resolved once per collection (thousands of cases share a few folders).

    Keys are paths as strings: building and hashing a ``Path`` a few times per case was a
    tenth of collecting it.
    """

    real: dict[str, Path] = field(default_factory=dict)  # folder -> without symlinks
    roots: dict[str, Path] = field(default_factory=dict)  # folder above a case -> root
    scanned: dict[str, ScannedFolder] = field(default_factory=dict)  # case folder -> scan
    inside: dict[tuple[Path, Path], bool] = field(default_factory=dict)  # (folder, root)
    #: listings the session's recordings search made (pytest_stedge.recordings), each
    #: taken once by the collection that follows instead of listing the folder again
    scans: dict[str, FolderScan] = field(default_factory=dict)

    def take_scan(self, folder: str) -> FolderScan | None:
        """The listing of ``folder``: the search's, else a new one."""
        scan = self.scans.pop(folder, None)
        return scan if scan is not None else scan_folder(folder)

    def real_folder(self, folder: str | Path) -> Path:
        """``folder`` without symlinks (resolved once)."""
        key = os.fspath(folder)
        real = self.real.get(key)
        if real is None:
            real = self.real[key] = Path(os.path.realpath(key))
        return real

    def saw_folder(self, folder: str, files: Iterable[str]) -> None:
        """A folder scan found ``folder`` (absolute, no symlink) holding these regular files."""
        above, name = os.path.split(folder)
        self.scanned[folder] = ScannedFolder(self.real_folder(above) / name, frozenset(files))

    def is_inside(self, folder: Path, root: Path) -> bool:
        """Whether ``folder`` (without symlinks) is ``root`` or below it."""
        key = (folder, root)
        inside = self.inside.get(key)
        if inside is None:
            inside = self.inside[key] = folder.is_relative_to(root)
        return inside


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
            root = _resolved(case_toml, corpus_root)
        elif above in cache.roots:
            root = cache.roots[above]
        else:
            root = cache.roots[above] = _resolved(case_toml, find_corpus_root(case_toml))
        if cache.is_inside(scanned.real.parent, root):
            local = scanned.names
        base_name = os.path.basename(folder_text)
    else:
        real = _real_path(case_toml, cache)  # once: the case's paths are built on it
        # The corpus is found from where the case file sits, not where a symlink leads: a
        # case folder linked from outside brings none of its surroundings in.
        given = Path(os.path.abspath(case_toml))
        if corpus_root is not None:
            root = _resolved(case_toml, corpus_root)
        elif cache is not None:  # the root depends only on the folder above the case folder
            key = os.path.dirname(os.path.dirname(str(given)))
            if key not in cache.roots:
                cache.roots[key] = _resolved(case_toml, find_corpus_root(given))
            root = cache.roots[key]
        else:
            root = _resolved(case_toml, find_corpus_root(given))
        # The folder's name as it sits in the corpus, not where a symlink leads.
        base_name = given.parent.name
    try:
        raw = toml_reader.loads(case_toml.read_bytes().decode("utf-8"))
    except toml_reader.TOMLDecodeError as exc:
        raise CaseError(case_toml, None, f"not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CaseError(case_toml, None, f"not UTF-8 text: {exc}") from None
    except (OSError, ValueError) as exc:  # missing, unreadable, a symlink loop
        raise CaseError(case_toml, None, f"cannot read the case file: {_why(exc)}") from None
    variants = raw.pop("variants", None)

    def build(name: str, variant: str | None, values: Mapping[str, Any]) -> Case:
        try:
            return _build_case(real, root, name, variant, values, local)
        except CaseError as exc:  # named as the user wrote it, not where a link leads
            if exc.path == case_toml:
                raise
            raise CaseError(case_toml, exc.key, exc.message) from None

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


def _real_path(case_toml: Path, cache: PathCache | None) -> Path:
    """The case file's path without symlinks: the folder above the case folder resolved
    once per collection, then a look at the case folder and the file themselves."""
    if cache is None or not case_toml.is_absolute():
        return Path(os.path.realpath(case_toml))
    folder = cache.real_folder(case_toml.parent.parent) / case_toml.parent.name
    if os.path.islink(folder) or os.path.islink(case_toml):
        return Path(os.path.realpath(case_toml))
    return folder / case_toml.name


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
        raise fail(first, f"unknown key {first!r}; accepted keys: {', '.join(sorted(_TOP_KEYS))}")

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
        model = _inside(path, root, model_source.file, prefix + "model.file")
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
        from .options import timeout_problem

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
        None if memory_pool is None else _inside(path, root, memory_pool, prefix + "memory_pool")
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
        expect=_expectations(path, raw.get("expect"), prefix),
        baseline=_baseline(path, raw.get("baseline"), prefix),
    )


def resolve_model(
    path: Path, root: Path, ref: str, key: str, local: frozenset[str] = frozenset()
) -> Path:
    """Resolve a model reference: a file inside the corpus, or an onnx test-data model.

    :param local: names of regular files a folder scan has just seen in the case's (real)
        folder, itself inside the corpus: such a name needs no look again.
    """
    if ref.startswith(ONNX_LIGHT_PREFIX):
        name = ref[len(ONNX_LIGHT_PREFIX) :]
        light = onnx_light_dir()
        candidates = sorted(p.stem.removeprefix("light_") for p in light.glob("light_*.onnx"))
        model = light / f"light_{name}.onnx"
        if name not in candidates:
            raise CaseError(
                path, key, f"{ref!r}: no such model in {light}; accepted: {', '.join(candidates)}"
            )
        return model
    if ref in local:
        return path.parent / ref
    model = _inside(path, root, ref, key)
    if not model.is_file():
        raise CaseError(path, key, f"model file {ref!r} not found (looked for {model})")
    return model


def onnx_light_dir() -> Path:
    """Folder of the real architectures the onnx package ships as test data."""
    import importlib.util

    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the onnx package is not installed")
    return Path(spec.origin).parent / "backend" / "test" / "data" / "light"


def _inside(path: Path, root: Path, ref: Any, key: str) -> Path:
    if not isinstance(ref, str) or not ref:
        raise CaseError(path, key, f"expected a relative path string, got {ref!r}")
    if "\0" in ref:
        raise CaseError(path, key, f"path {ref!r} holds a NUL character; expected a relative path")
    if Path(ref).is_absolute():
        raise CaseError(path, key, f"path {ref!r} is absolute; expected a path relative to "
                                   "the case folder, inside the corpus")
    candidate = path.parent / ref
    if os.sep in ref or "/" in ref or ref in (".", "..") or candidate.is_symlink():
        try:  # a plain name in the (resolved) case folder is final
            candidate = candidate.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop
            raise CaseError(path, key, f"path {ref!r} cannot be resolved: {_why(exc)}") from None
    if not candidate.is_relative_to(root):
        raise CaseError(
            path, key, f"path {ref!r} leaves the corpus ({root}); keep case files inside it"
        )
    return candidate


def _resolved(case_toml: Path, root: Path) -> Path:
    try:
        return Path(root).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise CaseError(case_toml, None, f"corpus root {root} cannot be resolved: "
                                         f"{_why(exc)}") from None


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)


def _neural_art(path: Path, root: Path, raw: Any, prefix: str) -> NeuralArt | None:
    if raw is None:
        return None
    key = prefix + "neural_art"
    if not isinstance(raw, dict):
        raise CaseError(path, key, f"expected {_TOP_KEYS['neural_art']}, got {raw!r}")
    unknown = sorted(set(raw) - set(_NEURAL_ART_KEYS))
    if unknown:
        raise CaseError(
            path, f"{key}.{unknown[0]}", f"unknown key; accepted: {', '.join(_NEURAL_ART_KEYS)}"
        )
    profile = raw.get("profile", "default")
    if not isinstance(profile, str) or not profile or "@" in profile or "\0" in profile:
        # PROFILE@FILE is how the harness names the file: an '@' here would name another
        raise CaseError(path, f"{key}.profile", f"expected a profile name (no '@' or NUL; the "
                                                f"file is neural_art.file), got {profile!r}")
    file = raw.get("file")
    mpool = raw.get("mpool")
    file_path = None if file is None else _inside(path, root, file, f"{key}.file")
    mpool_path = None if mpool is None else _inside(path, root, mpool, f"{key}.mpool")
    for sub, value in (("file", file_path), ("mpool", mpool_path)):
        if value is not None and not value.is_file():
            raise CaseError(path, f"{key}.{sub}", f"file not found: {value}")
    if mpool_path is not None and file_path is None:
        raise CaseError(
            path, f"{key}.mpool", "an mpool needs a profile file to override (set neural_art.file)"
        )
    return NeuralArt(profile=profile, file=file_path, mpool=mpool_path)


def _expectations(path: Path, raw: Any, prefix: str) -> dict[str, tuple[Bound, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CaseError(path, prefix + "expect", f"expected {_TOP_KEYS['expect']}")
    result: dict[str, list[Bound]] = {"": []}
    for key, value in raw.items():
        if key in ALL_STAGES:
            if not isinstance(value, dict):
                raise CaseError(path, f"{prefix}expect.{key}", "expected a table of metrics")
            result[key] = [
                _bound(path, f"{prefix}expect.{key}.{m}", m, v) for m, v in value.items()
            ]
        else:
            result[""].append(_bound(path, f"{prefix}expect.{key}", key, value))
    return {k: tuple(v) for k, v in result.items() if v}


def _bound(path: Path, key: str, metric: str, raw: Any) -> Bound:
    if metric not in METRICS:
        raise CaseError(
            path, key, f"unknown metric {metric!r}; accepted: {', '.join(sorted(METRICS))}"
        )
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise CaseError(path, key, f"expected a finite number, got {raw!r}")
        return Bound(metric, exact=float(raw))
    if not isinstance(raw, dict) or not raw:
        raise CaseError(path, key, "expected a number or a table with min, max, exact, rel, abs")
    unknown = raw.keys() - _BOUND_NAMES
    if unknown:
        raise CaseError(
            path, f"{key}.{min(unknown)}", f"unknown bound; accepted: {', '.join(EXPECT_BOUNDS)}"
        )
    values: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CaseError(path, f"{key}.{name}", f"expected a number, got {value!r}")
        if not math.isfinite(value):  # nan compares false: `max = nan` would pass anything
            raise CaseError(path, f"{key}.{name}", f"expected a finite number, got {value!r}")
        if value < 0 and name in ("rel", "abs"):
            raise CaseError(path, f"{key}.{name}",
                            f"expected a tolerance >= 0 (a fraction for rel), got {value!r}")
        values[name] = float(value)
    limits = values.keys() & _LIMIT_NAMES
    if not limits:
        raise CaseError(path, key, "needs at least one of min, max, exact")
    if "exact" in limits and len(limits) > 1:
        raise CaseError(path, key, "exact cannot be combined with min or max")
    if values.get("min", -math.inf) > values.get("max", math.inf):
        raise CaseError(path, key, f"min {values['min']:g} is above max {values['max']:g}")
    return Bound(metric, **values)


def _baseline(path: Path, raw: Any, prefix: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CaseError(path, prefix + "baseline", f"expected {_TOP_KEYS['baseline']}")
    out: dict[str, str] = {}
    for metric, band in raw.items():
        key = f"{prefix}baseline.{metric}"
        if metric not in METRICS:
            raise CaseError(
                path, key, f"unknown metric {metric!r}; accepted: {', '.join(sorted(METRICS))}"
            )
        if isinstance(band, (int, float)) and not isinstance(band, bool):
            band = str(band)
        if not isinstance(band, str):
            raise CaseError(path, key, f"expected a band such as '+3%', '+1024' or '0', got {band!r}")
        out[metric] = band
    return out


def iter_case_files(root: Path) -> Iterator[Path]:
    """Every case.toml under ``root``, sorted."""
    yield from sorted(Path(root).rglob("case.toml"))

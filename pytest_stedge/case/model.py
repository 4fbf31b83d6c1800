"""The case model: a corpus case as the rest of the package sees it (validated, paths
resolved), its expectations' :class:`Bound` and its Neural-ART choice."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .record_only import ModelSource

STAGES = ("generate", "analyze", "validate-host", "validate-target")
ALL_STAGES = ("oracle", *STAGES)
EXPECT_BOUNDS = ("min", "max", "exact", "rel", "abs")
ONNX_LIGHT_PREFIX = "onnx-light:"


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

    def stated_options(self) -> list[str]:
        """The options that make this case's runs what they are, as words (what
        :meth:`options_hash` hashes, files by name): shown when two runs do not compare."""
        words = ["--target", self.target, *self.options]
        if self.c_name != "network":
            words += ["--name", self.c_name]
        if self.neural_art is not None:
            named = f"@{self.neural_art.file.name}" if self.neural_art.file else ""
            words += ["--st-neural-art", f"{self.neural_art.profile}{named}"]
        pool = self.memory_pool or (self.neural_art.mpool if self.neural_art else None)
        if pool is not None:
            words += ["--memory-pool", pool.name]
        return words

    def bounds_for(self, stage: str, measured: Mapping[str, float] | None = None) -> tuple[Bound, ...]:
        """The expectations to check on ``stage``: generic ones, then the stage's own.

        A generic (``[expect]``) bound applies to every stage that measures its metric: the
        stages whose outputs always state it (memory and epochs for generate and analyze,
        accuracy for validate; missing there is a miss) and any other stage whose item
        ``measured`` it (a validate report states memory and epochs too).
        """
        return tuple(bound for _key, bound in self.keyed_bounds(stage, measured))

    def keyed_bounds(
        self, stage: str, measured: Mapping[str, float] | None = None
    ) -> list[tuple[str, Bound]]:
        """:meth:`bounds_for` with each bound's key as a case file names it
        (``expect.activations_bytes``, ``expect.validate-host.val_cos``)."""
        from ..result import metric_applies

        seen = measured or {}
        specific = list(self.expect.get(stage, ()))
        overridden = {b.metric for b in specific}
        generic = [
            (f"expect.{b.metric}", b)
            for b in self.expect.get("", ())
            if b.metric not in overridden and (metric_applies(b.metric, stage) or b.metric in seen)
        ]
        return generic + [(f"expect.{stage}.{b.metric}", b) for b in specific]

    def stage_keys(self) -> list[str]:
        """The keys of the bounds some stage of the case checks whatever it measures."""
        stages = (*self.stages, "oracle") if self.oracle else self.stages
        return sorted({key for stage in stages for key, _bound in self.keyed_bounds(stage)})

    def expect_keys(self) -> list[str]:
        """Every bound of the case by its key (see :meth:`keyed_bounds`), sorted."""
        return sorted(
            f"expect.{b.metric}" if table == "" else f"expect.{table}.{b.metric}"
            for table, bounds in self.expect.items()
            for b in bounds
        )


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _digest_or_none(path: Path | None) -> str | None:
    return None if path is None or not path.is_file() else file_sha256(path)

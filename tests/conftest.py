"""Shared fixtures: the real samples in ../shared, tiny ONNX models, fake installs, corpora."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Import C extensions once, before pytester's in-process runs snapshot sys.modules:
# numpy cannot be loaded twice in one process, and DuckDB keeps the pyarrow modules it
# first saw (a second copy, loaded after a test's snapshot was restored, is "not
# pyarrow" to it: the store's Arrow inserts fail with "pyarrow.dataset is required").
import duckdb  # noqa: F401
import numpy  # noqa: F401
import onnx
import onnxruntime  # noqa: F401
import pyarrow.dataset  # noqa: F401
import pytest


def _share_compiled_modules() -> None:
    """Every Python process of one test run (xdist workers, pytest sessions under test, the
    fake tool, `stedge` commands: hundreds) reuses the modules the first one compiled and
    assertion-rewrote, from a cache folder of the run's own. Without it, where the machine
    sets PYTHONDONTWRITEBYTECODE (as CI's does), each process compiled and rewrote all it
    imported: a pytest session under test cost 1.2 s of CPU instead of 0.45 s. A folder
    per run, never the source tree's __pycache__: no stale bytecode can outlive a changed
    source (tools/mutate.py rewrites a line in place), and the checkout stays clean."""
    import atexit
    import shutil
    import sys
    import tempfile

    if os.environ.get("STEDGE_TEST_PYCACHE"):
        return  # a process of a run that made its folder already
    folder = tempfile.mkdtemp(prefix="stedge-tests-pycache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["STEDGE_TEST_PYCACHE"] = os.environ["PYTHONPYCACHEPREFIX"] = folder
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix, sys.dont_write_bytecode = folder, False


_share_compiled_modules()

PROJECT = Path(__file__).resolve().parents[1]
SHARED = PROJECT.parent / "shared"
# The modules with property tests: hypothesis' pytest plugin serves these processes only.
PROPERTY_TESTS = ("test_parsers_hypothesis.py", "test_signature.py")
NO_HYPOTHESIS = "-p no:hypothesispytest"


def pytest_configure(config: pytest.Config) -> None:
    """Register hypothesis' pytest plugin (kept out by pyproject's addopts) in a process
    that collects property tests: its health checks, statistics and failure reports serve
    them as usual, and every other process is spared importing hypothesis."""
    manager = config.pluginmanager
    if manager.has_plugin("hypothesispytest") or manager.has_plugin("hypothesis-tests"):
        return
    if _collects_property_tests(config):
        import _hypothesis_pytestplugin

        manager.register(_hypothesis_pytestplugin, "hypothesis-tests")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite (plain ``pytest``: README command 2, CI) runs on every core, up to
    four: most of its time is sessions, subprocesses and waits that overlap well. Anything
    chosen on the command line wins: test paths or ``-k`` (a few tests start faster in one
    process), ``-n N``, ``-p no:xdist``, ``--pdb``, ``--collect-only``."""
    option = config.option
    if (config.args_source is not pytest.Config.ArgsSource.TESTPATHS
            or not config.pluginmanager.has_plugin("xdist")
            or getattr(option, "numprocesses", None) is not None
            or getattr(option, "dist", "no") != "no"
            or option.usepdb or option.collectonly or option.keyword or option.markexpr
            or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                  else os.cpu_count() or 1, 4)
    if workers > 1:
        option.numprocesses = workers
        option.dist = "worksteal"  # the slow tests end at different times: idle workers steal


# The slowest real test takes ~40 s on a busy 2-core machine: a hung one fails at 300 s.
TEST_TIMEOUT_S = 300


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test without its own ``timeout`` mark the suite's ceiling (pytest-timeout
    from the test extra; without it, as in the main job's install, no ceiling)."""
    if not config.pluginmanager.has_plugin("timeout"):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))

def _collects_property_tests(config: pytest.Config) -> bool:
    base = config.invocation_params.dir
    wanted = [Path(__file__).parent / name for name in PROPERTY_TESTS]
    for arg in config.args:
        path = (base / arg.split("::")[0]).resolve()
        if any(path == module or path in module.parents for module in wanted):
            return True
    return False


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose sessions (in this process or a new one) leave hypothesis' plugin out:
    they never run a property test."""
    monkeypatch.setenv("PYTEST_ADDOPTS", NO_HYPOTHESIS)
    return pytester


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """A folder built once per test run and read by every xdist worker: the first worker
    to ask builds it under a lock, the others wait for it (tests copy what they change)."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / f"built-{name}"
    with open(root / f"built-{name}.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that died while building
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (real tool outputs); tests that need it skip where it is absent."""
    if not (SHARED / "stedgeai-samples").is_dir():
        pytest.skip(f"real stedgeai samples not available: {SHARED} is absent")
    return SHARED


def make_conv_model(path: Path, channels: int = 8, size: int = 16, layers: int = 2) -> Path:
    """A small float Conv+Relu chain (deterministic), written to ``path``."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []
    previous, cin = "input", 3
    for i in range(layers):
        w = numpy_helper.from_array(
            rng.standard_normal((channels, cin, 3, 3)).astype("float32"), f"w{i}"
        )
        b = numpy_helper.from_array(np.zeros(channels, "float32"), f"b{i}")
        inits += [w, b]
        nodes.append(
            helper.make_node("Conv", [previous, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1])
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        previous, cin = f"r{i}", channels
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, channels, size, size])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="session")
def fake_installs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of fake stedgeai installs side by side: 3.0.0 and 4.0.1 (as /opt/ST/STEdgeAI)."""
    from fake_stedgeai import make_install

    root = tmp_path_factory.mktemp("STEdgeAI")
    make_install(root / "3.0", "3.0.0")
    make_install(root / "4.0", "4.0.1")
    return root


CorpusFactory = Callable[..., Path]


@pytest.fixture
def make_corpus(tmp_path: Path) -> CorpusFactory:
    """Write a corpus of cases: ``make_corpus({"cnn": CASE_TOML_TEXT, ...})``.

    Each case folder gets a ``model.onnx`` (a small Conv+Relu chain, its size varied by
    the case's position so different cases give different figures).
    """

    def factory(cases: dict[str, str], root: Path | None = None, **models: Any) -> Path:
        corpus = root or tmp_path / "corpus"
        (corpus / "profiles").mkdir(parents=True, exist_ok=True)
        for index, (name, text) in enumerate(cases.items()):
            folder = corpus / name
            folder.mkdir(parents=True, exist_ok=True)
            if not (folder / "model.onnx").exists():
                make_conv_model(folder / "model.onnx", channels=4 + 4 * index, size=8 + 4 * index)
            (folder / "case.toml").write_text(textwrap.dedent(text), encoding="utf-8")
        return corpus

    return factory


SIMPLE_CASE = """\
    description = "two Conv+Relu layers"
    model = "model.onnx"
    target = "stm32n6"
    stages = ["generate"]
    [neural_art]
    profile = "default"
    """


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on 127.0.0.1 with a throwaway data directory, for the
    session; skips, saying why, when no server binary (or no extension) is installed."""
    from pgserver import PostgresServer, why_not

    reason = why_not()
    if reason:
        pytest.skip(f"no PostgreSQL for the shared-store tests: {reason}")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_store(postgres_server: Any, request: pytest.FixtureRequest) -> str:
    """The URL of a new, empty database on the session's server (one per test)."""
    import re

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:50]
    return str(postgres_server.create_database(name))


def built_run(path: Path) -> dict[str, Any]:
    """Of the runs a file or folder holds (a log with a generate and a validate), the one
    that built the model: its figures (memory, MACC, epochs) are the deployed graph's."""
    from pytest_stedge.parsers import parse_runs

    runs = parse_runs(path)
    return next((r for r in runs if r["command"] != "validate"), runs[0])


def validate_run(path: Path) -> dict[str, Any]:
    """Of the runs a file or folder holds, the validate (the last run when there is none)."""
    from pytest_stedge.parsers import parse_runs

    runs = parse_runs(path)
    return next((r for r in runs if r["command"] == "validate"), runs[-1])


def mounted_tmpfs(folder: Path, size: str):  # type: ignore[no-untyped-def]
    """Mount a tmpfs of ``size`` (``16m``) on a new ``folder`` for the fixture that yields
    from this; skips where mounting is not allowed (root only)."""
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True, check=False,
    ).returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


@pytest.fixture
def readonly_mount(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A folder mounted read-only (root ignores file modes; a read-only mount binds it)."""
    yield from mounted_tmpfs(tmp_path / "ro", "64m")

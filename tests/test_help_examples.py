"""Every example line of every ``stedge <command> --help`` runs as printed (issue 30).

The examples are read from the parsers' epilogs, split with shlex (never a shell) and run by
the installed ``stedge`` in a folder prepared so that each can run: the files it names (a
small ONNX model, real tool outputs from ../shared, copies of corpus cases), two stores made
by short pytest sessions with the fake stedgeai, the fake installs, and the board simulator.
What a shell would do to a line is done here by hand: ``~`` is the prepared HOME, ``$VAR``
an environment variable set here, and a trailing ``> FILE`` writes stdout to FILE.

A board example runs against the simulator on a socket: only its ``--board`` spec is
replaced (``serial:/dev/ttyACM0:921600``, ``auto`` and ``serial:921600`` name hardware this
machine does not have); :data:`BOARD_SUBSTITUTED` lists them. An example that cannot run here
at all is in :data:`NOT_RUNNABLE` with the reason; a new example that is in neither table
fails :func:`test_every_example_is_run_or_listed`.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import built_once
from help_workspace import (
    AISTUDIO_LOG,
    BLAZE_OE,
    BLAZE_WS,
    CACHE_OPT_BUG,
    MICRO_TARGET,
    SHARED,
    aistudio_case,
    environment,
    micro_output,
    prepare,
)

from pytest_stedge.board.sim.simulator import BoardSimulator
from pytest_stedge.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
STEDGE = Path(sys.executable).with_name("stedge")
_CORPUS_PATH = re.compile(r"(?<![\w/.])corpus/[\w./-]+")
# an example's comment starts after two spaces (the help's column) or at " # "
_COMMENT = re.compile(r"\s{2,}|\s+#\s")


@dataclass(frozen=True)
class Example:
    """One example line of a help text."""

    prog: str
    line: str   # the command as printed, comment cut

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.line)


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def help_examples() -> list[Example]:
    """Every ``stedge ...`` line under ``examples:`` of every help text."""
    found: list[Example] = []
    for parser in _parsers(build_parser()):
        lines = (parser.epilog or "").splitlines()
        if "examples:" not in lines:
            continue
        for line in lines[lines.index("examples:") + 1:]:
            if not line.strip():
                break
            command = _COMMENT.split(line.strip())[0]
            if command.startswith("stedge "):
                found.append(Example(parser.prog, command))
    return found


# example -> the exit status its help gives it when not 0 (none today)
STATUS: dict[str, int] = {}
# run with a 4.0.1 that has CACHE_OPT_BUG (STEDGEAI_CORE_DIR: a 3.0.0 beside that 4.0.1), so
# that the bisection has something to find; the printed command is unchanged
WITH_THE_BUG = {
    ("stedge bisect corpus/tcn-23x60 --version 4.0.1 --stage validate-target "
    "--board serial:/dev/ttyACM0:921600"),
    "stedge bisect corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate --json",
    ("stedge bug-report corpus/tcn-23x60 --version 4.0.1 --passing-version 3.0.0 --stage "
    "validate-target --board serial:/dev/ttyACM0:921600 --bisect"),
    ("stedge bug-report corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate "
    "--passing-version 3.0.0 --db ci/results.duckdb"),
}
# examples run against the board simulator with only their --board spec replaced
BOARD_SUBSTITUTED = {
    "stedge board-run model.onnx --board serial:/dev/ttyACM0:921600 --per-layer --out dump.npz",
    "stedge board-run corpus/mlperf-ds-cnn/case.toml --board auto --out ds-cnn.npz",
    ("stedge board-run model.tflite --board serial:921600 --per-layer --out n6.npz "
    "--c-info st_ai_output/network_c_info.json"),
    # a fixed port may be taken on a shared machine: the simulator's own port instead
    "stedge boards --probe --board socket://127.0.0.1:5555",
    # the fake stedgeai validates on the board its --desc names: the simulator
    ("stedge bisect corpus/tcn-23x60 --version 4.0.1 --stage validate-target "
    "--board serial:/dev/ttyACM0:921600"),
    ("stedge bug-report corpus/tcn-23x60 --version 4.0.1 --passing-version 3.0.0 --stage "
    "validate-target --board serial:/dev/ttyACM0:921600 --bisect"),
}
# examples that cannot run on this machine, with the reason
NOT_RUNNABLE: dict[str, str] = {
    "stedge boards --probe --baud 921600":
        "probes every USB serial port of the machine (no --board to point at the simulator); "
        "this one has none and says so: 'no USB serial ports found', exit 1",
}
# examples run against a local PostgreSQL server (tests/pgserver.py) holding the runs of
# both stores, with only their --db URL replaced (the host `db` is not here); skipped,
# saying why, where no server binary is installed
DB_SUBSTITUTED = {
    ("stedge diff 3.0.0 4.0.1 --group nightly-41 --group $CI_PIPELINE_ID "
    "--db postgresql://ci@db/stedge"),
}


SETUP = {
    "stedge parse st_ai_output/": micro_output,
    "stedge parse st_ai_output/network_c_info.json": micro_output,
    "stedge metrics st_ai_output/network_val_io.npz": micro_output,
    "stedge diverge st_ai_output/network_val_io.npz": micro_output,
    "stedge ingest logs.txt --run 2 --version 4.0.1 --case mvs-cnn/int8": aistudio_case,
}


def test_every_corpus_path_in_a_help_example_exists() -> None:
    named = []
    for parser in _parsers(build_parser()):
        for path in _CORPUS_PATH.findall(parser.format_help()):
            named.append(path)
            assert (ROOT / path.rstrip(".")).exists(), f"{parser.prog}: help names {path}"
    assert "corpus/mlperf-ds-cnn/case.toml" in named


def test_every_example_is_run_or_listed() -> None:
    """Every example is collected (a new one is run by the test below until it is listed in
    NOT_RUNNABLE), and every table here names an example a help text still prints."""
    examples = {e.line for e in help_examples()}
    with_examples = {p.prog for p in _parsers(build_parser()) if "examples:" in (p.epilog or "")}
    assert {e.prog for e in help_examples()} == with_examples   # none printed in another form
    assert len(with_examples) == 22 and len(examples) == 64
    assert set(RUNS) == examples - set(NOT_RUNNABLE)
    stale = (set(NOT_RUNNABLE) | BOARD_SUBSTITUTED | DB_SUBSTITUTED | set(STATUS) | set(SETUP)
             | WITH_THE_BUG | set(AFTER)) - examples
    assert not stale, f"listed here but in no help text: {sorted(stale)}"


# ---------------------------------------------------------------- the prepared folder

# ---------------------------------------------------------------- what an example leaves

def _json(text: str) -> object:
    import json

    return json.loads(text)


def _validate_of_the_log(work: Path, out: str) -> None:
    run = _json(out)
    assert isinstance(run, dict) and run["command"] == "validate"
    # the log's own line 820 (the validate on the board): cos=0.997453
    assert run["validation"]["outputs"][0]["cos"] == pytest.approx(0.997453)


def _culprit(work: Path, out: str) -> None:
    report = _json(out)
    assert isinstance(report, dict) and report["culprits"] == CACHE_OPT_BUG["when_options"]


# example -> what it must print (a text in stdout) or write (a path under the folder), or a
# check of both; figures from an independent source: the real file, the injected fault
AFTER: dict[str, object] = {
    "stedge show 3": "run 3 ",
    "stedge diff 3.0.0 4.0.1 --group nightly-41 --group $CI_PIPELINE_ID "
    "--db postgresql://ci@db/stedge": "stedge diff 3.0.0 -> 4.0.1: ",
    "stedge import bundle/": "imported 12 run(s)",
    "stedge import n6-lab/ --db ci/results.duckdb": "imported 2 run(s)",
    "stedge export --out bundle/": Path("bundle"),
    "stedge export --out n6-lab/ --run 7 --run 8": "2 runs",
    "stedge ingest logs.txt --run 2 --version 4.0.1 --case mvs-cnn/int8": "val_cos=0.997453",
    "stedge ingest dc-run/ --run 2 --version 3.0.0 --case tcn-23x60 --stage validate-target":
        "tcn-23x60 validate-target [3.0.0]",
    "stedge parse logs.txt --run 2 --json": _validate_of_the_log,
    "stedge diff 3.0.0 4.0.1 --html reports/diff-3.0.0-4.0.1.html":
        Path("reports/diff-3.0.0-4.0.1.html"),
    "stedge report 12 --out reports/run-12.html --db ci/results.duckdb":
        Path("reports/run-12.html"),
    "stedge dashboard --out public/ --db ci/results.duckdb --corpus corpus":
        Path("public/index.html"),
    "stedge reference model.onnx --out ref.npz --samples 100 --seed 0": Path("ref.npz"),
    "stedge board-run model.onnx --board serial:/dev/ttyACM0:921600 --per-layer --out dump.npz":
        Path("dump.npz"),
    "stedge board-run corpus/mlperf-ds-cnn/case.toml --board auto --out ds-cnn.npz":
        Path("ds-cnn.npz"),
    "stedge corpus build --out rebuilt/": Path("rebuilt/mlperf-ds-cnn/model_int8.onnx"),
    "stedge bisect corpus/tcn-23x60 --version 4.0.1 --stage validate-target "
    "--board serial:/dev/ttyACM0:921600": "verdict: --Ocache-opt: with this the check fails",
    "stedge bisect corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate --json":
        _culprit,
    "stedge bug-report corpus/tcn-23x60 --version 4.0.1 --passing-version 3.0.0 --stage "
    "validate-target --board serial:/dev/ttyACM0:921600 --bisect":
        Path("bug-report-tcn-23x60-4.0.1/POST.md"),
    "stedge bug-report corpus/mobilenetv2-0.35-128 --version 4.0.1 --stage generate "
    "--passing-version 3.0.0 --db ci/results.duckdb":
        Path("bug-report-mobilenetv2-0.35-128-4.0.1/POST.md"),
}


def _clear(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def check_after(example: str, work: Path, out: str) -> None:
    """What AFTER says the example prints or writes."""
    want = AFTER.get(example)
    if isinstance(want, str):
        assert want in out, f"{example}: {want!r} not printed"
    elif isinstance(want, Path):
        assert (work / want).exists(), f"{example}: {want} not written"
    elif callable(want):
        want(work, out)


# ---------------------------------------------------------------- running an example

def _board(example: str, work: Path) -> BoardSimulator | None:
    """The simulator a board example runs against (None: not a board example)."""
    if example not in BOARD_SUBSTITUTED:
        return None
    if "model.tflite" in example:
        sim = BoardSimulator(work / "st_ai_output" / BLAZE_OE.name,
                             c_info=work / "st_ai_output/network_c_info.json")
        sim.signature = ""   # the N6 firmware reports no model signature
        return sim
    if "corpus/tcn-23x60" in example:
        return BoardSimulator(work / "corpus/tcn-23x60/model_int8.onnx")
    if "mlperf-ds-cnn" in example:
        return BoardSimulator(work / "corpus/mlperf-ds-cnn/model_int8.onnx")
    return BoardSimulator(work / "model.onnx")


def as_a_shell_would(argv: list[str], env: dict[str, str]) -> tuple[list[str], str | None]:
    """``~`` and ``$VAR`` expanded, a trailing ``> FILE`` taken off: (argv, FILE)."""
    out = None
    if len(argv) > 2 and argv[-2] == ">":
        argv, out = argv[:-2], argv[-1]
    for name in re.findall(r"\$(\w+)", " ".join(argv)):
        assert name in env, f"${name} is not set for the example"
    home = env["HOME"]
    expanded = [re.sub(r"\$(\w+)", lambda m: env[m.group(1)], re.sub(r"^~(?=/|$)", home, a))
                for a in argv]
    return expanded, out


def _shared_store(request: pytest.FixtureRequest, base: Path) -> str:
    """A new database on the local PostgreSQL server holding the runs of both stores."""
    from pytest_stedge.cli.main import main

    url = str(request.getfixturevalue("postgres_store"))
    for bundle in (base / "default-bundle", base / "work/bundle"):
        assert main(["import", str(bundle), "--db", url]) == 0
    return url


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    if not (MICRO_TARGET.is_dir() and BLAZE_WS.is_dir() and AISTUDIO_LOG.is_file()):
        pytest.skip(f"the real tool outputs the examples read live in {SHARED} (absent)")
    base = built_once(tmp_path_factory, "help-examples", prepare)  # ~20 s: once per run
    return base / "work", environment(base / "home")


RUNS = list(dict.fromkeys(e.line for e in help_examples() if e.line not in NOT_RUNNABLE))


# the bisections re-run the fake tool 7 to 15 times each (40-60 s on a busy 2-core machine)
@pytest.mark.parametrize("example", [
    pytest.param(e, id=e, marks=[pytest.mark.slow] if e in WITH_THE_BUG else [])
    for e in RUNS])
def test_the_help_example_runs_as_printed(example: str, template: tuple[Path, dict[str, str]],
                                          tmp_path: Path, request: pytest.FixtureRequest) -> None:
    base, env = template
    shutil.copytree(base.parent, tmp_path / "ws", symlinks=True)
    work = tmp_path / "ws/work"
    # the fake installs stay where they were made (their files name their own folder)
    installs = base.parent / ("buggy" if example in WITH_THE_BUG else "home/tools/stedgeai")
    env = environment(tmp_path / "ws/home", installs)
    argv, out = as_a_shell_would(shlex.split(example), env)
    if example in SETUP:
        SETUP[example](work)
    written = AFTER.get(example)
    if isinstance(written, Path):   # the prepared folder may hold it: see it written anew
        _clear(work / written)
    if example in DB_SUBSTITUTED:
        argv[argv.index("--db") + 1] = _shared_store(request, base.parent)
    sim = _board(example, work)
    if sim is not None:
        argv[argv.index("--board") + 1] = sim.start_socket()
    try:
        done = subprocess.run([str(STEDGE), *argv[1:]], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
    finally:
        if sim is not None:
            sim.stop()
    printed = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert "Traceback" not in done.stderr, printed
    assert done.returncode == STATUS.get(example, 0), printed
    if out is not None:   # each `--json > FILE` example writes JSON
        (work / out).write_text(done.stdout, encoding="utf-8")
        assert "--json" in argv, f"{example}: writes {out} without --json"
        _json(done.stdout)
    check_after(example, work, done.stdout)

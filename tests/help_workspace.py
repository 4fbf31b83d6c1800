"""The folder `stedge` help examples run in (tests/test_help_examples.py): the files they
name, two stores from short pytest sessions of the fake tool, board dumps made by stedge
board-run against the simulator, real tool outputs from ../shared."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import SHARED, make_conv_model

ROOT = Path(__file__).resolve().parents[1]
PIPELINE_ID = "9137"   # $CI_PIPELINE_ID of the diff example: a run group stored here

MICRO = SHARED / "real-cases/n6-micro-convs-4flows/conv2d_16f_3x3"
MICRO_TARGET = MICRO / "2.2.0-cubemx-target"
BLAZE = SHARED / "real-cases/n6-blazeface-2profiles"
BLAZE_WS = BLAZE / "2.2.0-profile-default-cli/generate-2025-08-25"
BLAZE_OE = BLAZE_WS / "blazeface_front_128_quant_pc_ff_od_wider_face_OE_3_3_0.onnx"
BLAZE_TFLITE = BLAZE / "blazeface_front_128_quant_pc_ff_od_wider_face.tflite"
CUBEMX_OUT = SHARED / "real-cases/n6-mobilenetv1-cubemx/2.2.0-cubemx"
AISTUDIO = SHARED / "real-cases/n6-mobilenetv2-224-onnx-irv/rev-A-ir10"
AISTUDIO_LOG = AISTUDIO / "4.0.1-aistudio/mobilenet_v2_224.txt"   # generate, then validate
AISTUDIO_MODEL = AISTUDIO / "mobilenet_v2_224_int8.onnx"
CONSOLE = MICRO / "2.2.0-devcloud/conv2d_16f_3x3.txt"

# A compiler bug that shows with --Ocache-opt only: the board's outputs are uncorrelated
# (as tcn-23x60's 4.0.1 bug) and the activations three times the plan. The bisect and
# bug-report examples run with a 4.0.1 that has it (STEDGEAI_CORE_DIR: the 3.0.0 beside a
# faulty 4.0.1), so that there is something to find; the printed command is unchanged.
CACHE_OPT_BUG = {"when_options": ["--Ocache-opt"], "validate": {"uncorrelated": True},
                 "inflate_activations": 3}


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)


def _pytest_session(work: Path, env: dict[str, str], *args: str) -> None:
    """A short pytest session of the fake tool (one run in the store it names)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
         "-p", "no:randomly", *args], cwd=work, env=env, capture_output=True, text=True,
        timeout=600, check=False)
    # a session whose items miss expectations exits 1: its run is stored all the same
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]


def environment(home: Path, installs: Path | None = None) -> dict[str, str]:
    """What the examples run with: HOME, the fake installs, $CI_PIPELINE_ID."""
    env = dict(os.environ)
    installs = installs or home / "tools/stedgeai"
    env.update(HOME=str(home), STEDGEAI_CORE_DIR=str(installs),
               CI_PIPELINE_ID=PIPELINE_ID, COLUMNS="100")
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def prepare(base: Path) -> tuple[Path, dict[str, str]]:
    """Build the folder the examples run in; returns (working folder, environment)."""
    from fake_stedgeai import make_install


    home, work = base / "home", base / "work"
    installs = home / "tools/stedgeai"
    make_install(installs / "3.0", "3.0.0")
    make_install(installs / "4.0", "4.0.1")
    make_install(base / "buggy/3.0", "3.0.0")
    make_install(base / "buggy/4.0", "4.0.1", config=CACHE_OPT_BUG)
    env = environment(home)
    shutil.copytree(ROOT / "corpus", work / "corpus",
                    ignore=shutil.ignore_patterns("light", "__pycache__", "*.pyc"))
    # files the examples name
    make_conv_model(work / "model.onnx")
    _copy(ROOT / "corpus/profiles/stm32n6.mpool", work / "my.mpool")
    # an N6 generate of a TFLite model (its c_info has the buffers epochs map through)
    _copy(BLAZE_TFLITE, work / "model.tflite")
    _copy(BLAZE_WS, work / "st_ai_output")
    for name in ("network_c_info.json", BLAZE_OE.name, BLAZE_OE.stem + "_Q.json"):
        _copy(BLAZE_WS / name, work / name)
    # an on-board validate's outputs
    _copy(MICRO_TARGET / "network_val_io.npz", work / "network_val_io.npz")
    _copy(MICRO_TARGET / "network_val_io.npz", work / "dump/network_val_io.npz")
    _copy(CONSOLE, work / "console.log")
    _copy(AISTUDIO_LOG, work / "logs.txt")
    _copy(CUBEMX_OUT, home / ".stm32cubemx/network_output")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")   # the project's root
    _stores(work, env, installs)
    _dumps(work)
    return work, env


def _stores(work: Path, env: dict[str, str], installs: Path) -> None:
    """The default store and ci/results.duckdb, each from a short pytest session of the fake
    tool (3.0.0 and 4.0.1), then ingests until the run ids the examples name exist."""
    from pytest_stedge.board.sim.simulator import BoardSimulator
    from pytest_stedge.cli.main import main

    versions = ["--stedge-version", "3.0.0", "--stedge-version", "4.0.1",
                "--stedge-root", str(installs)]
    with BoardSimulator(work / "corpus/tcn-23x60/model_int8.onnx") as sim:
        _pytest_session(work, env, "corpus/tcn-23x60", "corpus/mvs-cnn", *versions,
                        "-k", "not float and not validate-host",
                        "--stedge-board", sim.start_socket(), "--stedge-run-group", "nightly-41")
    _pytest_session(work, env, "corpus/relu-dw7", *versions, "-k", "generate",
                    "--stedge-db", "ci/results.duckdb", "--stedge-workdir", "ci/.stedge/work",
                    "--stedge-run-group", PIPELINE_ID)
    runs = min((work / ".stedge/work").glob("run-*"))
    _copy(runs / "tcn-23x60/validate-target-3.0.0/st_ai_output", work / "dc-run")
    _copy(runs / "mvs-cnn/@int8/generate-4.0.1/st_ai_output",
          work.parent / "home/win-share/st_ai_output")
    generate = runs / "tcn-23x60/generate-3.0.0/st_ai_output"
    here = Path.cwd()
    os.chdir(work)
    try:
        for db, count in ((".stedge/results.duckdb", 7), ("ci/results.duckdb", 11)):
            for i in range(count):
                assert main(["ingest", str(generate), "--version", "3.0.0", "--case", "tcn-23x60",
                             "--db", db, *(["--replace"] if i else [])]) == 0
        assert main(["export", "--out", "bundle", "--db", "ci/results.duckdb"]) == 0
        assert main(["export", "--out", "n6-lab", "--run", "7", "--run", "8"]) == 0
        # every run of the default store, for a shared (PostgreSQL) store
        assert main(["export", "--out", str(work.parent / "default-bundle")]) == 0
    finally:
        os.chdir(here)


def _dumps(work: Path) -> None:
    """The board dumps and reference files the examples read, made as their own help says
    (stedge board-run against the simulator, stedge reference)."""
    from pytest_stedge.board.sim.simulator import BoardSimulator
    from pytest_stedge.cli.main import main

    here = Path.cwd()
    os.chdir(work)
    try:
        with BoardSimulator(work / "model.onnx") as sim:
            assert main(["board-run", "model.onnx", "--board", sim.start_socket(),
                         "--per-layer", "--out", "dump.npz"]) == 0
        _copy(work / "dump.npz", work / "layers.npz")
        c_info = work / "st_ai_output/network_c_info.json"
        oe = work / "st_ai_output" / BLAZE_OE.name
        with BoardSimulator(oe, c_info=c_info) as sim:
            sim.signature = ""
            assert main(["board-run", "model.tflite", "--board", sim.start_socket(),
                         "--per-layer", "--out", "n6.npz", "--c-info", str(c_info)]) == 0
        assert main(["reference", "model.onnx", "--out", "ref.npz"]) == 0
        with np.load(work / "ref.npz") as ref:   # a board's outputs: the reference, rounded
            np.save(work / "board_outputs.npy", np.round(ref["m_outputs_1"], 2))
    finally:
        os.chdir(here)


def micro_output(work: Path) -> None:
    """st_ai_output/ as an on-board validate leaves it (report, c_info, val_io.npz)."""
    shutil.rmtree(work / "st_ai_output")
    _copy(MICRO_TARGET, work / "st_ai_output")


def aistudio_case(work: Path) -> None:
    """mvs-cnn/int8 holds the model the AI Studio log was made from (its pin updated)."""
    import hashlib

    case = work / "corpus/mvs-cnn"
    _copy(AISTUDIO_MODEL, case / "model_int8.onnx")
    digest = hashlib.sha256(AISTUDIO_MODEL.read_bytes()).hexdigest()
    text = (case / "case.toml").read_text(encoding="utf-8")
    text = re.sub(r'(\[variants\.int8\][^\[]*sha256 = ")[0-9a-f]+', rf"\g<1>{digest}", text)
    (case / "case.toml").write_text(text, encoding="utf-8")


# what an example needs beyond the shared folder

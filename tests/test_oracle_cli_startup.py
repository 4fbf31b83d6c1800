"""``stedge oracle`` loads what it uses: no parsers at start-up (issue 18)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "corpus" / "relu-dw7" / "model_int8.onnx"


def test_oracle_command_does_not_import_the_parsers() -> None:
    code = (
        "import sys, json\n"
        "from pytest_stedge.cli.main import main\n"
        f"main(['oracle', {str(MODEL)!r}, '--json'])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pytest_stedge'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "pytest_stedge.oracle.memory.analysis" in modules  # the command ran
    assert not [m for m in modules if m.startswith("pytest_stedge.parsers")]
    assert "pytest_stedge.oracle.memory.explain" not in modules  # no --c-info: not loaded


def test_oracle_with_placement_reads_the_model_once_and_no_package_metadata() -> None:
    """The memory analysis and the placement read one parse of the model (onnx.load and
    shape inference once), and no command but ``stedge --version`` pays for
    importlib.metadata (issue 27b)."""
    code = (
        "import sys, json, contextlib, io, onnx\n"
        "calls = []\n"
        "load, infer = onnx.load, onnx.shape_inference.infer_shapes\n"
        "onnx.load = lambda *a, **k: (calls.append('load'), load(*a, **k))[1]\n"
        "onnx.shape_inference.infer_shapes = "
        "lambda *a, **k: (calls.append('infer'), infer(*a, **k))[1]\n"
        "from pytest_stedge.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    main(['oracle', {str(MODEL)!r}, '--version', '2.2.0'])\n"
        "print(json.dumps({'calls': calls, 'placement': 'placement (2.2.0' in out.getvalue()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"calls": ["load", "infer"], "placement": True}
    # building the parser of every command looks up no package metadata (onnx does, itself)
    code = ("import sys\nfrom pytest_stedge.cli.main import build_parser\nbuild_parser()\n"
            "print('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    version = subprocess.run([sys.executable, "-m", "pytest_stedge.cli.main", "--version"],
                             capture_output=True, text=True, check=True)
    assert version.stdout.startswith("stedge (pytest-stedge) ")

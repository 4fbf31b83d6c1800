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
    assert "pytest_stedge.oracle.memory" in modules  # the command ran
    assert not [m for m in modules if m.startswith("pytest_stedge.parsers")]
    assert "pytest_stedge.oracle.cinfo" not in modules  # no --c-info: not loaded

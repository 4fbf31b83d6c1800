"""No third-party log line in `stedge` output (issue 30): LiteRT's C++ runtime prints
"INFO: Created TensorFlow Lite XNNPACK delegate for CPU." on fd 2 when it builds an
interpreter with its default delegates, as `stedge reference` on a TFLite model does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

STEDGE = str(Path(sys.executable).with_name("stedge"))
TFLITE = Path(__file__).resolve().parents[1] / "corpus" / "micro-conv-tflite" / "model_int8.tflite"


def test_stedge_reference_on_a_tflite_prints_no_litert_info_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [STEDGE, "reference", str(TFLITE), "--out", str(tmp_path / "ref.npz")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    assert "INFO:" not in proc.stdout + proc.stderr
    assert "XNNPACK" not in proc.stdout + proc.stderr


def test_other_native_lines_are_passed_on(tmp_path: Path) -> None:
    # What the block writes on fd 2 that is not an INFO line reaches stderr after it.
    code = (
        "import os\n"
        "from pytest_stedge.oracle.accuracy.native_log import native_info_dropped\n"
        "with native_info_dropped():\n"
        "    os.write(2, b'INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\\n')\n"
        "    os.write(2, b'ERROR: a real failure\\n')\n"
        "print('done')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.stdout == "done\n"
    assert proc.stderr == "ERROR: a real failure\n"

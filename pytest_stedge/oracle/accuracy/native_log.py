"""Keep third-party native log lines out of what pytest-stedge prints.

LiteRT's C++ runtime writes ``INFO: Created TensorFlow Lite XNNPACK delegate for CPU.``
straight to file descriptor 2 when it builds an interpreter: no Python logger or warning
filter sees it, and it lands in the middle of ``stedge`` output. While an interpreter is
built, fd 2 goes to a temporary file; afterwards its ``INFO:`` lines are dropped and every
other line (an error, a warning) is written back, so nothing that matters is lost.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

# What TensorFlow Lite's logger prefixes its informational lines with.
_INFO = ("INFO: ",)


@contextmanager
def native_info_dropped() -> Iterator[None]:
    """Run the block with fd 2 captured; pass its non-INFO lines on to stderr after."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a detached process): nothing to keep clean
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", "replace")
            kept = [line for line in text.splitlines(keepends=True) if not line.startswith(_INFO)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()

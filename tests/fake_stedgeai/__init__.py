"""A faithful fake `stedgeai` (ST Edge AI Core) for the project's tests and benchmarks.

The real tool cannot be installed here. :func:`make_install` builds an install tree whose
`Utilities/<os>/stedgeai` behaves like the real command line: `--version` banner,
`analyze|generate|validate` with the real options, reports and `c_info.json` with the structure
of the real 2.x / 3.x / 4.x files, figures derived from the ONNX model, and fault injection
(see :mod:`fake_stedgeai.faults`).
"""

from __future__ import annotations

from .install import make_install

__all__ = ["make_install"]

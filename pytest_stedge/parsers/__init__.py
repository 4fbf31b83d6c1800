"""Parsers of every stedgeai output format into the Result (DESIGN.md §3).

Public API (stable; the toolchain runner and ``stedge ingest`` use it)::

    parse_path(path)             # one output file or an output folder of one run -> Result
    parse_runs(path)             # a file or folder -> one Result per run it holds
    parse_file(path)             # one file of one run -> Result
    parse_version_banner(text)   # "ST Edge AI Core v4.0.1-20581 7ed50de05" -> {version, build, revision}
    extract_diagnostics(text)    # E<nnn>(Kind) / INTERNAL ERROR / TOOL ERROR lines -> diagnostics

Every failure to read is a :class:`pytest_stedge.errors.ReportParseError` naming the file;
a file or folder of several runs given where one is expected is a ``SeveralRunsError``
(its ``runs`` hold each run's Result): a Result is one run, never a merge of two.

Owns reading what the tool wrote (one module per format) into the Result; may import
``errors`` and ``result`` only, so the runner, ``stedge ingest`` and the oracle's c_info
explanation can all use it. numpy loads only for ``.npz``/``.npy`` files.
"""

from __future__ import annotations

from .common import extract_diagnostics, parse_version_banner
from .folder import parse_file, parse_path, parse_runs

__all__ = ["extract_diagnostics", "parse_file", "parse_path", "parse_runs", "parse_version_banner"]

"""Subcommands of ``stedge`` (placeholder: filled by the issue that owns them)."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(subparsers: "argparse._SubParsersAction[Any]") -> None:
    """Register this module's subcommands."""

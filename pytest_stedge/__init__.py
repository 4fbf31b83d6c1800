"""pytest-stedge: regression-test ST Edge AI Core toolchain upgrades.

This module is imported by every pytest run of the environment (it is a pytest11
plugin package), so it imports nothing heavy.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]

"""Known toolchain bugs: the registry of ``corpus/bugs/<id>.toml`` files and the small
whitelisted signature grammar their matches are written in (parsed, never ``eval``-ed).

May import ``errors``, ``result`` and ``corpus``; the gate, the state and the reports
import it.
"""

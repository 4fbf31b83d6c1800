"""Parsers of every stedgeai output format into the Result (DESIGN.md §3)."""

"""The verdict family: what an item's figures mean.

Owns the expectations of a case checked against a Result (``expect``), the bands a metric
may move within (``bands``), the one change kind per metric between two versions
(``compare``) and between two stored runs (``store_diff``), the gate that turns
expectations, the baseline and the known bugs into an item's outcome (``gate``), the
baseline figures a session compares with (``baselines``), and the expectation updates of
``--stedge-update`` (``update``).

May import ``errors``, ``result``, ``case``, ``bugs`` and ``report.table`` (the terminal
table of a failure); ``store`` only for reading a diff. The pytest flow, the reports and
the CLI import it.
"""

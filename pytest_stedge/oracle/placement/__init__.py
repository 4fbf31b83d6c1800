"""Placement on the STM32N6: which node runs on the NPU, the epoch controller, the
Cortex-M55 or in a hybrid epoch, and why.

Owns the prediction from the model alone (``predict``: every node HW / EC / SW / hybrid /
unknown with its named rule), the front end's view of the model before placement
(``frontend``, ``attributes``), the per-version table of real epoch tables (``table``,
built from ``runs`` by ``tools/build_placement_table.py`` into ``data/``) and its score on
real runs, one model left out (``scoring``).

May import the sibling wings ``model`` and ``deployment``, ``pytest_stedge.errors`` and
``pytest_stedge.parsers`` (the real epoch tables); never ``memory`` or ``accuracy``.
"""

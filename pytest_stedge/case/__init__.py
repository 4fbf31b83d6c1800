"""The case family: ``case.toml`` -> :class:`~.model.Case`.

Owns the case model (``model``: Case, Bound, NeuralArt, the stages), loading and checking
a case file (``load``, with ``bounds`` for ``[expect]``/``[baseline]`` and
``owned_options`` for the options the harness sets itself), the paths a case names and
the rule that keeps them inside the corpus (``paths``), folder listings and the path
cache of a collection (``scan``), record-only models named by hash (``record_only``),
what a session knows of each case's model (``models``: hash, oracle report), the
recorded runs shipped with the corpus (``recordings``), cases as commands name them
(``lookup``) and the reproducible corpus build with its sha256 pins (``build``).

May import ``errors``, ``result``, ``options`` (the time-limit rule) and ``store.rows``;
``models`` imports the oracle lazily. The pytest flow, ``tool``, ``verdict``, ``bugs``,
``report`` and the CLI import it; nothing here imports them back.
"""

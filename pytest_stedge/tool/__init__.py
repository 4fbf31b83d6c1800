"""The tool family: ``stedgeai`` itself, found and run.

Owns the discovery of installs and their versions (``discovery``, with ``run_tool``: one
argv run under a time limit, never a shell), one stage's run of one case and the reading
of its outputs into a Result (``runner``), the process trees of a run and the reaper that
outlives a killed session (``proctree``), the versions a session runs with their
installs or recordings (``versions``), the work folders each run writes into
(``workdirs``) and how long they are kept (``retention``).

May import ``errors``, ``result``, ``case``, ``parsers`` (to read what the tool wrote) and
``store.rows`` (run labels). The pytest flow, the board stage and the CLI import it.
"""

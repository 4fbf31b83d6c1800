"""Boards: serial specs and port discovery, the validation protocol, the native client,
cross-process locks, the pytest stage that validates on a board, and a simulator.

Owns everything that talks to (or plays) an STM32 board: the link (``link``), messages
and their checks (``protocol``, ``messages``, ``answers``, ``tensors``), the deadlines
(``budgets``), the client (``client``). May import the pytest flow's ``errors``, the
``case`` and ``tool`` wings and the ``oracle`` (for the per-layer divergence); nothing outside this folder imports it except the plugin (for
corpus runs with ``--stedge-board``) and ``cli.boards``; one inference written as a dump is
``dump_run``'s, which both use. Importing this package imports
nothing: pyserial and numpy load with the modules that need them.
"""

"""The ``stedge`` command: :mod:`.main` builds the parser from one module per command
family (``add_commands(subparsers)``), each importing what its handlers need only when
they run.

May import every other wing; nothing imports it but the console script
(``pytest_stedge.cli.main:main``) and ``corpus/build.py``.
"""

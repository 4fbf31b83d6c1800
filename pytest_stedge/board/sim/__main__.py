"""``python -m pytest_stedge.board.sim``: serve a simulated board."""

from .simulator import main

raise SystemExit(main())

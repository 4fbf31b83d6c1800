"""The interpreter's cyclic garbage collector in a corpus session.

Collecting a corpus builds objects that live as long as the session (items, cases,
paths): every automatic full collection while they are built walks all the ones built so
far, and every one after (pytest's last collection at exit, those during the run) walks
them again. In a 5,000-case collection that was 1.3 s of 5 s. So a corpus session
collects with the automatic collector paused, collects once when collection is done
(garbage of collection still meets pytest's unraisable-exception hook), then freezes
what survived (:func:`gc.freeze`): later collections skip it; reference counting still
frees it as usual. The freeze is undone when the session's config is cleaned up, so an
in-process run (pytester, an IDE) leaks nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def automatic_collection_paused() -> Iterator[None]:
    """The automatic cyclic collector off inside, restored as it was after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def settle() -> None:
    """One full collection, then freeze every object still tracked."""
    gc.collect()
    gc.freeze()


def release() -> None:
    """Undo :func:`settle`: frozen objects are collectable again."""
    gc.unfreeze()

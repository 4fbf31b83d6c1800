"""Delta debugging (ddmin): a 1-minimal subset of units whose presence makes a test fail.

Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input" (IEEE TSE
28(2), 2002): test subsets of the current failing set, then their complements, and
refine the granularity when neither fails. The result fails, and removing any one of
its units makes the test pass (or undecidable). A test that can neither pass nor fail
(the tool errs for another reason) counts as not failing, as in the paper. Results are
cached by subset: a set is never run twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
FAIL, PASS, UNRESOLVED = "fail", "pass", "unresolved"


def ddmin(units: Sequence[T], test: Callable[[list[T]], str]) -> list[T]:
    """The 1-minimal failing subset of ``units`` (which must fail as a whole), in their
    order. ``test`` returns :data:`FAIL`, :data:`PASS` or :data:`UNRESOLVED`."""
    cache: dict[frozenset[int], str] = {}
    order = list(units)

    def run(indices: list[int]) -> str:
        key = frozenset(indices)
        if key not in cache:
            cache[key] = test([order[i] for i in sorted(indices)])
        return cache[key]

    current = list(range(len(order)))
    granularity = 2
    while len(current) >= 2:
        chunks = _split(current, granularity)
        reduced = False
        for chunk in chunks:  # a subset alone fails: keep it
            if run(chunk) == FAIL:
                current, granularity, reduced = chunk, 2, True
                break
        if not reduced and granularity > 2:  # (with two chunks the complements are the chunks)
            for chunk in chunks:
                rest = [i for i in current if i not in chunk]
                if run(rest) == FAIL:
                    current, granularity, reduced = rest, max(granularity - 1, 2), True
                    break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(len(current), granularity * 2)
    return [order[i] for i in current]


def _split(items: list[int], parts: int) -> list[list[int]]:
    """``items`` cut into ``parts`` contiguous chunks of (nearly) equal size."""
    out, start = [], 0
    for k in range(parts):
        end = start + (len(items) - start) // (parts - k)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]

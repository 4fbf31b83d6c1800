"""The one rule that gives a metric change its kind, on arrays of changes.

``stedge diff``, the gate (and so the terminal summary), the run report and the
dashboard's changes page all classify through :func:`classify_arrays`: one change or a
million, the same kinds. In order, for each (old, new):

1. not comparable: another model or other options (or either unknown), or the metric was
   not measured on one side;
2. a metric without a better direction (``epochs_hw``, ``epochs_ec``): changed when it
   moved beyond its band, else unchanged;
3. newly failing / fixed: the case's expectation held in the base and misses in the head
   (or the reverse);
4. unchanged when within the band; else regressed in the worse direction, improved in the
   better one;
5. a regression or improvement no larger than the rounding of the figures (a report that
   prints ``1.262 MB``) is unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bands import EPSILON

if TYPE_CHECKING:
    import numpy as np

# Kind codes: the index of each kind in compare.KIND_ORDER (regressions first).
REGRESSED, NEWLY_FAILING, IMPROVED, FIXED, CHANGED, NOT_COMPARABLE, UNCHANGED = range(7)
LOWER, NONE, HIGHER = -1, 0, 1  # which way is better
NO_EXPECTATION, MISSED, MET = -1, 0, 1


def direction_code(direction: str) -> int:
    """``lower`` / ``higher`` / anything else as :data:`LOWER`, :data:`HIGHER`, :data:`NONE`."""
    return {"lower": LOWER, "higher": HIGHER}.get(direction, NONE)


def moved_beyond(old: np.ndarray, new: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Whether each ``new`` moved from ``old`` by more than ``allowed`` (either direction);
    an infinity on either side (snr = inf for identical outputs) moved when they differ."""
    import numpy as np

    finite = np.isfinite(old) & np.isfinite(new)
    with np.errstate(invalid="ignore"):
        beyond = np.abs(new - old) > allowed + EPSILON * np.maximum(1.0, np.abs(old))
    moved: np.ndarray = np.where(finite, beyond, old != new)
    return moved


def classify_arrays(
    direction: Any,
    old: Any,
    new: Any,
    *,
    allowed: Any,
    comparable: Any,
    old_ok: Any = NO_EXPECTATION,
    new_ok: Any = NO_EXPECTATION,
    slack: Any = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The kind code of each change, and whether a rounding turned it unchanged.

    Every argument broadcasts against ``old``:

    :param direction: :data:`LOWER`, :data:`HIGHER` or :data:`NONE` per change.
    :param old: base values, NaN where the base did not measure the metric.
    :param new: head values, NaN where the head did not.
    :param allowed: how far the metric may move, in its unit (the band at ``old``).
    :param comparable: same model and same options on both sides, both known.
    :param old_ok: :data:`MET`, :data:`MISSED` or :data:`NO_EXPECTATION` in the base.
    :param new_ok: the same in the head.
    :param slack: the rounding of both figures added (0 for exact figures).
    """
    import numpy as np

    old = np.asarray(old, dtype=float)
    new = np.asarray(new, dtype=float)
    shape = np.broadcast(old, new).shape
    direction, allowed, comparable, old_ok, new_ok, slack = (
        np.broadcast_to(np.asarray(x), shape)
        for x in (direction, allowed, comparable, old_ok, new_ok, slack)
    )
    old, new = np.broadcast_to(old, shape), np.broadcast_to(new, shape)
    kind = np.full(shape, UNCHANGED, dtype=np.int8)
    usable = ~(np.isnan(old) | np.isnan(new))
    moved = usable & moved_beyond(np.where(usable, old, 0.0), np.where(usable, new, 0.0), allowed)
    directed = direction != NONE
    with np.errstate(invalid="ignore"):
        worse = np.where(direction == LOWER, new > old, new < old)
        within_rounding = (slack > 0) & (np.abs(new - old) <= slack)
    flipped_bad = (old_ok == MET) & (new_ok == MISSED)
    flipped_good = (old_ok == MISSED) & (new_ok == MET)
    # the rule's order, last assignment wins: build it from the bottom up
    moving = directed & moved & ~flipped_bad & ~flipped_good
    kind[moving & worse] = REGRESSED
    kind[moving & ~worse] = IMPROVED
    rounded = moving & within_rounding
    kind[rounded] = UNCHANGED
    kind[directed & flipped_good] = FIXED
    kind[directed & flipped_bad] = NEWLY_FAILING
    kind[~directed & moved] = CHANGED
    not_comparable = ~np.asarray(comparable, dtype=bool) | ~usable
    kind[not_comparable] = NOT_COMPARABLE
    return kind, rounded & ~not_comparable

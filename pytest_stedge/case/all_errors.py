"""Every error of a case file at once, not only the first.

The case loader stops at its first error. A user who fixes it and reruns should not meet
the next one only then: after an error, the offending key is left out and the case read
again, until it reads or an error repeats (a required key, an error no key names); the
errors found are reported together, the first as the error's key.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pytest_stedge.errors import CaseError

T = TypeVar("T")
_MAX_ERRORS = 20  # a file of garbage is not listed line by line


def _drop(values: dict[str, Any], key: str) -> bool:
    """Remove the key an error names (``expect.activation_bytes``); False if not there."""
    parts = key.split(".")
    table: Any = values
    for part in parts[:-1]:
        table = table.get(part) if isinstance(table, dict) else None
    if isinstance(table, dict) and parts[-1] in table:
        del table[parts[-1]]
        return True
    return False


def every_error(build: Callable[[Mapping[str, Any]], T], values: Mapping[str, Any],
                prefix: str = "") -> T:
    """``build(values)``, or one :class:`CaseError` listing every error found in ``values``.

    :param prefix: what the errors' keys start with beyond ``values`` (``variants.int8.``).
    """
    try:
        return build(values)  # the common case: no copy, one read
    except CaseError:
        pass
    errors: list[CaseError] = []
    trial = copy.deepcopy(dict(values))
    while True:
        try:
            result = build(trial)
        except CaseError as exc:
            repeated = any(e.key == exc.key and e.message == exc.message for e in errors)
            if not repeated:
                errors.append(exc)
            key = (exc.key or "").removeprefix(prefix)
            if repeated or not exc.key or len(errors) >= _MAX_ERRORS or not _drop(trial, key):
                break
            continue
        if not errors:
            return result
        break
    if len(errors) == 1:
        raise errors[0]
    first = errors[0]
    also = "".join(f"\n  also [{e.key}]: {e.message}" if e.key else f"\n  also: {e.message}"
                   for e in errors[1:])
    raise CaseError(first.path, first.key,
                    f"{first.message}{also}\n  ({len(errors)} errors in this case file)")
